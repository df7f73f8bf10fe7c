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

namespace {

struct Batch {
  std::size_t at = 0;  // where its first entry goes in `out`
  std::vector<kv::Entry> entries;
};

// Threads that parse batches of records, each into its place of `out`,
// while the rest still arrive. What a reader threw (out of memory) is
// thrown by finish(), after every reader is joined.
class BatchReaders {
 public:
  BatchReaders(std::vector<TaskEntry>& out, int readers) : out_(out) {
    threads_.reserve(static_cast<std::size_t>(readers));
    try {
      for (int i = 0; i < readers; ++i) threads_.emplace_back([this] { read(); });
    } catch (...) {
      join();
      throw;
    }
  }
  BatchReaders(const BatchReaders&) = delete;
  BatchReaders& operator=(const BatchReaders&) = delete;
  ~BatchReaders() { join(); }

  void hand_over(Batch&& batch) {
    {
      std::lock_guard lock(mu_);
      if (!batch.entries.empty()) batches_.push_back(std::move(batch));
    }
    cv_.notify_one();
  }

  void finish() {
    join();
    if (failed_) std::rethrow_exception(failed_);
  }

 private:
  void join() {
    {
      std::lock_guard lock(mu_);
      received_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

  void read() {
    try {
      for (;;) {
        Batch batch;
        {
          std::unique_lock lock(mu_);
          cv_.wait(lock, [&] { return !batches_.empty() || received_; });
          if (batches_.empty()) return;
          batch = std::move(batches_.front());
          batches_.pop_front();
        }
        for (std::size_t i = 0; i < batch.entries.size(); ++i)
          out_[batch.at + i] = task_entry_of(std::move(batch.entries[i]));
      }
    } catch (...) {
      std::lock_guard lock(mu_);
      if (!failed_) failed_ = std::current_exception();
    }
  }

  std::vector<TaskEntry>& out_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> batches_;
  bool received_ = false;
  std::exception_ptr failed_;
  std::vector<std::thread> threads_;
};

}  // namespace

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
  std::vector<kv::Entry> beyond;  // what does not fit in `out`'s room
  std::size_t count = 0;
  {
    BatchReaders readers(out, kReaders);
    Batch batch;
    translating_kv([&] {
      bucket_.for_each([&](kv::Entry&& e) {
        if (!e.key.empty() && e.key[0] == '_') return;  // the id counter, the index
        if (count >= room) {
          beyond.push_back(std::move(e));
          return;
        }
        batch.entries.push_back(std::move(e));
        if (++count - batch.at < kBatch) return;
        readers.hand_over(std::move(batch));
        batch = Batch{count, {}};
        batch.entries.reserve(kBatch);
      });
    });
    readers.hand_over(std::move(batch));
    readers.finish();
  }
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

}  // namespace swarm
