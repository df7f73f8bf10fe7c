#include "swarm/tasks/task_store.h"

#include "swarm/base/error.h"
#include "swarm/base/text.h"

namespace swarm {

namespace {

// A change's CAS is tried this many times before the race is reported.
constexpr int kChangeAttempts = 8;
// The key of the id counter: no task key starts with '_'.
constexpr const char* kCounterKey = "_next";

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
  std::vector<TaskEntry> out;
  translating_kv([&] {
    bucket_.for_each([&](kv::Entry&& e) {
      if (!e.key.empty() && e.key[0] == '_') return;  // the id counter
      out.push_back(task_entry_of(std::move(e)));
    });
  });
  return out;
}

std::uint64_t TaskStore::create(const Task& task) const {
  try {
    return translating_kv([&] { return bucket_.create(task_key(task.id), to_json(task)); });
  } catch (const Error& e) {
    if (e.kind() != Errc::conflict) throw;
    throw Error(Errc::conflict, "task " + printable(task.id) + " exists already; see `swarm task show " +
                                    printable(task.id) + "`");
  }
}

std::uint64_t TaskStore::update(const Task& task, std::uint64_t revision) const {
  return translating_kv([&] { return bucket_.update(task_key(task.id), to_json(task), revision); });
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
      out.revision = update(out.after, entry->revision);
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

}  // namespace swarm
