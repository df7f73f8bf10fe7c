#include "swarm/tasks/task_store.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <iterator>
#include <map>
#include <mutex>
#include <thread>

#include "swarm/base/error.h"
#include "swarm/base/json.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/tasks/task_rules.h"

namespace swarm {

namespace {

// A change's CAS is tried this many times before the race is reported.
constexpr int kChangeAttempts = 8;
// The key of the id counter: no task key starts with '_'.
constexpr const char* kCounterKey = "_next";
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

TaskEntry task_entry_of(kv::Entry&& entry) {
  TaskEntry out;
  out.key = std::move(entry.key);
  out.revision = entry.revision;
  out.stored_at = entry.created;
  ParsedTask parsed = parse_task(entry.value);
  if (parsed.task && task_key(parsed.task->id) != out.key)
    parsed = {std::nullopt, "its id '" + printable(parsed.task->id) + "' is not the key's"};
  out.task = std::move(parsed.task);
  out.corrupt_reason = std::move(parsed.corrupt_reason);
  if (!out.task) out.raw = std::move(entry.value);
  return out;
}

TaskStore TaskStore::open(const kv::Connection& connection, const std::string& bucket) {
  try {
    return TaskStore(kv::Bucket::open(connection, bucket));
  } catch (const kv::Error& e) {
    throw bucket_open_error(e, "task", bucket, connection.connected_url());
  }
}

std::optional<TaskStore> TaskStore::open_if_exists(const kv::Connection& connection, const std::string& bucket) {
  try {
    return TaskStore(kv::Bucket::open(connection, bucket));
  } catch (const kv::Error& e) {
    if (e.kind() == kv::Errc::not_found) return std::nullopt;
    throw bucket_open_error(e, "task", bucket, connection.connected_url());
  }
}

TaskStore TaskStore::ensure(const kv::Connection& connection, const std::string& bucket, int replicas) {
  return translating_kv([&] { return TaskStore(kv::Bucket::ensure(connection, {.name = bucket, .replicas = replicas})); });
}

std::optional<TaskEntry> TaskStore::get(const std::string& id) const {
  auto entry = translating_kv([&] { return bucket_.get(task_key(id)); });
  if (!entry) return std::nullopt;
  return task_entry_of(std::move(*entry));
}

std::vector<TaskEntry> TaskStore::list() const {
  // The records are read on two threads of their own while the rest still
  // arrive (reading them took as long as receiving them: adr/0038), in
  // batches, each into its place of `out`, made at once as long as the
  // bucket had messages when it was opened (what comes beyond, written
  // meanwhile, is read at the end).
  constexpr std::size_t kBatch = 256;
  constexpr int kReaders = 2;
  std::vector<TaskEntry> out(static_cast<std::size_t>(bucket_.size_hint()));
  const std::size_t room = out.size();
  std::mutex mu;
  std::condition_variable cv;
  struct Batch {
    std::size_t at = 0;  // where its first entry goes in `out`
    std::vector<kv::Entry> entries;
  };
  std::deque<Batch> batches;
  std::vector<kv::Entry> beyond;  // what does not fit in `out`'s room
  bool received = false;
  std::exception_ptr failed;  // what a reader threw (out of memory), thrown here after the join
  auto reader = [&] {
    try {
      for (;;) {
        Batch batch;
        {
          std::unique_lock lock(mu);
          cv.wait(lock, [&] { return !batches.empty() || received; });
          if (batches.empty()) return;
          batch = std::move(batches.front());
          batches.pop_front();
        }
        for (std::size_t i = 0; i < batch.entries.size(); ++i)
          out[batch.at + i] = task_entry_of(std::move(batch.entries[i]));
      }
    } catch (...) {
      std::lock_guard lock(mu);
      if (!failed) failed = std::current_exception();
    }
  };
  std::vector<std::thread> readers;
  readers.reserve(kReaders);
  Batch batch;
  std::size_t count = 0;
  auto hand_over = [&](bool last) {
    {
      std::lock_guard lock(mu);
      if (!batch.entries.empty()) batches.push_back(std::move(batch));
      received = last;
    }
    if (last) cv.notify_all();
    else cv.notify_one();
    batch = Batch{count, {}};
    batch.entries.reserve(kBatch);
  };
  auto finish = [&] {
    hand_over(true);
    for (auto& r : readers) r.join();
    if (failed) std::rethrow_exception(failed);
  };
  try {
    for (int i = 0; i < kReaders; ++i) readers.emplace_back(reader);
    translating_kv([&] {
      bucket_.for_each([&](kv::Entry&& e) {
        if (!e.key.empty() && e.key[0] == '_') return;  // the id counter, the index
        if (count >= room) {
          beyond.push_back(std::move(e));
          return;
        }
        batch.entries.push_back(std::move(e));
        if (++count - batch.at >= kBatch) hand_over(false);
      });
    });
  } catch (...) {
    try {
      finish();
    } catch (...) {
    }
    throw;
  }
  finish();
  out.resize(count);
  for (auto& e : beyond) out.push_back(task_entry_of(std::move(e)));
  return out;
}

std::uint64_t TaskStore::create(const Task& task) const {
  try {
    const std::uint64_t revision = translating_kv([&] { return bucket_.create(task_key(task.id), to_json(task)); });
    index(std::nullopt, task, true);
    return revision;
  } catch (const Error& e) {
    if (e.kind() != Errc::conflict) throw;
    throw Error(Errc::conflict, "task " + printable(task.id) + " exists already; see `swarm task show " +
                                    printable(task.id) + "`");
  }
}

std::uint64_t TaskStore::update(const Task& task, std::uint64_t revision) const {
  return write_indexed(std::nullopt, task, revision);
}

void TaskStore::erase(const std::string& key, std::uint64_t revision) const {
  translating_kv([&] { bucket_.erase(key, revision); });
}

TaskStore::Changed TaskStore::change(const std::string& id, const std::function<void(Task&)>& edit) const {
  for (int attempt = 1;; ++attempt) {
    auto entry = get(id);
    if (!entry) throw Error(Errc::not_found, "no task " + printable(id) + "; see `swarm task list`");
    if (entry->corrupt())
      throw Error(Errc::conflict, "the record of task " + printable(id) + " is corrupt (" + entry->corrupt_reason +
                                      "); `swarm doctor --fix` removes it");
    Changed out{*entry->task, *entry->task, 0};
    edit(out.after);
    out.after.updated_at = std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now());
    try {
      out.revision = write_indexed(out.before, out.after, entry->revision);
      return out;
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict || attempt >= kChangeAttempts) throw;
      // Changed by another meanwhile: read it again and ask again.
    }
  }
}

std::string TaskStore::next_generated_id() const {
  for (int attempt = 1;; ++attempt) {
    auto current = translating_kv([&] { return bucket_.get(kCounterKey); });
    std::uint64_t n = 0;
    if (current) {
      try {
        n = std::stoull(current->value);
      } catch (const std::exception&) {
        n = 0;  // planted garbage: counted again from the tasks' own ids by create's conflicts
      }
    }
    const std::string next = std::to_string(n + 1);
    try {
      translating_kv([&] {
        if (current) bucket_.update(kCounterKey, next, current->revision);
        else bucket_.create(kCounterKey, next);
      });
      return "T-" + next;
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict || attempt >= kChangeAttempts * 4) throw;
    }
  }
}

std::optional<std::uint64_t> generated_number(std::string_view id) {
  if (id.size() < 3 || id.size() > 21 || id.substr(0, 2) != "T-" || id[2] == '0') return std::nullopt;
  std::uint64_t n = 0;
  for (char c : id.substr(2)) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return n;
}

void TaskStore::move_counter_past(std::uint64_t n) const {
  if (n == 0) return;
  for (int attempt = 1;; ++attempt) {
    auto current = translating_kv([&] { return bucket_.get(kCounterKey); });
    std::uint64_t at = 0;
    if (current) {
      try {
        at = std::stoull(current->value);
      } catch (const std::exception&) {
        at = 0;  // planted garbage: written over
      }
    }
    if (current && at >= n) return;
    try {
      translating_kv([&] {
        if (current) bucket_.update(kCounterKey, std::to_string(n), current->revision);
        else bucket_.create(kCounterKey, std::to_string(n));
      });
      return;
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict || attempt >= kChangeAttempts * 4) throw;
    }
  }
}

std::uint64_t TaskStore::highest_generated() const {
  std::uint64_t highest = 0;
  for (const auto& key : translating_kv([&] { return bucket_.keys(); }))
    if (auto n = generated_number(key)) highest = std::max(highest, *n);
  return highest;
}

StateOf TaskStore::stored_states() const {
  return [this](const std::string& id) -> std::optional<TaskState> {
    auto e = get(id);
    if (!e || e->corrupt()) return std::nullopt;
    return e->task->state();
  };
}

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
