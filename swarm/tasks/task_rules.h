// How a task's state may move (the contract's "Tasks: the work queue"), as
// functions of the record alone: each edits a Task or throws why it may not
// (conflict, naming the task and what would let it move). The store writes
// what they return by CAS; the journal says `task.state` with from/to/why.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "swarm/base/clock.h"
#include "swarm/tasks/task.h"
#include "swarm/tasks/task_store.h"

namespace swarm {

// Who claims: a slot, its session token, its host.
struct Claimer {
  std::string slot;
  std::uint64_t session = 0;
  std::string host;
};

// The state of each task by id, as a listing found them (corrupt ones left out).
using StateOf = std::function<std::optional<TaskState>(const std::string& id)>;

// Open, and every task it comes after completed.
bool is_ready(const Task& task, const StateOf& state_of);
// What `task` waits for: the ids of its `after` not completed yet.
std::vector<std::string> waiting_for(const Task& task, const StateOf& state_of);

// What a claim does to a task, and why: `claim` (it was ready, or rework of
// this same slot), `lapsed` (another slot's claim whose task lease is gone:
// attempts + 1 first), `failed` (lapsed at its last attempt: not claimed).
enum class ClaimKind { claim, rework, lapsed, failed };
// Moves `task` to working for `who`, or throws conflict why not. `lease_ours`:
// the claimer holds the task's lease already (a working task of another slot
// is then a lapsed claim).
ClaimKind claim(Task& task, const Claimer& who, const StateOf& state_of, bool lease_ours);

// Its slot closed: success -> in_review (review required) or approved, with
// the branch tip; fail -> open with attempts + 1 (failed at max_attempts);
// fork -> open. Nothing when the task is not this slot's working task.
// Returns whether it moved.
bool close_moves(Task& task, const std::string& slot, const std::string& result, bool review_required,
                 const std::string& head);
void cancel(Task& task, const std::string& reason);

// Review (the contract's "Review"): a reviewer `by` approves the branch of
// an in_review (or approved) task at `head`, its tip now -> approved; a
// rejection sends it back to open with the reason, its slot kept (that slot
// may take it up again). A task not waiting for a review is refused.
void approve(Task& task, const std::string& head, const std::string& by, TimePoint at);
void reject(Task& task, const std::string& reason, const std::string& by, TimePoint at);
// Whether an approval stands for its branch at `tip`: approved, at that head.
bool approved_at(const Task& task, const std::string& tip);
// Why not, for people ("" when it does): no review yet, dismissed by a later
// commit, rejected.
std::string why_not_approved(const Task& task, const std::string& tip);
// One word for its review against its branch at `tip`: approved,
// dismissed, rejected, waiting (in_review, no approval of tip), or "".
std::string review_word(const Task& task, const std::string& tip);
// Its slot's branch landed at `head` (or was in the onto branch already):
// in_review or approved -> completed (also working when the land was
// forced past its live session). Returns whether it moved.
bool land_moves(Task& task, const std::string& slot, const std::string& head, const std::string& how, bool forced);
// A land of its slot's branch was refused: the refusal in `result` (state
// kept: approved stays approved). Returns whether it changed.
bool land_refused(Task& task, const std::string& slot, const std::string& refusal);
void reopen(Task& task);

// Tasks a claim may take, most urgent first, then oldest (then by id):
// those whose labels include every one of `labels` that are ready, or
// working under a claim that lapsed (`lapsed` says which: its lease gone,
// expired, or its run dead), in one order: a lapsed claim of an urgent task
// comes before a ready task of less urgency.
std::vector<Task> claim_order(const std::vector<TaskEntry>& all, const std::vector<std::string>& labels,
                              const std::function<bool(const Task&)>& lapsed);
// Whether `have` (a task's labels) holds every one of `wanted`.
bool has_labels(const std::vector<std::string>& have, const std::vector<std::string>& wanted);
// The listing order: priority, then age, then id.
bool listed_before(const Task& a, const Task& b);

// Refuses (bad_input, exit 2) an `after` naming an unknown id, or one that
// would close a cycle, given every task as it is.
void require_after(const std::string& id, const std::vector<std::string>& after, const std::vector<TaskEntry>& all);

}  // namespace swarm
