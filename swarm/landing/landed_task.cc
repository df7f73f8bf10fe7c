// Landing's side of the task queue: a land completes its slot's task (a
// refusal is kept in the task's record), and with review required only a
// task approved at the branch's head lands without --force.
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/base/warnings.h"
#include "swarm/git/hub.h"
#include "swarm/landing/landing.h"
#include "swarm/tasks/events.h"
#include "swarm/tasks/task_rules.h"

namespace swarm {

void Landing::use_tasks(std::string bucket, bool review_required) {
  task_bucket_ = std::move(bucket);
  review_required_ = review_required;
  queue_.reset();
}

const std::optional<TaskStore>& Landing::queue() const {
  if (!queue_) queue_.emplace(TaskStore::open_if_exists(store_.connection(), task_bucket_));
  return *queue_;
}

std::optional<Task> Landing::queued(const std::string& id) const {
  if (id.empty() || !queue()) return std::nullopt;
  auto entry = queue()->get(id);
  if (!entry || entry->corrupt()) return std::nullopt;
  return std::move(entry->task);
}

std::string Landing::not_approved(const std::string& task_id, const std::string& tip) const {
  if (!review_required_) return "";
  const auto task = queued(task_id);
  if (!task)
    return "review is required here and its task " + printable(task_id) +
           " is not in the queue, so nothing can approve it";
  if (const std::string why = why_not_approved(*task, tip); !why.empty())
    return "review is required here: " + why + "; `swarm review approve --task " + printable(task_id) +
           "` approves its head";
  return "";
}

void Landing::move_task(const LandResult& r, const std::string& task_id) const {
  if (task_id.empty()) return;
  std::string stood;  // how the task stood when it did not move
  try {
    if (!queue()) return;
    const bool landed = r.outcome != LandResult::Outcome::refused;
    const std::string how = r.outcome == LandResult::Outcome::landed
                                ? "landed on " + r.onto + " (" + r.to.substr(0, 12) + ")"
                                : landed ? "already in " + r.onto
                                         : "land on " + r.onto + " refused (" + r.reason + "): " + r.message;
    bool moved = false;
    auto changed = queue()->change(task_id, [&](Task& t) {
      moved = landed ? land_moves(t, lane_slot(r.slot), r.head, how, r.forced) : land_refused(t, lane_slot(r.slot), how);
      if (!moved) {
        stood = t.state_text + (t.slot == lane_slot(r.slot) ? "" : " (slot " + printable(t.slot) + ")");
        throw Error(Errc::not_found, "unchanged");
      }
    });
    if (landed)
      journal_.record(task_state_event(queue()->bucket_name(), changed.before.state(), changed.after,
                                       "swarm/" + r.slot + " " + how, Actor::here(me_), changed.revision));
  } catch (const Error& e) {
    if (e.kind() == Errc::not_found && !stood.empty() && r.outcome == LandResult::Outcome::landed &&
        stood.rfind("completed", 0) != 0)
      warn("swarm/" + r.slot + " landed, and its task " + printable(task_id) + " stayed " + stood +
           ": it was not in_review or approved by that slot; see `swarm task show " + printable(task_id) + "`");
    if (e.kind() == Errc::not_found) return;  // a free-form id, or nothing to move
    warn("task " + printable(task_id) + " of slot " + r.slot + " was not moved after its land: " + e.what() +
         "; see `swarm task show " + printable(task_id) + "`");
  }
}

Landing::Reviewed Landing::review(const std::string& slot, const std::string& task_id, bool approving,
                                  const std::string& head, const std::string& reason, const std::string& by) {
  if (!queue())
    throw Error(Errc::not_bootstrapped, "the workspace has no task queue (bucket " + task_bucket_ +
                                            "); `swarm up` makes it");
  std::string id = task_id;
  if (id.empty()) {
    id = closed_task_of(slot);
    if (id.empty()) id = task_of(slot);  // joined, never closed: its task says it is working
    if (id.empty()) throw Error(Errc::not_found, "slot " + slot + " has no task in the journal: nothing to review");
  }
  const auto task = queued(id);
  if (!task) {
    if (queue()->get(id))
      throw Error(Errc::conflict, "the record of task " + printable(id) + " is corrupt; `swarm doctor` says more");
    throw Error(slot.empty() ? Errc::not_found : Errc::conflict,
                "task " + printable(id) + (slot.empty() ? "" : " of slot " + slot) +
                    " is not in the queue (a free-form id): only a queued task is reviewed; see `swarm task list`");
  }
  if (!slot.empty() && task->slot != slot)
    throw Error(Errc::conflict, "task " + printable(id) + " is " + (task->slot.empty() ? "not worked by any slot"
                                                                                       : "worked by slot " + printable(task->slot)) +
                                    ", not by slot " + slot);
  if (task->slot.empty())
    throw Error(Errc::conflict, "task " + printable(id) + " was never worked by a slot: nothing to review");
  if (!is_valid_slot_name(task->slot))
    throw Error(Errc::conflict, "the record of task " + printable(id) + " names slot '" + printable(task->slot) +
                                    "', which is no slot name; `swarm task show " + printable(id) + "`");
  {
    Task judged = *task;  // refused as it stands before the hub is read
    if (approving) approve(judged, task->head, by, TimePoint{});
    else reject(judged, reason, by, TimePoint{});
  }
  const std::string branch = task_branch(task->slot, id);
  const auto tip = Hub::open(hub_).branch_tip(branch);
  if (!tip)
    throw Error(Errc::not_found, "the hub has no branch swarm/" + task->slot + ": slot " + task->slot +
                                     " pushed nothing to review");
  if (approving && !head.empty() && tip->rfind(head, 0) != 0)
    throw Error(Errc::conflict, branch + " is at " + tip->substr(0, 12) + " now, not at " +
                                    printable(head) + ": what was reviewed is not its tip; review " +
                                    tip->substr(0, 12) + " and approve that");
  const TimePoint now = std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now());
  // What is approved is what the slot closed as done: a branch moved past
  // its close (a push from outside swarm) is not what it said it finished.
  if (approving && !task->head.empty() && task->head != *tip)
    throw Error(Errc::conflict, branch + " is at " + tip->substr(0, 12) + ", not at " +
                                    printable(task->head.substr(0, 12)) + " where slot " + task->slot +
                                    " closed task " + printable(id) + ": approve once it closed again");
  auto changed = queue()->change(id, [&](Task& t) {
    if (t.slot != task->slot) throw Error(Errc::conflict, "task " + printable(id) + " was claimed by another meanwhile");
    if (approving && t.head != task->head)
      throw Error(Errc::conflict, "task " + printable(id) + " was closed again meanwhile (at " +
                                      printable(t.head.substr(0, 12)) + "); review that head");
    if (approving) approve(t, *tip, by, now);
    else reject(t, reason, by, now);
  });
  journal_.record(review_event(queue()->bucket_name(), changed.after, Actor::here(me_), changed.revision));
  const std::string reviewed = changed.after.review_record().value_or(Review{}).head;
  return {std::move(changed.after), changed.revision, *tip, reviewed};
}

}  // namespace swarm
