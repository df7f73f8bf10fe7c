#include "swarm/landing/landing.h"

#include <signal.h>

#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <cctype>
#include <map>

#include "swarm/base/boot_clock.h"
#include "swarm/base/error.h"
#include "swarm/base/file_lock.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/base/safe_dir.h"
#include "swarm/base/text.h"
#include "swarm/git/hub.h"
#include "swarm/git/worktree.h"
#include "swarm/holds/hold_store.h"
#include "swarm/landing/check.h"
#include "swarm/landing/events.h"
#include "swarm/landing/land_hold.h"
#include "swarm/lease/lease_keeper.h"
#include "swarm/lease/mutex.h"
#include "swarm/slots/events.h"
#include "swarm/tasks/task_rules.h"

namespace swarm {

namespace {

constexpr const char* kLandFolder = "land";
constexpr const char* kCacheName = "hub.git";

bool lease_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; }

// A folder name for the onto branch's checkout: its lease name's tail.
std::string checkout_name(std::string_view onto) { return "onto-" + land_lease_name(onto).substr(5); }

// A land's result before it is tried: what lands where, under which token.
LandResult begun(const std::string& slot, const std::string& onto, std::uint64_t token, bool forced, bool no_check) {
  LandResult result;
  result.slot = slot;
  result.onto = onto;
  result.token = token;
  result.forced = forced || no_check;
  result.no_check = no_check;
  return result;
}

}  // namespace

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::string land_lease_name(std::string_view onto) {
  std::string out = "land";
  std::size_t at = 0;
  while (at <= onto.size()) {
    std::size_t end = onto.find('/', at);
    if (end == std::string_view::npos) end = onto.size();
    std::string token;
    for (char c : onto.substr(at, end - at)) token += lease_char(c) ? c : '_';
    if (token.empty() || !std::isalnum(static_cast<unsigned char>(token.front()))) token = "0" + token;
    out += "." + token;
    at = end + 1;
  }
  return out;
}

void require_branch_name(std::string_view name, std::string_view what) {
  auto bad = [&](const char* why) {
    throw Error(Errc::bad_input, "bad " + std::string(what) + " '" + printable(std::string(name.substr(0, 80))) +
                                     "': " + why);
  };
  if (name.empty()) bad("an empty branch name");
  if (name.size() > 200) bad("longer than 200 bytes");
  if (name.front() == '-' || name.front() == '/' || name.back() == '/' || name.back() == '.') bad("not a branch name");
  if (name.find("..") != std::string_view::npos || name.find("//") != std::string_view::npos ||
      name.find("@{") != std::string_view::npos || name.find("/.") != std::string_view::npos || name.front() == '.')
    bad("not a branch name");
  if (name == "HEAD" || name == "@" || name.substr(0, 5) == "refs/") bad("name a branch (main, release/1), not a ref");
  if (name.substr(0, 6) == "swarm/") bad("a slot's branch is never landed on: landing never changes a slot branch");
  for (std::size_t at = 0; at <= name.size();) {
    std::size_t end = name.find('/', at);
    if (end == std::string_view::npos) end = name.size();
    const std::string_view part = name.substr(at, end - at);
    if (part.size() >= 5 && part.substr(part.size() - 5) == ".lock") bad("no part of a branch name ends in .lock");
    at = end + 1;
  }
  for (unsigned char c : name)
    if (c <= 0x20 || c == 0x7f || c == '~' || c == '^' || c == ':' || c == '?' || c == '*' || c == '[' || c == '\\')
      bad("a branch name has no spaces, control characters or any of ~^:?*[\\");
}

std::string lane_slot(const std::string& name) {
  auto lane = lane_of(name);
  return lane ? lane->slot : name;
}

bool is_parked_lane(const std::string& name) {
  auto lane = lane_of(name);
  return lane && lane->parked();
}

std::string_view to_string(LandResult::Outcome outcome) {
  switch (outcome) {
    case LandResult::Outcome::landed: return "landed";
    case LandResult::Outcome::already_landed: return "already-landed";
    case LandResult::Outcome::refused: return "refused";
  }
  return "refused";
}

Landing::Landing(Workspace workspace, HubLocation hub, SessionStore store, LeaseStore leases, HostIdentity me)
    : workspace_(std::move(workspace)),
      hub_(std::move(hub)),
      store_(std::move(store)),
      leases_(std::move(leases)),
      me_(std::move(me)),
      journal_(leases_.journal()) {}

LandBackend& Landing::git() {
  if (git_) return *git_;
  if (!hub_.remote() && !Hub::exists_at(hub_.path()))
    throw Error(Errc::not_bootstrapped, "the hub " + hub_.text + " is missing or not a git repository");
  if (read_only_cache_) {
    git_ = git_backend().open_land(hub_.text, hub_.remote() ? *read_only_cache_ : std::filesystem::path());
    return *git_;
  }
  // .swarm/land/ is swarm's own (a link in its place is refused): the
  // cache of a network hub and the checkouts checks run in.
  SafeDir land = workspace_.make_folder(kLandFolder, 0700);
  // Each folder in it is made or opened refusing a link in its place.
  if (hub_.remote()) land.make_folder(kCacheName, 0700);
  git_ = git_backend().open_land(hub_.text, land.path() / kCacheName);
  return *git_;
}

std::string Landing::onto(const std::string& given) {
  if (!given.empty()) return given;
  std::string branch = git().default_branch();
  if (branch.rfind("swarm/", 0) == 0)
    throw Error(Errc::bad_input, "the hub's default branch is " + branch + ", a slot's branch, which landing never "
                                 "changes; name the branch to land on with --onto");
  return branch;
}

void Landing::require_session(const std::string& slot, std::optional<std::uint64_t> token) const {
  if (!token) return;
  auto entry = store_.get(slot);
  if (!entry || entry->corrupt() || entry->token() == *token) return;
  throw Error(Errc::conflict, "slot " + slot + " is held by session " + std::to_string(entry->token()) + " (host " +
                                  printable(entry->session->host) + ") now, not by session " + std::to_string(*token) +
                                  "; nothing was landed");
}

std::string Landing::not_ready(const std::string& lane) {
  const std::string slot = lane_slot(lane);
  require_slot_name(slot);
  const auto tip = Hub::open(hub_).branch_tip("swarm/" + lane);
  if (!tip)
    throw Error(Errc::not_found, "the hub has no branch swarm/" + lane + ": slot " + slot + " never pushed anything "
                                 "to land (see swarm branches)");
  // A parked task's branch is done work its slot left for another task: its
  // slot's live session works on that other one.
  if (auto entry = is_parked_lane(lane) ? std::nullopt : store_.get(slot)) {
    if (entry->corrupt()) return "its session record is corrupt (swarm doctor)";
    const ServerClock clock = store_.server_clock();
    const State state = observed_state(age_of(entry->stored_at, clock.now()), store_.ttl(),
                                       observer_margin(store_.ttl(), clock.uncertainty));
    if (state != State::stale)
      return "its session is " + std::string(to_string(state)) + " (host " + printable(entry->session->host) +
             ", task " + printable(entry->session->task_id) + "): its agent is still at work";
  }
  const auto close = close_of(lane, *tip);
  if (!close) return is_parked_lane(lane) ? "no close of slot " + slot + " at its head is journaled" : "it was never closed";
  const cJSON* result = cJSON_GetObjectItemCaseSensitive(close->detail.get(), "result");
  const std::string said = cJSON_IsString(result) ? result->valuestring : "";
  if (said != "success")
    return "its last close was " + (said.empty() ? std::string("without a result") : printable(said));
  // What was closed as done is what lands: commits pushed after it (a
  // session since gone stale or evicted) were never said to be done.
  const cJSON* head = cJSON_GetObjectItemCaseSensitive(close->detail.get(), "head");
  if (cJSON_IsString(head) && *head->valuestring != '\0' && *tip != head->valuestring)
    return "its branch moved since its last close (closed at " + printable(std::string(head->valuestring).substr(0, 12)) +
           ", now " + tip->substr(0, 12) + ")";
  if (auto refused = refusal_of(lane, *tip)) return standing_refusal_text(*refused);
  return not_approved(close->task_id, *tip);
}

std::string standing_refusal_text(const StandingRefusal& r) {
  return (r.reason == "checkout" ? "its tree merged into " + printable(r.onto) + " could not be checked out"
                                 : "the check refused it on " + printable(r.onto) + " (exit " +
                                       std::to_string(r.status) + ")") +
         " at " + r.head.substr(0, 12) + ", its head now: it stays refused until its branch moves past that "
         "commit (join the slot, fix, commit, close) or a land is forced";
}

std::optional<StandingRefusal> Landing::refusal_of(const std::string& slot, const std::string& tip) const {
  // The last few refusals: one for a conflict may have come after the
  // check's, at the same head (the check's still stands then).
  constexpr std::size_t kRefusalsRead = 8;
  JournalQuery query;
  query.thing = Thing::slot;
  query.name = slot;
  query.buckets = {store_.bucket_name()};
  query.kinds = {"land.refused", "land"};
  query.last = kRefusalsRead;
  auto events = journal_.read(query);
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    auto refusal = standing_refusal(*it);
    if (it->kind == "land") {
      // Landed (forced) since: what was refused before is behind it.
      const cJSON* head = cJSON_GetObjectItemCaseSensitive(it->detail.get(), "head");
      if (!cJSON_IsString(head) || tip == head->valuestring) return std::nullopt;
      continue;
    }
    if (!refusal) continue;
    if (refusal->head != tip) return std::nullopt;  // the branch moved past it
    return refusal;
  }
  return std::nullopt;
}

std::optional<StandingRefusal> standing_refusal(const Event& e) {
  if (e.kind != "land.refused") return std::nullopt;
  auto text = [&](const char* name) {
    const cJSON* item = cJSON_GetObjectItemCaseSensitive(e.detail.get(), name);
    return cJSON_IsString(item) ? std::string(item->valuestring) : std::string();
  };
  StandingRefusal r;
  r.reason = text("reason");
  r.head = text("head");
  r.onto = text("onto");
  if ((r.reason != "check" && r.reason != "checkout") || r.head.empty()) return std::nullopt;
  const cJSON* status = cJSON_GetObjectItemCaseSensitive(e.detail.get(), "status");
  r.status = cJSON_IsNumber(status) ? status->valueint : 0;
  r.at = e.time.value_or(TimePoint{});
  return r;
}

std::string land_message(const std::string& lane, const std::string& onto, const std::string& task,
                         std::uint64_t token) {
  return "Land swarm/" + lane + " on " + onto + "\n\nSwarm-Slot: " + lane_slot(lane) +
         "\nSwarm-Task: " + (task.empty() ? "unknown" : trailer_value(task)) +
         "\nSwarm-Fencing-Token: " + std::to_string(token) + "\n";
}

CommitAuthor Landing::land_author() const { return CommitAuthor{"swarm", "swarm@" + me_.host}; }

CheckVerdict Landing::check_tree(const std::string& commit, const std::string& who, const std::string& onto,
                                 const Lease& lease, const LandCheck& check_in, CheckRun& run,
                                 const std::function<void(const char*)>& require_held,
                                 const std::vector<std::pair<std::string, std::string>>& more_env) {
  const std::string name = checkout_name(onto);
  const auto dir = land_checkouts(workspace_).make_folder(name, 0700).path();
  // The checkout is one lander's at a time, also when a lease was lost and
  // taken while the loser's check still ran (its keeper stops it).
  auto lock = FileLock::acquire(workspace_.make_folder(kLocksFolder), "land-" + name, "swarm land of " + who,
                                std::chrono::duration_cast<std::chrono::milliseconds>(lease.record.ttl));
  if (!lock)
    throw Error(Errc::conflict, "another land's check still works in " + dir.string() + " (" +
                                    FileLock::holder_of(workspace_.make_folder(kLocksFolder), "land-" + name) +
                                    "); " + onto + " was not moved; land " + who + " again");
  LandCheck check = check_in;
  check.who = who;
  std::vector<std::pair<std::string, std::string>> env = {{"SWARM_LAND_SLOT", who}, {"SWARM_LAND_ONTO", onto},
                                                          {"SWARM_LEASE", lease.name},
                                                          {"SWARM_FENCING_TOKEN", std::to_string(lease.token)}};
  env.insert(env.end(), more_env.begin(), more_env.end());
  CheckVerdict verdict;
  for (int attempt = 1; attempt <= 1 + std::max(0, check.retries); ++attempt) {
    // Each run on the tree as it was merged: what an earlier run left is put back.
    try {
      git().check_out(commit, dir);
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict) throw;
      require_held("during the checkout");
      // A tree that cannot be written even into a checkout made from nothing.
      verdict.unusable = e.what();
      return verdict;
    }
    verdict.attempts = attempt;
    for (std::size_t i = 0; i < check.commands.size(); ++i) {
      verdict.failed = i;
      verdict.status = run.run(check, check.commands[i], dir, env);
      if (check.interrupted && check.interrupted())
        throw Cancelled("the land of " + who + " was stopped by a signal during its check; " + onto +
                        " was not moved");
      // A check the keeper stopped (the lease lost) says nothing of the tree.
      require_held("during the check");
      if (verdict.status != 0) break;
    }
    if (verdict.status == 0) break;
    if (attempt <= check.retries)
      swarm::log::warn("the check of {} failed (exit {}); running it again on the same tree ({} of {})",
                       printable(who), verdict.status, attempt + 1, 1 + check.retries);
  }
  return verdict;
}

std::optional<LandResult> Landing::check_merged(const MergePlan& plan, LandResult& result, const Lease& lease,
                                                const LandCheck& check, CheckRun& run, const std::string& task,
                                                const std::function<void(const char*)>& require_held) {
  const std::string& slot = result.slot;
  const std::string& onto = result.onto;
  const CheckVerdict verdict = check_tree(plan.to, slot, onto, lease, check, run, require_held);
  if (verdict.unusable)
    return refuse(result, "checkout", "swarm/" + slot + " merged into " + onto + " cannot be checked out (" +
                                          *verdict.unusable + "); " + onto + " was not moved", task);
  result.check_attempts = verdict.attempts;
  result.check = verdict.status != 0 ? "failed" : verdict.attempts > 1 ? "flaky" : "passed";
  if (verdict.status == 0) return std::nullopt;
  result.check_status = verdict.status;
  return refuse(result, "check", "the check " + printable(check.commands.at(verdict.failed).front()) +
                                     " failed on swarm/" + slot +
                                     " merged into " + onto + " (exit " + std::to_string(verdict.status) +
                                     (verdict.attempts > 1 ? ", " + std::to_string(verdict.attempts) + " runs" : "") +
                                     "); " + onto + " was not moved",
                task);
}

LandResult Landing::refuse(LandResult& result, const std::string& reason, const std::string& message,
                           const std::string& task) {
  result.outcome = LandResult::Outcome::refused;
  result.reason = reason;
  result.message = message;
  journal_.record(land_event(store_.bucket_name(), result, task, Actor::here(me_)));
  move_task(result, closed_task_of(result.slot));
  return result;
}

std::optional<LandResult> Landing::refused_for_holds(LandResult& result, const std::string& task,
                                                    const std::vector<LeaseEntry>* live) {
  std::vector<LeaseEntry> others;
  if (live == nullptr) {
    others = translating_kv([&] {
      return HoldStore(leases_, me_, kDefaultLeaseTtl).live_exclusive_of_others(lane_slot(result.slot), HoldStore::Listing::exact);
    });
  } else {
    for (const auto& e : *live)
      if (!e.corrupt() && e.record->slot != lane_slot(result.slot) && e.record->kind != to_string(HoldKind::shared))
        others.push_back(e);
  }
  if (others.empty()) return std::nullopt;  // nothing to compare: no diff read
  const auto held = held_elsewhere(others, lane_slot(result.slot), git().branch_changes(result.onto, "swarm/" + result.slot));
  if (held.empty()) return std::nullopt;
  journal_.record(hold_conflict_event(store_.bucket_name(), result.slot, task, result.token, result.token, "land",
                                      held, past_holds_ ? "forced" : "refuse", Actor::here(me_)));
  if (past_holds_) {
    result.forced = true;
    return std::nullopt;
  }
  result.paths.clear();
  for (const auto& h : held) result.paths.push_back(printable(h.path));
  return refuse(result, "hold", "swarm/" + result.slot + " changes paths other live slots hold exclusively: " +
                                    held_paths_text(held) + "; " + result.onto + " was not moved (land it once "
                                    "their holds end, or anyway with --force)",
                task);
}

LandResult Landing::land(const std::string& slot, const std::string& onto, Lease& lease, const LandCheck& check,
                         bool forced) {
  require_slot_name(lane_slot(slot));
  LandResult result = begun(slot, onto, lease.token, forced, check.forced);
  const std::string task = task_of(slot);
  const std::string closed = closed_task_of(slot);  // the task this land completes
  // The check's process, stopped by the keeper's thread when the lease is
  // lost (declared before the hold: it outlives the keeper's thread).
  CheckRun run;
  LandHold hold(leases_, lease, run, "slot " + slot, onto);
  auto require_held = [&](const char* before) { hold.require_held(before); };
  const std::string message = land_message(slot, onto, task, lease.token);
  const CommitAuthor author = land_author();
  for (int attempt = 1; attempt <= kMaxLandAttempts; ++attempt) {
    result.attempts = attempt;
    git().refresh();
    result.head = git().tip("swarm/" + slot).value_or("");
    // A branch whose own tree no checkout can write is refused as that, not
    // as whatever a merge with it makes of its duplicate entries.
    if (const auto onto_tip = git().tip(onto); onto_tip && !result.head.empty())
      if (auto problem = git().unusable(result.head, *onto_tip))
        return refuse(result, "checkout", "the tree of swarm/" + slot + " cannot be checked out (" + *problem +
                                              "); " + onto + " was not moved", task);
    // With review required, only the head approved lands (unless forced),
    // and only the head judged: a push since is no head anyone approved.
    if (!forced && review_required_)
      if (const std::string why = not_approved(closed, result.head); !why.empty())
        throw Error(Errc::conflict, "swarm/" + slot + " is at " + result.head.substr(0, 12) + ", which is not approved: " +
                                        why + "; nothing was landed");
    MergePlan plan = git().plan(onto, "swarm/" + slot, message, author);
    if (plan.head != result.head)
      throw Error(Errc::conflict, "swarm/" + slot + " moved while it was landing (from " + result.head.substr(0, 12) +
                                      " to " + plan.head.substr(0, 12) + "); nothing was landed, land it again");
    stop_here_for_test(kLandStop, "merged");
    result.from = plan.from;
    result.to = plan.from;
    if (plan.kind == MergePlan::Kind::landed) {
      result.outcome = LandResult::Outcome::already_landed;
      result.kind = "none";
      move_task(result, closed);
      return result;
    }
    if (plan.kind == MergePlan::Kind::conflict) {
      // As text people and JSON can take: a path that is no UTF-8 (or has
      // control bytes) comes escaped.
      for (const auto& path : plan.conflicts) result.paths.push_back(printable(path));
      return refuse(result, "conflict", "swarm/" + slot + " does not merge into " + onto + ": conflicts in " +
                                            joined(result.paths) + "; " + onto + " was not moved",
                    task);
    }
    result.kind = plan.kind == MergePlan::Kind::fast_forward ? "fast-forward" : "merge";
    // Once: the branch is the same on a retry (it is refused if it moved).
    if (attempt == 1)
      if (auto refused = refused_for_holds(result, task)) return *refused;
    if (!check.commands.empty()) {
      if (auto refused = check_merged(plan, result, lease, check, run, task, require_held)) return *refused;
    } else if (auto problem = git().unusable(plan.to, plan.from)) {
      // No check to check it out: what it brings is read, and a tree no
      // checkout can write never reaches the onto branch.
      return refuse(result, "checkout", "swarm/" + slot + " merged into " + onto + " cannot be checked out (" +
                                            *problem + "); " + onto + " was not moved", task);
    }
    // The fence: the push starts only while the lease is surely ours, and
    // moves the branch only from the tip this merge was made on.
    require_held("before the push");
    stop_here_for_test(kLandStop, "before-push");
    if (git().advance(onto, plan.from, plan.to)) {
      stop_here_for_test(kLandStop, "after-push");
      result.outcome = LandResult::Outcome::landed;
      result.to = plan.to;
      journal_.record(land_event(store_.bucket_name(), result, task, Actor::here(me_)));
      move_task(result, closed);
      return result;
    }
    swarm::log::info("{} moved while slot {} was landing; merging again", onto, slot);
  }
  throw Error(Errc::conflict, onto + " moved " + std::to_string(kMaxLandAttempts) + " times while slot " + slot +
                                  " was landing (pushes from outside the queue?); nothing was moved, land it again");
}

}  // namespace swarm
