#include "swarm/tasks/events.h"

namespace swarm {

namespace {

Event of_task(std::string kind, std::string_view bucket, const Task& task, const Actor& actor, std::uint64_t revision) {
  return task_event(std::move(kind), bucket, task_key(task.id), actor, task.id, revision);
}

}  // namespace

Event task_add_event(std::string_view bucket, const Task& task, const Actor& actor, std::uint64_t revision) {
  Event e = of_task("task.add", bucket, task, actor, revision);
  e.detail.set("title", task.title).set("priority", task.priority);
  return e;
}

Event task_claim_event(std::string_view bucket, const Task& task, const Actor& actor, std::uint64_t revision) {
  Event e = of_task("task.claim", bucket, task, actor, revision);
  e.detail.set("claimed_by", task.slot).set("session", task.session).set("attempts", task.attempts);
  return e;
}

Event task_state_event(std::string_view bucket, TaskState from, const Task& task, const std::string& why,
                       const Actor& actor, std::uint64_t revision) {
  Event e = of_task("task.state", bucket, task, actor, revision);
  e.detail.set("from", std::string(to_string(from))).set("to", task.state_text).set("why", why);
  if (!task.slot.empty()) e.detail.set("by_slot", task.slot);
  return e;
}

Event task_edit_event(std::string_view bucket, const Task& task, const std::string& fields, const Actor& actor,
                      std::uint64_t revision) {
  Event e = of_task("task.edit", bucket, task, actor, revision);
  e.detail.set("fields", fields);
  return e;
}

Event review_event(std::string_view bucket, const Task& task, const Actor& actor, std::uint64_t revision) {
  const auto review = task.review_record().value_or(Review{});
  Event e = of_task(review.state == "rejected" ? "review.reject" : "review.approve", bucket, task, actor, revision);
  e.detail.set("head", review.head).set("by", review.by).set("to", task.state_text);
  if (!task.slot.empty()) e.detail.set("by_slot", task.slot);
  if (!review.reason.empty()) e.detail.set("reason", review.reason);
  return e;
}

}  // namespace swarm
