// A task of the workspace's queue (`swarm.task.v1` in the bucket
// swarm-tasks): what to do, how urgent, after what, and where it stands.
// Its states move only by the rules of task_rules.h, each move a CAS write.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "swarm/base/clock.h"
#include "swarm/base/record.h"
#include "swarm/base/workspace_names.h"

namespace swarm {

inline constexpr const char* kTaskSchema = "swarm.task.v1";
inline constexpr const char* kDefaultTaskBucket = kLegacyTaskBucket;

enum class TaskState { open, working, in_review, approved, completed, failed, cancelled };
std::string_view to_string(TaskState state);
std::optional<TaskState> task_state_of(std::string_view text);
// Every state, in the order of a task's life (what --state accepts).
const std::vector<TaskState>& all_task_states();

inline constexpr std::uint64_t kMostUrgent = 0;
inline constexpr std::uint64_t kLeastUrgent = 4;
inline constexpr std::uint64_t kDefaultPriority = 2;
inline constexpr std::uint64_t kDefaultMaxAttempts = 3;
inline constexpr std::uint64_t kMaxAttemptsLimit = 100;
inline constexpr std::size_t kMaxTitleBytes = 200;
inline constexpr std::size_t kMaxBodyBytes = 64 * 1024;
inline constexpr std::size_t kMaxLabels = 16;
inline constexpr std::size_t kMaxAfter = 64;

// A review of a task's branch at one head: `approved`, `rejected`, or
// `dismissed` (a commit came after the approved head).
struct Review {
  std::string state;
  std::string head;
  std::string by;
  std::string reason;
  std::optional<TimePoint> at;
  std::string at_text;
  record::UnknownFields unknown_fields;
};

struct Task {
  std::string schema = kTaskSchema;
  std::string id;
  std::string title;
  std::string body;
  std::uint64_t priority = kDefaultPriority;
  std::vector<std::string> labels;
  std::vector<std::string> after;  // ids that must be completed first
  std::string state_text = "open";
  std::uint64_t attempts = 0;
  std::uint64_t max_attempts = kDefaultMaxAttempts;
  // The slot that works it, or worked it last (kept when it goes back to open:
  // that slot may take it up again as rework).
  std::string slot;
  std::uint64_t session = 0;  // that slot's session token
  std::string host;
  std::string head;    // the branch tip its slot closed with, or that landed
  std::string result;  // the last outcome in words: "fail", a refusal, a reason
  std::string review;  // a Review as JSON text, "" when none
  std::optional<TimePoint> created_at;
  std::string created_at_text;
  std::string created_by;
  std::optional<TimePoint> updated_at;
  std::string updated_at_text;
  record::UnknownFields unknown_fields;

  TaskState state() const { return task_state_of(state_text).value_or(TaskState::open); }
  void set_state(TaskState s) { state_text = std::string(to_string(s)); }
  std::optional<Review> review_record() const;
  void set_review(const std::optional<Review>& r);
};

// The KV key of task `id`: the id itself when it is a plain key
// (^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$), else "h" and its stable hash.
std::string task_key(const std::string& id);

// Where a slot keeps a task's closed head once it works on another task
// (adr/0050): the hub's branch swarm/<slot>.<key>, its key task_key(id) (a
// hash when that ends in ".lock", which git takes for no branch). Slot
// names have no '.', so no slot's own branch is ever one of these.
std::string parked_branch(const std::string& slot, const std::string& task_id);
// What follows "swarm/" in a branch landing lists: a slot's own branch
// (`slot`, key empty) or a parked task's (`slot`.`key`); nullopt for a name
// of neither shape.
struct Lane {
  std::string slot;
  std::string key;  // "" for the slot's own branch
  bool parked() const { return !key.empty(); }
};
std::optional<Lane> lane_of(std::string_view name);
// Bad input (exit 2) naming the value: a title (one line of text, at most
// 200 bytes), a label, a priority out of 0-4.
void require_task_title(std::string_view title);
void require_task_label(std::string_view label);
// At most kMaxLabels labels, each a label.
void require_task_labels(const std::vector<std::string>& labels);
void require_priority(std::uint64_t priority);

// Reads a stored value: the task, or why it is corrupt (an unknown state,
// a priority out of range, a missing id or title).
struct ParsedTask {
  std::optional<Task> task;
  std::string corrupt_reason;
};
ParsedTask parse_task(const std::string& text);
std::string to_json(const Task& task);

}  // namespace swarm
