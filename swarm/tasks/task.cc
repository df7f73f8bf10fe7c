#include "swarm/tasks/task.h"

#include <array>

#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include <cctype>

namespace swarm {

namespace {

constexpr std::uint64_t kMaxCount = 1ULL << 53;  // exact in the double JSON numbers are read as

constexpr std::array<std::pair<TaskState, std::string_view>, 7> kStates = {{
    {TaskState::open, "open"},
    {TaskState::working, "working"},
    {TaskState::in_review, "in_review"},
    {TaskState::approved, "approved"},
    {TaskState::completed, "completed"},
    {TaskState::failed, "failed"},
    {TaskState::cancelled, "cancelled"},
}};

const record::Schema<Task>& schema() {
  using namespace record;
  using T = Task;
  static const Schema<T> kSchema{
      {text("schema", &T::schema, true), text("id", &T::id, true), text("title", &T::title, true),
       text("body", &T::body), count("priority", &T::priority, kLeastUrgent, "a priority of 0 to 4", true),
       list("labels", &T::labels, true), list("after", &T::after, true), text("state", &T::state_text, true),
       count("attempts", &T::attempts, kMaxCount, "a count", true),
       count("max_attempts", &T::max_attempts, kMaxAttemptsLimit, "a count of 1 to 100", true),
       text("slot", &T::slot), count("session", &T::session, kMaxCount, "a session token"),
       text("host", &T::host), text("head", &T::head), text("result", &T::result), object("review", &T::review),
       time("created_at", &T::created_at, &T::created_at_text), text("created_by", &T::created_by),
       time("updated_at", &T::updated_at, &T::updated_at_text)},
      &T::unknown_fields};
  return kSchema;
}

const record::Schema<Review>& review_schema() {
  using namespace record;
  using R = Review;
  static const Schema<R> kSchema{{text("state", &R::state, true), text("head", &R::head), text("by", &R::by),
                                  text("reason", &R::reason), time("at", &R::at, &R::at_text)},
                                 &R::unknown_fields};
  return kSchema;
}

}  // namespace

std::string_view to_string(TaskState state) {
  for (const auto& [s, name] : kStates)
    if (s == state) return name;
  return "open";
}

std::optional<TaskState> task_state_of(std::string_view text) {
  for (const auto& [s, name] : kStates)
    if (name == text) return s;
  return std::nullopt;
}

const std::vector<TaskState>& all_task_states() {
  static const std::vector<TaskState> kAll = [] {
    std::vector<TaskState> all;
    for (const auto& [s, name] : kStates) all.push_back(s);
    return all;
  }();
  return kAll;
}

std::optional<Review> Task::review_record() const {
  if (review.empty()) return std::nullopt;
  std::optional<Review> r;
  if (!record::read(review, review_schema(), &r).empty()) return std::nullopt;
  return r;
}

void Task::set_review(const std::optional<Review>& r) { review = r ? record::write(*r, review_schema()) : ""; }

std::string task_key(const std::string& id) {
  // ^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$, and a key NATS takes (no empty token).
  const bool plain = !id.empty() && id.size() <= 63 && std::isalnum(static_cast<unsigned char>(id[0])) != 0 &&
                     id.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") ==
                         std::string::npos &&
                     id.find("..") == std::string::npos && id.back() != '.';
  return plain ? id : "h" + stable_hash_hex(id);
}

std::string parked_branch(const std::string& slot, const std::string& task_id) {
  std::string key = task_key(task_id);
  if (key.size() >= 5 && key.compare(key.size() - 5, 5, ".lock") == 0) key = "h" + stable_hash_hex(task_id);
  return "swarm/" + slot + "." + key;
}

std::optional<Lane> lane_of(std::string_view name) {
  const auto dot = name.find('.');
  Lane lane{std::string(name.substr(0, dot)), dot == std::string_view::npos ? "" : std::string(name.substr(dot + 1))};
  if (!is_valid_slot_name(lane.slot)) return std::nullopt;
  if (dot != std::string_view::npos && lane.key.empty()) return std::nullopt;
  return lane;
}

void require_task_title(std::string_view title) {
  if (title.empty() || title.size() > kMaxTitleBytes || !is_plain_text(title))
    throw Error(Errc::bad_input, "bad title '" + printable(title.substr(0, 80)) + "': a title is one line of 1 to " +
                                     std::to_string(kMaxTitleBytes) + " bytes of text without control characters");
}

void require_task_label(std::string_view label) {
  const bool ok = !label.empty() && label.size() <= 63 && std::isalnum(static_cast<unsigned char>(label[0])) != 0 &&
                  label.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:/-") ==
                      std::string_view::npos;
  if (!ok)
    throw Error(Errc::bad_input, "bad label '" + printable(label.substr(0, 80)) +
                                     "': a label is 1 to 63 of [A-Za-z0-9_.:/-], starting with a letter or digit");
}

void require_task_labels(const std::vector<std::string>& labels) {
  if (labels.size() > kMaxLabels)
    throw Error(Errc::bad_input, "at most " + std::to_string(kMaxLabels) + " labels");
  for (const auto& l : labels) require_task_label(l);
}

void require_priority(std::uint64_t priority) {
  if (priority > kLeastUrgent)
    throw Error(Errc::bad_input, "bad priority " + std::to_string(priority) + ": 0 (most urgent) to 4");
}

ParsedTask parse_task(const std::string& text) {
  ParsedTask out;
  out.corrupt_reason = record::read(text, schema(), &out.task);
  if (!out.corrupt_reason.empty()) return out;
  if (out.task->schema != kTaskSchema) out.corrupt_reason = "schema is '" + printable(out.task->schema) + "'";
  else if (!task_state_of(out.task->state_text)) out.corrupt_reason = "unknown state '" + printable(out.task->state_text) + "'";
  else if (out.task->max_attempts == 0) out.corrupt_reason = "field 'max_attempts' is not a count of 1 to 100";
  if (!out.corrupt_reason.empty()) out.task.reset();
  return out;
}

std::string to_json(const Task& task) { return record::write(task, schema()); }

}  // namespace swarm
