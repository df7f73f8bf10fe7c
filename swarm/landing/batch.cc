// `land --ready --batch N`: ready slots merged in turn into one candidate,
// checked once, bisected when the check fails (adr/0028). The onto branch
// moves once, at the end, from the tip the batch was built on.
#include <algorithm>
#include <map>
#include <set>

#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/git/worktree.h"
#include "swarm/holds/hold_store.h"
#include "swarm/landing/events.h"
#include "swarm/landing/land_hold.h"
#include "swarm/landing/landing.h"

namespace swarm {

class Landing::Batch {
 public:
  Batch(Landing& landing, const std::vector<std::string>& slots, const std::string& onto, Lease& lease,
        const LandCheck& check, CheckRun& run, const LandHold& hold)
      : landing_(landing), slots_(slots), onto_(onto), lease_(lease), check_(check), run_(run), hold_(hold) {
    id_ = std::to_string(lease.token) + "." + std::to_string(++landing.batches_);
    for (const auto& slot : slots) {
      tasks_[slot] = landing.task_of(slot);
      closed_tasks_[slot] = landing.closed_task_of(slot);
    }
  }

  // The batch settled on the onto branch's tip `from`: every slot's result
  // (landed ones with the merge they would land by), and the candidate the
  // onto branch is to move to.
  std::string settle(const std::string& from) {
    results_.clear();
    landed_at_start_.clear();
    for (const auto& info : landing_.git().slot_branches(onto_))
      if (info.landed) landed_at_start_.insert(info.slot);
    for (const auto& slot : slots_) {
      LandResult r;
      r.slot = slot;
      r.onto = onto_;
      r.token = lease_.token;
      r.batch = id_;
      r.from = r.to = from;
      r.head = landing_.git().tip("swarm/" + slot).value_or("");
      r.forced = r.no_check = check_.forced;
      // With review required, only the head approved lands: a push since
      // the slot was judged ready stops the batch (nothing moved).
      if (landing_.review_required_)
        if (const std::string why = landing_.not_approved(closed_tasks_.at(slot), r.head); !why.empty())
          throw Error(Errc::conflict, "swarm/" + slot + " is at " + r.head.substr(0, 12) + ", which is not approved: " +
                                          why + "; the batch landed nothing");
      results_[slot] = std::move(r);
    }
    return resolve(slots_, from, false, {}).base;
  }

  // Each slot's result in the batch's order; landed ones as landed on `from`.
  std::vector<LandResult> results() const {
    std::vector<LandResult> out;
    for (const auto& slot : slots_) out.push_back(results_.at(slot));
    return out;
  }
  const std::string& task(const std::string& slot) const { return tasks_.at(slot); }
  const std::string& closed_task(const std::string& slot) const { return closed_tasks_.at(slot); }

 private:
  struct Settled {
    std::string base;       // the candidate after what passed
    bool all_passed = false;  // every slot merged and passed in one check
  };

  // `slots` merged in turn on `base`: their plans (the slots that conflict
  // there refused and left out), the candidate last.
  std::vector<std::pair<std::string, MergePlan>> chain(const std::vector<std::string>& slots, std::string base,
                                                       bool* all_merged) {
    std::vector<std::pair<std::string, MergePlan>> out;
    *all_merged = true;
    for (const auto& slot : slots) {
      LandResult& r = results_[slot];
      // Its own tree first: one no checkout can write is left out as that,
      // before a merge with it could fail its batch-mates.
      if (auto problem = r.head.empty() ? std::nullopt : landing_.git().unusable(r.head, base)) {
        r.from = r.to = base;
        r.outcome = LandResult::Outcome::refused;
        r.reason = "checkout";
        r.message = "the tree of swarm/" + slot + " cannot be checked out (" + *problem + "); it was left out";
        *all_merged = false;
        continue;
      }
      MergePlan plan = landing_.git().plan_on(base, "swarm/" + slot,
                                              land_message(slot, onto_, tasks_[slot], lease_.token),
                                              landing_.land_author());
      if (plan.head != r.head)
        throw Error(Errc::conflict, "swarm/" + slot + " moved while its batch was landing; the batch landed nothing, "
                                    "land again");
      r.from = r.to = base;
      if (plan.kind == MergePlan::Kind::landed) {
        r.kind = "none";
        if (landed_at_start_.count(slot) != 0) {
          r.outcome = LandResult::Outcome::already_landed;
          continue;
        }
        // In the candidate only through a batch-mate (a branch made from
        // it): it stands or falls with that one, so it stays in the batch.
        out.emplace_back(slot, std::move(plan));
        continue;
      }
      if (plan.kind == MergePlan::Kind::conflict) {
        r.outcome = LandResult::Outcome::refused;
        r.reason = "conflict";
        r.paths.clear();
        for (const auto& path : plan.conflicts) r.paths.push_back(printable(path));
        r.message = "swarm/" + slot + " does not merge into the batch " + id_ + " on " + onto_ + ": conflicts in " +
                    joined(r.paths) + "; it was left out";
        *all_merged = false;
        continue;
      }
      r.kind = plan.kind == MergePlan::Kind::fast_forward ? "fast-forward" : "merge";
      base = plan.to;
      out.emplace_back(slot, std::move(plan));
    }
    return out;
  }

  // Lands what it can of `slots` on `base`. `known_failing`: the candidate
  // of `slots` on `base` failed a check already (`evidence` holds the
  // failed checks so far, each a culprit's conviction).
  Settled resolve(const std::vector<std::string>& slots, const std::string& base, bool known_failing,
                  std::vector<LandResult::FailedCheck> evidence) {
    bool all_merged = false;
    auto plans = chain(slots, base, &all_merged);
    if (plans.empty()) return {base, false};
    std::vector<std::string> merged;
    for (const auto& [slot, plan] : plans) merged.push_back(slot);
    const std::string candidate = plans.back().second.to;
    if (!known_failing || !all_merged) {
      const CheckVerdict verdict = check(merged, candidate, base);
      if (verdict.status == 0 && !verdict.unusable) {
        for (const auto& [slot, plan] : plans) passed(slot, plan, verdict);
        return {candidate, all_merged};
      }
      evidence.push_back({merged, verdict.unusable ? -1 : verdict.status});
      stop_here_for_test(kLandStop, "bisect");
    }
    if (merged.size() == 1) {
      convict(merged.front(), evidence);
      return {base, false};
    }
    const std::vector<std::string> first(merged.begin(), merged.begin() + merged.size() / 2);
    const std::vector<std::string> second(merged.begin() + merged.size() / 2, merged.end());
    Settled one = resolve(first, base, false, evidence);
    // The first half passed whole: the second on it is the candidate that failed.
    const Settled two = resolve(second, one.base, one.all_passed && one.base != base, evidence);
    return {two.base, false};  // split, so not all of `slots` passed in one check
  }

  CheckVerdict check(const std::vector<std::string>& slots, const std::string& candidate, const std::string& base) {
    if (check_.commands.empty()) {
      // No check: a candidate passes when what it brings can be checked out.
      CheckVerdict verdict;
      verdict.unusable = landing_.git().unusable(candidate, base);
      return verdict;
    }
    std::string who;
    for (const auto& slot : slots) who += (who.empty() ? "" : " ") + slot;
    return landing_.check_tree(candidate, who, onto_, lease_, check_, run_,
                               [this](const char* before) { hold_.require_held(before); },
                               {{"SWARM_LAND_BATCH", id_}});
  }

  void passed(const std::string& slot, const MergePlan& plan, const CheckVerdict& verdict) {
    LandResult& r = results_[slot];
    r.outcome = LandResult::Outcome::landed;
    r.from = plan.from;
    r.to = plan.to;
    if (!check_.commands.empty()) {
      r.check = verdict.attempts > 1 ? "flaky" : "passed";
      r.check_attempts = verdict.attempts;
    }
  }

  void convict(const std::string& slot, const std::vector<LandResult::FailedCheck>& evidence) {
    LandResult& r = results_[slot];
    r.outcome = LandResult::Outcome::refused;
    r.convicted_by.clear();
    for (const auto& c : evidence)
      if (std::find(c.slots.begin(), c.slots.end(), slot) != c.slots.end()) r.convicted_by.push_back(c);
    r.check_status = r.convicted_by.empty() ? 1 : r.convicted_by.back().status;
    if (check_.commands.empty()) {
      // Without a check, only a tree that cannot be checked out fails.
      r.reason = "checkout";
      r.message = "swarm/" + slot + " in batch " + id_ + " on " + onto_ + " cannot be checked out; it was left out";
      return;
    }
    r.reason = "check";
    r.check = "failed";
    r.check_attempts = 1 + std::max(0, check_.retries);  // a failed check ran every retry
    r.message = "the check failed on swarm/" + slot + " in batch " + id_ + " (" +
                counted(r.convicted_by.size(), "failed check") + " held it, the last exit " +
                std::to_string(r.check_status) + "); it was left out";
  }

  Landing& landing_;
  const std::vector<std::string>& slots_;
  const std::string& onto_;
  const Lease& lease_;
  const LandCheck& check_;
  CheckRun& run_;
  const LandHold& hold_;
  std::string id_;
  std::map<std::string, std::string> tasks_;
  std::map<std::string, std::string> closed_tasks_;  // of each slot's last close
  std::map<std::string, LandResult> results_;
  std::set<std::string> landed_at_start_;  // slots the onto branch had when the batch was settled
};

std::vector<LandResult> Landing::land_batch(const std::vector<std::string>& slots, const std::string& onto,
                                            Lease& lease, const LandCheck& check) {
  for (const auto& slot : slots) require_slot_name(lane_slot(slot));
  if (slots.empty()) return {};
  CheckRun run;
  LandHold hold(leases_, lease, run, "the batch of " + joined(slots), onto);
  // A branch touching what another live slot holds is refused before the
  // batch is built (the lease kept alive meanwhile, the holds listed once):
  // it never fails its batch-mates' check.
  git().refresh();
  const auto live = translating_kv([&] { return HoldStore(leases_, me_, kDefaultLeaseTtl).live(HoldStore::Listing::exact); });
  std::map<std::string, LandResult> held;
  std::vector<std::string> free;
  for (const auto& slot : slots) {
    LandResult r;
    r.slot = slot;
    r.onto = onto;
    r.token = lease.token;
    r.head = git().tip("swarm/" + slot).value_or("");
    r.from = r.to = git().tip(onto).value_or("");
    if (auto refused = refused_for_holds(r, task_of(slot), &live)) held.emplace(slot, std::move(*refused));
    else free.push_back(slot);
  }
  auto in_order = [&](std::vector<LandResult> landed) {
    std::vector<LandResult> out;
    for (const auto& slot : slots) {
      if (auto it = held.find(slot); it != held.end()) {
        out.push_back(it->second);
        continue;
      }
      auto it = std::find_if(landed.begin(), landed.end(), [&](const LandResult& r) { return r.slot == slot; });
      if (it != landed.end()) out.push_back(std::move(*it));
    }
    return out;
  };
  if (free.empty()) return in_order({});
  const std::vector<std::string>& batch_slots = free;
  Batch batch(*this, batch_slots, onto, lease, check, run, hold);
  for (int attempt = 1; attempt <= kMaxLandAttempts; ++attempt) {
    git().refresh();
    const auto from = git().tip(onto);
    if (!from) throw Error(Errc::not_found, "the hub has no branch " + onto + " to land on");
    const std::string to = batch.settle(*from);
    std::vector<LandResult> results = batch.results();
    for (auto& r : results) r.attempts = attempt;
    hold.require_held("before the push");
    stop_here_for_test(kLandStop, "before-push");
    if (to == *from || git().advance(onto, *from, to)) {
      stop_here_for_test(kLandStop, "after-push");
      for (const auto& r : results) {
        if (r.outcome != LandResult::Outcome::already_landed)
          journal_.record(land_event(store_.bucket_name(), r, batch.task(r.slot), Actor::here(me_)));
        move_task(r, batch.closed_task(r.slot));
      }
      return in_order(std::move(results));
    }
    swarm::log::info("{} moved while batch of {} was landing; merging again", onto, joined(batch_slots));
  }
  throw Error(Errc::conflict, onto + " moved " + std::to_string(kMaxLandAttempts) + " times while the batch of " +
                                  joined(slots) + " was landing (pushes from outside the queue?); nothing was moved, "
                                  "land them again");
}

}  // namespace swarm
