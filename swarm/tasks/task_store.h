// The workspace's tasks, typed, over the KV bucket swarm-tasks (key =
// task_key(id)): reads report a corrupt record instead of failing, every
// write is a CAS, and a change is a bounded read-modify-write that rereads
// on a lost race.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kv/bucket.h"
#include "swarm/base/clock.h"
#include "swarm/tasks/task.h"

namespace swarm {

struct TaskEntry {
  std::string key;
  std::uint64_t revision = 0;
  TimePoint stored_at{};
  std::optional<Task> task;  // empty when corrupt
  std::string corrupt_reason;
  std::string raw;  // a corrupt record's bytes

  bool corrupt() const { return !task.has_value(); }
};

// A hint of the ready index (adr/0038): a task that was ready when a writer
// last wrote it, with what claim order needs. A hint may be stale (a claim
// checks the record itself) or missing (a full listing finds the task).
struct ReadyHint {
  std::string key;  // its own key in the bucket
  bool sound = false;  // its id is a task id and its key is that id's hint key
  std::string id;
  std::uint64_t priority = kDefaultPriority;
  TimePoint created_at{};
  std::vector<std::string> labels;
};

// n when `id` is T-<n> as ids are generated (decimal digits, no leading
// zero, at most 19 of them); nullopt for any other id.
std::optional<std::uint64_t> generated_number(std::string_view id);

class TaskStore {
 public:
  // Binds the bucket; a missing one is not_bootstrapped (`swarm up` makes it).
  static TaskStore open(const kv::Connection& connection, const std::string& bucket = kDefaultTaskBucket);
  // The same, nullopt when the bucket does not exist (a workspace made
  // before tasks: its task ids are free-form, as before).
  static std::optional<TaskStore> open_if_exists(const kv::Connection& connection,
                                                 const std::string& bucket = kDefaultTaskBucket);
  // Makes the bucket (swarm up) or checks it: no TTL, one value per key.
  static TaskStore ensure(const kv::Connection& connection, const std::string& bucket, int replicas);

  const std::string& bucket_name() const { return bucket_.name(); }

  // The task of `id` as stored (nullopt: none). A record under its key that
  // names another id is corrupt.
  std::optional<TaskEntry> get(const std::string& id) const;
  // Every task, corrupt records included, from one streamed snapshot.
  std::vector<TaskEntry> list() const;
  // Stores a new task: conflict when its id exists. Returns the revision.
  std::uint64_t create(const Task& task) const;
  // Stores `task` over `revision`: conflict when it changed since.
  std::uint64_t update(const Task& task, std::uint64_t revision) const;
  // Removes a record (doctor --fix of a corrupt one) at `revision`.
  void erase(const std::string& key, std::uint64_t revision) const;

  // Reads task `id`, hands it to `change` (which edits it, or throws why
  // not), writes it by CAS; on a lost race reads again, at most a few times.
  // Not found when there is no such task; corrupt records are refused.
  // Returns the task as written and its revision.
  struct Changed {
    Task before;
    Task after;
    std::uint64_t revision = 0;
  };
  Changed change(const std::string& id, const std::function<void(Task&)>& change) const;

  // Each task's state as stored now, one read per id asked (none when it
  // is missing or corrupt).
  std::function<std::optional<TaskState>(const std::string&)> stored_states() const;

  // The index (adr/0038): hints of the tasks that are ready, and of those
  // being worked (a claim of one whose lease lapsed is claimable), most
  // urgent then oldest first: a listing of a few small keys, not of every task.
  std::vector<ReadyHint> ready_hints() const;
  std::vector<ReadyHint> working_hints() const;
  // A hint whose claim was refused: removed unless its task is ready after
  // all (its lease held by a claimer that has not written the record yet).
  void forget_hint(const ReadyHint& hint) const;
  // Makes the index agree with `all` (a whole listing): hints put where
  // they lack, removed where their task is no longer so. Returns how many
  // it changed.
  std::size_t repair_hints(const std::vector<TaskEntry>& all) const;

  // The next generated id, T-<n>, from a CAS counter (key "_next"): two
  // concurrent adds never get the same number. An id taken by hand is
  // skipped by create's conflict, then move_counter_past(highest_generated()).
  std::string next_generated_id() const;
  // Moves the counter to at least `n` by CAS, never backwards: the next
  // generated id is past T-<n> (what an import that wrote T-<n> does).
  void move_counter_past(std::uint64_t n) const;
  // The highest n of the queue's ids T-<n> (0: none), from its keys alone.
  std::uint64_t highest_generated() const;

  // Every change to the queue from now on (the current records first,
  // then caught_up): what join --next --wait waits on; `deletes` also
  // says when a record is removed (what swarm serve follows).
  kv::Watch watch(bool deletes = false) const { return bucket_.watch(">", {.ignore_deletes = !deletes}); }

  TaskStore with_budget(std::chrono::milliseconds budget) const {
    TaskStore copy = *this;
    copy.bucket_ = bucket_.with_budget(budget);
    return copy;
  }

 private:
  explicit TaskStore(kv::Bucket bucket) : bucket_(std::move(bucket)) {}
  // After `after` was written (over `before`, when known): its hint put or
  // removed, and when it completed, hints put for the tasks it let be ready.
  // A failure is logged, never thrown: the record stands, the index is a hint.
  // `fresh`: a record just created, with no hint to remove (a delete
  // marker for a key that never held one would stay in the stream).
  void index(const std::optional<Task>& before, const Task& after, bool fresh = false) const;
  // The hint writes of that index for `after` itself (its ready and working
  // hints), without the tasks it lets be ready.
  std::vector<kv::Bucket::HintWrite> own_hints(const std::optional<Task>& before, const Task& after,
                                                 bool fresh) const;
  // The hints of the tasks `after` let be ready, when it completed.
  void index_dependents(const std::optional<Task>& before, const Task& after) const;
  // The CAS write of `after` over `revision`, and its own hints: one commit
  // where the bucket takes them (2.12+, adr/0055), else the write and then
  // the hints. Returns the record's new revision; conflict as update().
  std::uint64_t write_indexed(const std::optional<Task>& before, const Task& after, std::uint64_t revision) const;
  std::vector<ReadyHint> hints(std::string_view prefix) const;
  // repair_hints of one index: the ready one, or the working one.
  std::size_t repair(const std::vector<TaskEntry>& all, const std::map<std::string, TaskState>& states,
                     bool ready_index) const;
  kv::Bucket bucket_;
};

// A stored value as a TaskEntry.
TaskEntry task_entry_of(kv::Entry&& entry);

}  // namespace swarm
