#include "swarm/tasks/task_rules.h"

#include <algorithm>
#include <map>
#include <set>

#include "swarm/base/error.h"
#include "swarm/base/text.h"

namespace swarm {

namespace {

std::string named(const Task& t) { return "task " + printable(t.id); }

}  // namespace

std::vector<std::string> waiting_for(const Task& task, const StateOf& state_of) {
  std::vector<std::string> out;
  for (const auto& id : task.after)
    if (state_of(id) != TaskState::completed) out.push_back(id);
  return out;
}

bool is_ready(const Task& task, const StateOf& state_of) {
  return task.state() == TaskState::open && waiting_for(task, state_of).empty();
}

ClaimKind claim(Task& task, const Claimer& who, const StateOf& state_of, bool lease_ours) {
  const TaskState state = task.state();
  const bool same_slot = !task.slot.empty() && task.slot == who.slot;
  ClaimKind kind = ClaimKind::claim;
  switch (state) {
    case TaskState::open:
      if (same_slot) {
        kind = ClaimKind::rework;
        break;
      }
      if (auto waits = waiting_for(task, state_of); !waits.empty()) {
        std::string list;
        for (const auto& w : waits) list += (list.empty() ? "" : ", ") + printable(w);
        throw Error(Errc::conflict, named(task) + " is not ready: it comes after " + list +
                                        ", not completed yet; see `swarm task list --ready`");
      }
      break;
    case TaskState::working:
      if (same_slot) {
        kind = ClaimKind::rework;
        break;
      }
      if (!lease_ours)
        throw Error(Errc::conflict, named(task) + " is worked by slot " + printable(task.slot) + " (host " +
                                        printable(task.host) + ")");
      // Its lease is ours: that slot's claim lapsed (its agent died).
      ++task.attempts;
      task.result = "claim of slot " + task.slot + " lapsed";
      if (task.attempts >= task.max_attempts) {
        task.set_state(TaskState::failed);
        return ClaimKind::failed;
      }
      kind = ClaimKind::lapsed;
      break;
    case TaskState::in_review:
    case TaskState::approved:
      if (same_slot) {
        kind = ClaimKind::rework;
        break;
      }
      throw Error(Errc::conflict, named(task) + " is " + std::string(to_string(state)) + " (slot " +
                                      printable(task.slot) + "); only that slot may take it up again");
    case TaskState::completed:
    case TaskState::failed:
    case TaskState::cancelled:
      throw Error(Errc::conflict, named(task) + " is " + std::string(to_string(state)) +
                                      (state == TaskState::completed ? "" : "; `swarm task reopen` brings it back"));
  }
  if (!same_slot) task.set_review(std::nullopt);
  task.set_state(TaskState::working);
  task.slot = who.slot;
  task.session = who.session;
  task.host = who.host;
  return kind;
}

bool close_moves(Task& task, const std::string& slot, const std::string& result, bool review_required,
                 const std::string& head) {
  if (task.state() != TaskState::working || task.slot != slot) return false;
  task.result = result;
  if (result == "success") {
    task.head = head;
    // An approval of another head is dismissed by the commits since (as
    // code hosts dismiss stale approvals); one of this very head stands.
    auto review = task.review_record();
    if (review && review->state == "approved" && review->head != head) {
      review->state = "dismissed";
      task.set_review(review);
    }
    const bool approved = review && review->state == "approved";
    task.set_state(review_required && !approved ? TaskState::in_review : TaskState::approved);
  } else if (result == "fork") {
    task.set_state(TaskState::open);
  } else {
    ++task.attempts;
    task.set_state(task.attempts >= task.max_attempts ? TaskState::failed : TaskState::open);
  }
  return true;
}

void cancel(Task& task, const std::string& reason) {
  const TaskState s = task.state();
  if (s == TaskState::completed || s == TaskState::cancelled)
    throw Error(Errc::conflict, named(task) + " is " + std::string(to_string(s)) + " already");
  task.set_state(TaskState::cancelled);
  task.result = reason.empty() ? "cancelled" : reason;
}

void approve(Task& task, const std::string& head, const std::string& by, TimePoint at) {
  const TaskState s = task.state();
  if (s == TaskState::working)
    throw Error(Errc::conflict, named(task) + " is working (slot " + printable(task.slot) +
                                    "): review it once its slot closed it success");
  if (s != TaskState::in_review && s != TaskState::approved)
    throw Error(Errc::conflict, named(task) + " is " + std::string(to_string(s)) +
                                    "; only a task in_review (closed success) is approved");
  Review r;
  r.state = "approved";
  r.head = head;
  r.by = by;
  r.at = at;
  task.set_review(r);
  task.set_state(TaskState::approved);
}

void reject(Task& task, const std::string& reason, const std::string& by, TimePoint at) {
  const TaskState s = task.state();
  if (s != TaskState::in_review && s != TaskState::approved)
    throw Error(Errc::conflict, named(task) + " is " + std::string(to_string(s)) +
                                    "; only a task in_review or approved is rejected");
  Review r;
  r.state = "rejected";
  r.head = task.head;
  r.by = by;
  r.reason = reason;
  r.at = at;
  task.set_review(r);
  task.result = "rejected: " + reason;
  task.set_state(TaskState::open);
}

bool approved_at(const Task& task, const std::string& tip) { return why_not_approved(task, tip).empty(); }

std::string why_not_approved(const Task& task, const std::string& tip) {
  auto review = task.review_record();
  if (!review || review->state.empty()) return named(task) + " is " + task.state_text + " and has no review yet";
  const bool approval = review->state == "approved" || review->state == "dismissed";
  if (review->head != tip || review->state == "dismissed")
    return approval ? "the approval of " + named(task) + " at " + printable(review->head.substr(0, 12)) +
                          " was dismissed by a later commit (its branch is at " + printable(tip.substr(0, 12)) + ")"
                    : named(task) + " waits for a review of its head " + printable(tip.substr(0, 12));
  if (review->state == "rejected") return named(task) + " was rejected: " + printable(review->reason);
  if (review->state != "approved") return named(task) + "'s review is " + printable(review->state);
  if (task.state() != TaskState::approved) return named(task) + " is " + task.state_text;
  return "";
}

std::string review_word(const Task& task, const std::string& tip) {
  auto review = task.review_record();
  if (review && review->head == tip && (review->state == "approved" || review->state == "rejected"))
    return review->state;
  if (review && (review->state == "approved" || review->state == "dismissed")) return "dismissed";
  return task.state() == TaskState::in_review ? "waiting" : "";
}

bool land_moves(Task& task, const std::string& slot, const std::string& head, const std::string& how, bool forced) {
  const TaskState s = task.state();
  if (task.slot != slot || !(s == TaskState::in_review || s == TaskState::approved || (forced && s == TaskState::working)))
    return false;
  task.head = head;
  task.result = how;
  task.set_state(TaskState::completed);
  return true;
}

bool land_refused(Task& task, const std::string& slot, const std::string& refusal) {
  if (task.slot != slot || task.result == refusal) return false;
  const TaskState s = task.state();
  if (s != TaskState::in_review && s != TaskState::approved) return false;
  task.result = refusal;
  return true;
}

void reopen(Task& task) {
  const TaskState s = task.state();
  if (s != TaskState::failed && s != TaskState::cancelled)
    throw Error(Errc::conflict, named(task) + " is " + std::string(to_string(s)) +
                                    "; only a failed or cancelled task is reopened");
  task.set_state(TaskState::open);
  task.attempts = 0;
}

bool has_labels(const std::vector<std::string>& have, const std::vector<std::string>& wanted) {
  return std::all_of(wanted.begin(), wanted.end(),
                     [&](const std::string& l) { return std::find(have.begin(), have.end(), l) != have.end(); });
}

bool listed_before(const Task& a, const Task& b) {
  if (a.priority != b.priority) return a.priority < b.priority;
  const auto at = a.created_at.value_or(TimePoint{}), bt = b.created_at.value_or(TimePoint{});
  if (at != bt) return at < bt;
  return natural_less(a.id, b.id);
}

std::vector<Task> claim_order(const std::vector<TaskEntry>& all, const std::vector<std::string>& labels,
                              const std::function<bool(const Task&)>& lapsed) {
  std::map<std::string, TaskState> states;
  for (const auto& e : all)
    if (e.task) states[e.task->id] = e.task->state();
  const StateOf state_of = [&](const std::string& id) -> std::optional<TaskState> {
    auto it = states.find(id);
    return it == states.end() ? std::nullopt : std::optional(it->second);
  };
  std::vector<Task> out;
  for (const auto& e : all) {
    if (!e.task || !has_labels(e.task->labels, labels)) continue;
    if (is_ready(*e.task, state_of) || (e.task->state() == TaskState::working && lapsed && lapsed(*e.task)))
      out.push_back(*e.task);
  }
  std::sort(out.begin(), out.end(), listed_before);
  return out;
}

void require_after(const std::string& id, const std::vector<std::string>& after, const std::vector<TaskEntry>& all) {
  std::map<std::string, std::vector<std::string>> edges;
  for (const auto& e : all)
    if (e.task) edges[e.task->id] = e.task->after;
  for (const auto& a : after) {
    if (a == id) throw Error(Errc::bad_input, "--after " + printable(a) + ": a task cannot come after itself");
    if (!edges.count(a)) throw Error(Errc::bad_input, "--after " + printable(a) + ": no such task; see `swarm task list`");
  }
  edges[id] = after;
  // A cycle through `id`: walk from its afters; reaching `id` again closes one.
  std::set<std::string> seen;
  std::vector<std::string> todo(after.begin(), after.end());
  while (!todo.empty()) {
    std::string at = todo.back();
    todo.pop_back();
    if (at == id)
      throw Error(Errc::bad_input, "--after would make a cycle: task " + printable(id) + " would come after itself");
    if (!seen.insert(at).second) continue;
    for (const auto& next : edges[at]) todo.push_back(next);
  }
}

}  // namespace swarm
