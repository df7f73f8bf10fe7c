// The task queue's side of the slot verbs: join --task of a queued id and
// join --next claim its record by CAS after the task lease (so two slots
// never work one task), close moves it by its result. A task id that is not
// in the queue stays a free-form tracker id, as before tasks.
#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/base/warnings.h"
#include "swarm/base/test_seam.h"
#include "swarm/base/text.h"
#include "swarm/slots/lifecycle.h"
#include "swarm/slots/liveness.h"
#include "swarm/tasks/events.h"
#include "swarm/tasks/task_rules.h"

namespace swarm {

namespace {

// join --next tries at most this many candidates before it says none was won.
constexpr std::size_t kMaxCandidates = 64;
// join --next --wait looks at the queue again at least this often.
constexpr std::chrono::seconds kLookAgain{1};

// The claim order of two hints: most urgent, then oldest, then by id.
bool hint_before(const ReadyHint& a, const ReadyHint& b) {
  if (a.priority != b.priority) return a.priority < b.priority;
  if (a.created_at != b.created_at) return a.created_at < b.created_at;
  return natural_less(a.id, b.id);
}

// A task without every label join --next asked for is not its to claim.
void require_labels_of(const Task& t, const std::vector<std::string>* labels) {
  if (labels != nullptr && !has_labels(t.labels, *labels))
    throw Error(Errc::conflict, "task " + printable(t.id) + " does not have every label asked for");
}

// A task the index names: a ready hint, or a working one whose claim lapsed.
struct HintedTask {
  ReadyHint hint;
  bool ready = false;
};

// The index's candidates for `labels`, most urgent first: the ready tasks'
// hints (an unsound one is removed: unreadable, or planted under another
// key) and the working ones' whose claim `lapsed` says lapsed.
std::vector<HintedTask> hinted_tasks(const TaskStore& q, const std::vector<std::string>& labels,
                                     const std::function<std::set<std::string>(const std::vector<std::string>&)>& lapsed) {
  std::vector<HintedTask> out;
  for (ReadyHint& hint : q.ready_hints()) {
    if (!hint.sound) {
      q.forget_hint(hint);
      continue;
    }
    if (has_labels(hint.labels, labels)) out.push_back({std::move(hint), true});
  }
  std::vector<ReadyHint> working;
  for (ReadyHint& hint : q.working_hints())
    if (hint.sound && has_labels(hint.labels, labels)) working.push_back(std::move(hint));
  std::vector<std::string> ids;
  for (const auto& h : working) ids.push_back(h.id);
  const auto gone = lapsed(ids);
  for (ReadyHint& hint : working)
    if (gone.count(hint.id) != 0) out.push_back({std::move(hint), false});
  std::stable_sort(out.begin(), out.end(),
                   [](const HintedTask& a, const HintedTask& b) { return hint_before(a.hint, b.hint); });
  return out;
}

// Waits for the queue to change (past the watch's first records, which are
// what was there) until `until`.
void wait_for_change(kv::Watch& changes, bool& caught_up, std::chrono::steady_clock::time_point until) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    auto ev = translating_kv([&] { return changes.next(left); });
    if (ev && ev->kind == kv::WatchEvent::Kind::caught_up) caught_up = true;
    else if (ev && caught_up) return;
  }
}

}  // namespace

const std::optional<TaskStore>& SlotLifecycle::queue() const {
  if (!queue_) queue_.emplace(TaskStore::open_if_exists(store_.connection(), config_.task_bucket));
  return *queue_;
}

std::set<std::string> SlotLifecycle::lapsed_claims(const std::vector<std::string>& ids) const {
  std::set<std::string> lapsed;
  if (ids.empty()) return lapsed;
  std::vector<std::string> names;
  for (const auto& id : ids) names.push_back(task_lease_name(id));
  const LeaseStore& leases = tasks_.store();
  std::map<std::string, LeaseEntry> held;
  for (auto& e : leases.get_together(names)) held.emplace(e.name, std::move(e));
  const TimePoint now = leases.server_clock().now();
  for (const auto& id : ids) {
    auto it = held.find(task_lease_name(id));
    if (it == held.end()) {  // released, or never taken: nobody works it
      lapsed.insert(id);
      continue;
    }
    const LeaseEntry& e = it->second;
    if (e.corrupt() || e.record->task != id) continue;  // refused by the claim, named there
    if (standing_of(e, now).state == LeaseState::expired || dead_claim(e)) lapsed.insert(id);
  }
  return lapsed;
}

bool SlotLifecycle::dead_claim(const LeaseEntry& lease) const {
  if (lease.corrupt() || lease.record->slot.empty() || lease.record->host != me_.host) return false;
  auto owner = store_.get(lease.record->slot);
  if (!owner || owner->corrupt() || !me_.owns(*owner->session)) return false;
  const Session& s = *owner->session;
  return s.task_id == lease.record->task && run_is_gone(s.leaf_pid, s.leaf_start, s.agent_pid, s.agent_start);
}

void SlotLifecycle::release_dead_claim(const std::string& slot, const std::string& task) const {
  auto lease = tasks_.read(task);
  if (!lease || lease->corrupt() || lease->record->slot == slot || lease->record->task != task || !dead_claim(*lease))
    return;
  // Released at that very grant (a claim made since is another's): the
  // task is taken over at once, as join takes a dead session over.
  try {
    tasks_.store().release(lease->name, lease->token());
    log::info("task {}: let go of the claim of slot {}, whose run is gone from this host", printable(task),
              printable(lease->record->slot));
  } catch (const Error& e) {
    log::debug("task {}: the dead claim of slot {} was not let go: {}", printable(task),
               printable(lease->record->slot), e.what());
  }
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
    // The index first (a few small keys): the ready tasks' hints and the
    // working ones' whose claim lapsed (their agent died: its lease gone,
    // expired, or its run dead on this host), in one order, most urgent
    // first. A ready hint not won is removed unless its task is ready after
    // all. When no hint is won, this process lists the whole queue: the
    // records are the truth, and a hint anyone deletes or plants steers no
    // claim (adr/0038).
    for (const HintedTask& hinted : hinted_tasks(*q, labels, [&](const auto& ids) { return lapsed_claims(ids); })) {
      if (auto joined = attempt(hinted.hint.id)) return std::move(*joined);
      if (hinted.ready) q->forget_hint(hinted.hint);
    }
    tried = 0;  // the whole listing's candidates have a budget of their own
    {
      log::phase("join --next: no hint was won; listing the queue");
      const auto all = q->list();
      q->repair_hints(all);
      std::vector<std::string> working;
      for (const auto& e : all)
        if (e.task && e.task->state() == TaskState::working) working.push_back(e.task->id);
      const auto lapsed = lapsed_claims(working);
      for (const Task& candidate :
           claim_order(all, labels, [&](const Task& t) { return lapsed.count(t.id) != 0; }))
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
    wait_for_change(*changes, caught_up, std::min(deadline, std::chrono::steady_clock::now() + kLookAgain));
  }
}

}  // namespace swarm
