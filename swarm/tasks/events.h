// The journal's events of tasks (task.add, task.claim, task.state,
// task.edit), built from the task as written, on the subject of its key in
// the tasks bucket (see the contract's Tasks section for their fields).
#pragma once

#include <string>
#include <string_view>

#include "swarm/journal/journal.h"
#include "swarm/tasks/task.h"

namespace swarm {

Event task_add_event(std::string_view bucket, const Task& task, const Actor& actor, std::uint64_t revision);
Event task_claim_event(std::string_view bucket, const Task& task, const Actor& actor, std::uint64_t revision);
// A move from `from` to the task's state now, and why.
Event task_state_event(std::string_view bucket, TaskState from, const Task& task, const std::string& why,
                       const Actor& actor, std::uint64_t revision);
// An edit: `fields` names what changed.
Event task_edit_event(std::string_view bucket, const Task& task, const std::string& fields, const Actor& actor,
                      std::uint64_t revision);

// review.approve or review.reject of the task as written (its review).
Event review_event(std::string_view bucket, const Task& task, const Actor& actor, std::uint64_t revision);

}  // namespace swarm
