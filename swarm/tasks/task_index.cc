// The queue's index beside the records: a hint under _ready.<key> for each
// task that is ready, _working.<key> for each one being worked, written
// with the record (adr/0055) and repaired from a whole listing.
#include "swarm/tasks/task_store.h"

#include <algorithm>
#include <map>

#include "swarm/base/error.h"
#include "swarm/base/json.h"
#include "swarm/base/names.h"
#include "swarm/base/log.h"
#include "swarm/base/text.h"
#include "swarm/tasks/task_rules.h"

namespace swarm {

namespace {

// The index's keys: a prefix and the task's key.
constexpr std::string_view kHintPrefix = "_ready.";
constexpr std::string_view kWorkingPrefix = "_working.";

std::string hint_key(const std::string& id) { return std::string(kHintPrefix) + task_key(id); }
std::string working_key(const std::string& id) { return std::string(kWorkingPrefix) + task_key(id); }

std::string hint_value(const Task& t) {
  Json j = Json::object();
  j.set("id", t.id).set("priority", t.priority).set("labels", Json::strings(t.labels));
  if (t.created_at) j.set("created_at", format_rfc3339(*t.created_at));
  return j.dump();
}

std::optional<ReadyHint> hint_of(const std::string& value) {
  Json j = Json::parse(value);
  if (!j || !cJSON_IsObject(j.get())) return std::nullopt;
  const cJSON* id = cJSON_GetObjectItemCaseSensitive(j.get(), "id");
  const cJSON* priority = cJSON_GetObjectItemCaseSensitive(j.get(), "priority");
  const cJSON* labels = cJSON_GetObjectItemCaseSensitive(j.get(), "labels");
  const cJSON* created = cJSON_GetObjectItemCaseSensitive(j.get(), "created_at");
  if (!cJSON_IsString(id) || !cJSON_IsNumber(priority)) return std::nullopt;
  ReadyHint h;
  h.id = id->valuestring;
  const double p = priority->valuedouble;  // anything a planted hint holds: clamped, never cast out of range
  h.priority = !(p >= 0) ? kMostUrgent : p > static_cast<double>(kLeastUrgent) ? kLeastUrgent : static_cast<std::uint64_t>(p);
  const cJSON* label = nullptr;
  cJSON_ArrayForEach(label, labels) if (cJSON_IsString(label)) h.labels.emplace_back(label->valuestring);
  if (cJSON_IsString(created)) h.created_at = parse_rfc3339(created->valuestring).value_or(TimePoint{});
  return h;
}

// The state of each task of a whole listing, by id (corrupt ones left out).
std::map<std::string, TaskState> states_in(const std::vector<TaskEntry>& all) {
  std::map<std::string, TaskState> states;
  for (const auto& e : all)
    if (e.task) states[e.task->id] = e.task->state();
  return states;
}

StateOf among(const std::map<std::string, TaskState>& states) {
  return [&states](const std::string& id) -> std::optional<TaskState> {
    auto it = states.find(id);
    return it == states.end() ? std::nullopt : std::optional(it->second);
  };
}

}  // namespace

std::vector<kv::Bucket::HintWrite> TaskStore::own_hints(const std::optional<Task>& before, const Task& after,
                                                        bool fresh) const {
  std::vector<kv::Bucket::HintWrite> out;
  if (is_ready(after, stored_states())) out.push_back({hint_key(after.id), hint_value(after)});
  else if (!fresh && (!before || before->state() == TaskState::open)) out.push_back({hint_key(after.id), "", true});
  if (after.state() == TaskState::working) out.push_back({working_key(after.id), hint_value(after)});
  else if (!fresh && (!before || before->state() == TaskState::working))
    out.push_back({working_key(after.id), "", true});
  return out;
}

void TaskStore::index_dependents(const std::optional<Task>& before, const Task& after) const {
  if (after.state() != TaskState::completed || (before && before->state() == TaskState::completed)) return;
  // Completed: the tasks that came after it may be ready now.
  const auto all = list();
  const auto states = states_in(all);
  for (const auto& e : all)
    if (e.task && std::find(e.task->after.begin(), e.task->after.end(), after.id) != e.task->after.end() &&
        is_ready(*e.task, among(states)))
      translating_kv([&] { return bucket_.put_hint(hint_key(e.task->id), hint_value(*e.task)); });
}

void TaskStore::index(const std::optional<Task>& before, const Task& after, bool fresh) const {
  try {
    for (const auto& w : own_hints(before, after, fresh))
      translating_kv([&] {
        if (w.erase) bucket_.remove_hint(w.key);
        else bucket_.put_hint(w.key, w.value);
      });
    index_dependents(before, after);
  } catch (const Error& e) {
    swarm::log::info("the ready index of task {} was not written ({}); a whole listing mends it", printable(after.id),
                     e.what());
  }
}

std::uint64_t TaskStore::write_indexed(const std::optional<Task>& before, const Task& after,
                                       std::uint64_t revision) const {
  std::vector<kv::Bucket::Commit> commit{{task_key(after.id), to_json(after), revision}};
  std::optional<std::vector<std::uint64_t>> committed;
  if (translating_kv([&] { return bucket_.commits_atomically(); })) {
    try {
      for (auto& h : own_hints(before, after, false)) commit.push_back({h.key, h.value, std::nullopt, h.erase});
    } catch (const Error& e) {
      // The record alone, then; a whole listing mends the index.
      swarm::log::info("the ready index of task {} is not written with it ({})", printable(after.id), e.what());
    }
    committed = translating_kv([&] { return bucket_.commit_together(commit); });
  }
  if (!committed) {
    // A server or stream without atomic batches: the record, then its hints.
    const std::uint64_t written =
        translating_kv([&] { return bucket_.update(task_key(after.id), to_json(after), revision); });
    index(before, after);
    return written;
  }
  try {
    index_dependents(before, after);
  } catch (const Error& e) {
    swarm::log::info("the ready index of the tasks after {} was not written ({}); a whole listing mends it",
                     printable(after.id), e.what());
  }
  return committed->front();
}

std::vector<ReadyHint> TaskStore::ready_hints() const { return hints(kHintPrefix); }
std::vector<ReadyHint> TaskStore::working_hints() const { return hints(kWorkingPrefix); }

void TaskStore::forget_hint(const ReadyHint& hint) const {
  try {
    if (hint.sound && hint.key == hint_key(hint.id)) {
      auto entry = get(hint.id);
      if (entry && entry->task && is_ready(*entry->task, stored_states())) return;
    }
    translating_kv([&] { bucket_.remove_hint(hint.key); });
  } catch (const Error& e) {
    swarm::log::info("a stale hint {} was left ({})", printable(hint.key), e.what());
  }
}

std::vector<ReadyHint> TaskStore::hints(std::string_view prefix) const {
  std::vector<ReadyHint> out;
  translating_kv([&] {
    bucket_.for_each(
        [&](kv::Entry&& e) {
          auto h = hint_of(e.value);
          if (!h) h = ReadyHint{};  // unreadable: kept (not sound), so that it is removed
          h->sound = !h->id.empty() && is_valid_task_id(h->id) &&
                     e.key == std::string(prefix) + task_key(h->id);
          h->key = std::move(e.key);
          out.push_back(std::move(*h));
        },
        false, std::string(prefix) + ">");
  });
  std::sort(out.begin(), out.end(), [](const ReadyHint& a, const ReadyHint& b) {
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.created_at != b.created_at) return a.created_at < b.created_at;
    return natural_less(a.id, b.id);
  });
  return out;
}

std::size_t TaskStore::repair_hints(const std::vector<TaskEntry>& all) const {
  const auto states = states_in(all);
  std::size_t changed = repair(all, states, true) + repair(all, states, false);
  if (changed > 0) swarm::log::info("the index of {} mended: {} hints", bucket_.name(), changed);
  return changed;
}

std::size_t TaskStore::repair(const std::vector<TaskEntry>& all, const std::map<std::string, TaskState>& states,
                              bool ready_index) const {
  auto key_of = [&](const std::string& id) { return ready_index ? hint_key(id) : working_key(id); };
  auto belongs = [&](const Task& t) {
    return ready_index ? is_ready(t, among(states)) : t.state() == TaskState::working;
  };
  std::map<std::string, std::string> hinted;  // hint key -> its task id
  std::size_t changed = 0;
  for (const auto& h : ready_index ? ready_hints() : working_hints()) {
    if (h.sound && h.key == key_of(h.id)) {
      hinted[h.key] = h.id;
      continue;
    }
    translating_kv([&] { bucket_.remove_hint(h.key); });  // unreadable, or under another task's key
    ++changed;
  }
  std::vector<kv::Bucket::HintWrite> writes;
  for (const auto& e : all) {
    if (!e.task) continue;
    const std::string key = key_of(e.task->id);
    const bool ready = belongs(*e.task);
    const bool has = hinted.erase(key) > 0;
    if (ready == has) continue;
    writes.push_back({key, ready ? hint_value(*e.task) : std::string(), !ready});
  }
  for (const auto& [key, id] : hinted) writes.push_back({key, {}, true});  // of tasks no longer there
  // Together, in one wait: a listing that finds 100 ready tasks unhinted
  // mends them in about one round trip, not a hundred.
  translating_kv([&] { bucket_.write_hints(writes); });
  return changed + writes.size();
}

}  // namespace swarm
