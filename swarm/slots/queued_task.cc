// The task queue's side of the slot verbs: join --task of a queued id and
// join --next claim its record by CAS after the task lease (so two slots
// never work one task), close moves it by its result. A task id that is not
// in the queue stays a free-form tracker id, as before tasks.
#include <algorithm>
#include <set>
#include <thread>

#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/base/warnings.h"
#include "swarm/base/test_seam.h"
#include "swarm/base/text.h"
#include "swarm/slots/lifecycle.h"
#include "swarm/tasks/events.h"
#include "swarm/tasks/task_rules.h"

namespace swarm {

namespace {

// join --next tries at most this many candidates before it says none was won.
constexpr std::size_t kMaxCandidates = 64;
// join --next --wait looks at the queue again at least this often.
constexpr std::chrono::seconds kLookAgain{1};
// The whole queue is listed to mend its index at most this often.
constexpr std::chrono::seconds kScanEvery{10};

// A task without every label join --next asked for is not its to claim.
void require_labels_of(const Task& t, const std::vector<std::string>* labels) {
  if (labels != nullptr && !has_labels(t.labels, *labels))
    throw Error(Errc::conflict, "task " + printable(t.id) + " does not have every label asked for");
}

}  // namespace

const std::optional<TaskStore>& SlotLifecycle::queue() const {
  if (!queue_) queue_.emplace(TaskStore::open_if_exists(store_.connection(), config_.task_bucket));
  return *queue_;
}

void SlotLifecycle::require_queued_claimable(const std::string& slot, const std::string& task,
                                             const Joiner& joiner) const {
  const bool queued_only = joiner.queued_only;
  const auto& q = queue();
  if (!q) return;
  auto entry = q->get(task);
  if (!entry && queued_only)
    throw Error(Errc::conflict, "task " + printable(task) + " is not in the queue (a stale hint of its ready index)");
  if (!entry) return;  // a free-form id
  if (entry->corrupt())
    throw Error(Errc::conflict, "the record of task " + printable(task) + " is corrupt (" + entry->corrupt_reason +
                                    "); `swarm doctor --fix` removes it");
  Task copy = *entry->task;
  require_labels_of(copy, &joiner.labels);
  // The task lease was found free (require_claimable): a working task of
  // another slot is a lapsed claim (one at its last attempt is refused by
  // the claim itself, which records the failure).
  claim(copy, {slot, 0, me_.host}, q->stored_states(), true);
}

void SlotLifecycle::claim_queued(const JoinResult& result, JoinSteps& done) const {
  const auto& q = queue();
  if (!q) return;
  const Session& s = result.session;
  const Claimer who{s.slot, result.revision, me_.host};
  stop_here_for_test(kJoinStop, "task-leased");  // the task's lease is ours, its record not yet
  ClaimKind kind = ClaimKind::claim;
  TaskStore::Changed changed;
  try {
    changed = q->change(s.task_id, [&](Task& t) {
      require_labels_of(t, done.labels);
      kind = claim(t, who, q->stored_states(), true);
    });
  } catch (const Error& e) {
    if (e.kind() == Errc::not_found && !done.queued_only) return;  // not in the queue: a free-form id
    if (e.kind() == Errc::not_found)
      throw Error(Errc::conflict, "task " + printable(s.task_id) + " left the queue while it was claimed");
    throw;
  }
  const Actor actor = Actor::here(me_);
  if (kind == ClaimKind::lapsed || kind == ClaimKind::failed) {
    Task lapsed = changed.after;
    if (kind == ClaimKind::lapsed) lapsed.set_state(TaskState::open);
    lapsed.slot = changed.before.slot;
    journal_.record(task_state_event(q->bucket_name(), TaskState::working, lapsed,
                                     "the claim of slot " + changed.before.slot + " lapsed", actor, changed.revision));
  }
  if (kind == ClaimKind::failed)
    throw Error(Errc::conflict, "task " + printable(s.task_id) + " failed: the claim of slot " +
                                    printable(changed.before.slot) + " lapsed at its last attempt (" +
                                    std::to_string(changed.after.attempts) + " of " +
                                    std::to_string(changed.after.max_attempts) + "); `swarm task reopen " +
                                    printable(s.task_id) + "` brings it back");
  done.queued_before = changed.before;
  journal_.record(task_claim_event(q->bucket_name(), changed.after, actor, changed.revision));
  log::phase("join: claimed the queued task");
}

void SlotLifecycle::undo_queued_claim(const JoinResult& result, const JoinSteps& done) const {
  if (!done.queued_before || !queue()) return;
  const Session& s = result.session;
  const Task& before = *done.queued_before;
  try {
    queue()->change(s.task_id, [&](Task& t) {
      // Only this join's claim is put back; anything since is another's.
      if (t.state() != TaskState::working || t.slot != s.slot || t.session != result.revision)
        throw Error(Errc::conflict, "changed since");
      t.state_text = before.state_text;
      t.slot = before.slot;
      t.session = before.session;
      t.host = before.host;
      t.attempts = before.attempts;
      t.result = before.result;
      t.review = before.review;
    });
  } catch (const Error& e) {
    warn("task " + printable(s.task_id) + " could not be put back as it was (" + e.what() +
         "); see `swarm task show " + printable(s.task_id) + "`");
  }
}

void SlotLifecycle::close_queued(const Session& closed, const std::string& result, const std::string& head,
                                 const std::string& why, std::vector<std::string>* warnings) const {
  if (closed.task_id.empty()) return;
  try {
    const auto& q = queue();
    if (!q) return;
    auto entry = q->get(closed.task_id);
    if (!entry || entry->corrupt() || entry->task->slot != closed.slot ||
        entry->task->state() != TaskState::working)
      return;
    bool moved = false;
    auto changed = q->change(closed.task_id, [&](Task& t) {
      moved = close_moves(t, closed.slot, result, config_.require_review, head);
      if (moved && !why.empty()) t.result = result + ": " + why;
    });
    if (moved)
      journal_.record(task_state_event(q->bucket_name(), changed.before.state(), changed.after,
                                       "slot " + closed.slot + " closed " + result + (why.empty() ? "" : ": " + why),
                                       Actor::here(me_), changed.revision));
  } catch (const Error& e) {
    if (warnings != nullptr)
      warnings->push_back("task " + printable(closed.task_id) + " was not moved: " + e.what() +
                          "; see `swarm task show " + printable(closed.task_id) + "`");
  }
}

JoinResult SlotLifecycle::join_next(const std::string& slot, const std::vector<std::string>& labels,
                                    std::chrono::milliseconds wait, Takeover takeover, std::int64_t leaf_pid,
                                    const std::string& base, unsigned ports, Joiner joiner) {
  require_slot_name(slot);
  const auto& q = queue();
  if (!q)
    throw Error(Errc::not_bootstrapped, "the workspace has no task queue (bucket " + config_.task_bucket +
                                            "); `swarm up` makes it");
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::optional<kv::Watch> changes;
  bool caught_up = false;
  for (;;) {
    std::size_t tried = 0;
    std::set<std::string> lost;
    // One candidate: joined, or nullopt when the task was not won (taken
    // meanwhile, not ready after all); the slot's own refusal is thrown.
    auto attempt = [&](const std::string& id) -> std::optional<JoinResult> {
      if (!lost.insert(id).second || ++tried > kMaxCandidates) return std::nullopt;
      bool refused = false;
      Joiner j = joiner;
      j.task_refused = &refused;
      j.queued_only = true;
      j.labels = labels;
      try {
        return join(slot, id, takeover, leaf_pid, base, ports, j);
      } catch (const Error& e) {
        if (!refused) throw;  // the slot's refusal, not the task's: said as it is
        log::debug("join --next: task {} was not won: {}", id, e.what());
        return std::nullopt;
      }
    };
    // The ready index first (a few small keys): a hint not won is removed
    // unless its task is ready after all. Then the tasks being worked: one
    // whose claim lapsed (its agent died) is claimed as a lapsed claim.
    // Then, at most once per kScanEvery across all claimers, the whole
    // queue: it finds what the index lacks (a hint a killed writer never
    // wrote) and mends it (adr/0038).
    for (const ReadyHint& hint : q->ready_hints()) {
      if (!hint.sound) {
        q->forget_hint(hint);  // unreadable, or planted under another key: no task
        continue;
      }
      if (!has_labels(hint.labels, labels)) continue;
      if (auto joined = attempt(hint.id)) return std::move(*joined);
      q->forget_hint(hint);
    }
    for (const ReadyHint& hint : q->working_hints())
      if (hint.sound && has_labels(hint.labels, labels))
        if (auto joined = attempt(hint.id)) return std::move(*joined);
    tried = 0;  // the whole listing's candidates have a budget of their own
    if (q->scan_due(kScanEvery)) {
      log::phase("join --next: no hint was won; listing the queue");
      const auto all = q->list();
      q->repair_hints(all);
      for (const Task& candidate : claim_order(all, labels))
        if (auto joined = attempt(candidate.id)) return std::move(*joined);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    std::string labelled;
    for (const auto& l : labels) labelled += (labelled.empty() ? " labelled " : ", ") + printable(l);
    if (left.count() <= 0)
      throw Error(Errc::not_found, "no ready task" + labelled + " to claim; see `swarm task list --ready`" +
                                       (wait.count() > 0 ? " (waited " + std::to_string(wait.count() / 1000) + "s)" : ""));
    // Wait for the queue to change (a task added, completed, freed), then
    // look again; at least once a second (a change between the listing and
    // the watch's start is in its first records, which are skipped).
    if (!changes) changes.emplace(translating_kv([&] { return q->watch(); }));
    const auto look_again = std::min(deadline, std::chrono::steady_clock::now() + kLookAgain);
    for (bool changed = false; !changed;) {
      const auto now_left =
          std::chrono::duration_cast<std::chrono::milliseconds>(look_again - std::chrono::steady_clock::now());
      if (now_left.count() <= 0) break;
      auto ev = translating_kv([&] { return changes->next(now_left); });
      if (ev && ev->kind == kv::WatchEvent::Kind::caught_up) caught_up = true;
      else if (ev && caught_up) changed = true;
    }
  }
}

}  // namespace swarm
