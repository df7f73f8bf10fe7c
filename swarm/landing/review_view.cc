// `swarm review show TASK`: what an approval of a task would approve, read
// where landing reads it (the hub's branch of the task, the journal's
// refusals), so that what a reviewer is shown is what a land would take.
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/landing/landing.h"
#include "swarm/tasks/task_rules.h"

namespace swarm {

Landing::ReviewView Landing::review_view(const std::string& onto, const std::string& id) {
  if (!queue())
    throw Error(Errc::not_bootstrapped, "the workspace has no task queue (bucket " + task_bucket_ +
                                            "); `swarm up` makes it");
  auto task = queued(id);
  if (!task) {
    if (queue()->get(id))
      throw Error(Errc::conflict, "the record of task " + printable(id) + " is corrupt; `swarm doctor` says more");
    throw Error(Errc::not_found, "no task " + printable(id) + " in the queue; see `swarm task list`");
  }
  if (task->slot.empty() || !is_valid_slot_name(task->slot))
    throw Error(Errc::conflict, "task " + printable(id) + " was never worked by a slot: nothing to review");
  ReviewView view;
  view.task = *task;
  view.onto = onto;
  view.branch = task_branch(task->slot, id);
  git().refresh();
  view.onto_tip = git().tip(onto).value_or("");
  view.tip = git().tip(view.branch).value_or("");
  if (view.tip.empty())
    throw Error(Errc::not_found, "the hub has no branch " + view.branch + ": slot " + task->slot +
                                     " pushed nothing to review");
  view.diff = git().diff(onto, view.branch);
  view.refused = refusal_of(view.branch.substr(6), view.tip);
  if (task->state() != TaskState::in_review && task->state() != TaskState::approved)
    view.not_approvable = "it is " + task->state_text + ", not in_review: only a task its slot closed as done is "
                          "approved";
  else if (!task->head.empty() && task->head != view.tip)
    view.not_approvable = view.branch + " is at " + view.tip.substr(0, 12) + ", not at " +
                          printable(task->head.substr(0, 12)) + " where slot " + task->slot + " closed it";
  return view;
}

}  // namespace swarm
