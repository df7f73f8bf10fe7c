// Landing finished work: the slot branches of the hub as an orchestrator
// sees them (`branches`), and a slot's branch brought into the onto branch
// under lease land.<onto> (`land`): merged in memory, checked in a kept
// checkout, and the onto branch moved only by a compare-and-swap the hub
// enforces, from the tip the merge was made on (adr/0021).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "swarm/base/child_process.h"
#include "swarm/git/backend.h"
#include "swarm/journal/journal.h"
#include "swarm/landing/check.h"
#include "swarm/lease/lease.h"
#include "swarm/slots/liveness.h"
#include "swarm/slots/session_store.h"
#include "swarm/tasks/task_store.h"
#include "swarm/workspace/workspace.h"

namespace swarm {

// The onto branch moved under a land this often: it gives up (nothing moved).
inline constexpr int kMaxLandAttempts = 5;
inline constexpr std::chrono::seconds kDefaultLandTtl{30};
// The push is not started with less than this left before the lease's deadline.
inline constexpr std::chrono::milliseconds kLandPushMargin{500};

// The lease a land of `onto` waits in line for: land.<onto>, each '/' a '.'
// and any character a lease name cannot hold a '_'.
std::string land_lease_name(std::string_view onto);
// A branch name git would take (refs/heads/<name>); bad_input naming `what` otherwise.
void require_branch_name(std::string_view name, std::string_view what);

// A check's refusal of a slot branch at one head, which every later land
// refuses again until the branch moves past it (or --force): from the
// journal's land.refused (reason check or checkout).
struct StandingRefusal {
  std::string head;
  std::string reason;  // check, checkout
  int status = 0;      // the check's exit (check)
  std::string onto;
  TimePoint at{};      // the server's time of the refusal
};

// The refusal `e` records when it stands against its head (a land.refused
// for a check or a checkout that names its head); nullopt otherwise.
std::optional<StandingRefusal> standing_refusal(const Event& e);
// Why it stands, for people: what refused it, at which head, and how it ends.
std::string standing_refusal_text(const StandingRefusal& r);

// The slot a landable branch belongs to: its own (`slot`), or the one that
// parked a task's head as swarm/<slot>.<key> (adr/0050). `name` is what
// follows "swarm/"; a name of neither shape is its own slot (refused by the
// verbs that need one).
std::string lane_slot(const std::string& name);
// Whether `name` is a parked task's branch (swarm/<slot>.<key>).
bool is_parked_lane(const std::string& name);

// One slot branch (or a parked task's, git.slot being <slot>.<key>) as
// `branches` shows it.
struct BranchRow {
  BranchInfo git;
  std::optional<State> state;  // its live session's, or none
  std::string result;          // the last close's result ("" when none is journaled)
  std::string task_id;         // of that close
  std::string closed_head;     // the head that close named ("" when none)
  std::uint64_t closed_seq = 0;
  bool priority_high = false;  // that close said --priority high: the fast lane of land --ready
  std::vector<Overlap> conflicts;  // foreseen (unlanded branches only; see Landing::branches)
  std::optional<StandingRefusal> refused;  // unlanded, and refused by a check at its head
  std::optional<Task> task;    // task_id's record in the queue, when it is a queued task
  // Its review against the branch's head: approved, dismissed (approved at
  // an older head), rejected, waiting (in_review), or "" (none asked for).
  std::string review;
};

struct Branches {
  std::string onto;
  std::vector<BranchRow> rows;  // by slot name
};

struct LandResult {
  enum class Outcome { landed, already_landed, refused };
  Outcome outcome = Outcome::refused;
  std::string slot;
  std::string onto;
  std::string kind;  // fast-forward, merge, or none
  std::string head;  // the slot branch's tip that was landed or refused
  std::string from;  // the onto branch before
  std::string to;    // and after (== from unless landed)
  std::uint64_t token = 0;
  int attempts = 0;
  std::string reason;              // refused: conflict, check, checkout, hold
  std::vector<std::string> paths;  // conflict, hold
  int check_status = 0;            // check
  std::string message;             // refused: what happened, for people
  bool forced = false;             // landed with --force past a guard (see Landing::not_ready), or --no-check
  bool no_check = false;           // the workspace's check was skipped (--no-check)
  std::string check;               // "" (none ran), passed, flaky (passed on a retry), failed
  int check_attempts = 0;          // runs of the check on the tree that decided
  std::string batch;               // the batch it was landed or refused in ("" when alone)
  // refused in a batch for its check: each failed check of a candidate it was in.
  struct FailedCheck {
    std::vector<std::string> slots;
    int status = 0;
  };
  std::vector<FailedCheck> convicted_by;
};

// What a check said of a tree.
struct CheckVerdict {
  int status = 0;                         // of the last run: 0 passed
  std::size_t failed = 0;                 // which of the check's commands failed (when status != 0)
  int attempts = 0;                       // runs (1 + retries used)
  std::optional<std::string> unusable;    // the tree cannot be checked out: why (nothing ran)
};
std::string_view to_string(LandResult::Outcome outcome);


class Landing {
 public:
  Landing(Workspace workspace, HubLocation hub, SessionStore store, LeaseStore leases, HostIdentity me);

  // The workspace's task queue (its bucket, opened when first needed) and
  // whether a land needs its task approved at the branch's head
  // (`up --require-review`). A land moves the slot's task (completed; a
  // refusal is kept in its record).
  void use_tasks(std::string bucket, bool review_required);
  // land --force: a branch touching paths another live slot holds
  // exclusively lands anyway (journaled hold.conflict, policy forced);
  // otherwise it is refused (reason hold).
  void land_past_holds(bool yes) { past_holds_ = yes; }
  const std::string& task_bucket() const { return task_bucket_; }

  // `swarm review approve|reject`: the task of `slot`'s last close, or
  // `task_id` (its slot then the one in its record), judged at its branch's
  // tip. Approve: `head` (a commit id or its prefix, "" for the tip) must be
  // the tip (else conflict: the branch moved past what was reviewed).
  // Reject: back to open with `reason`. Journaled review.approve/reject.
  // A task whose slot took up another task since is judged at its parked
  // branch, swarm/<slot>.<key>.
  struct Reviewed {
    Task task;
    std::uint64_t revision = 0;
    std::string tip;   // the branch's tip now
    std::string head;  // what was approved or rejected: the task's own head (a rejected
                       // task's branch may have moved on to the slot's next task)
  };
  Reviewed review(const std::string& slot, const std::string& task_id, bool approve, const std::string& head,
                  const std::string& reason, const std::string& by);

  // `swarm review show`: what an approval of task `id` approves, judged on
  // `onto`: its branch (its slot's, or the one it was parked at), the head
  // it is at and the one its slot closed, its diff since the merge base,
  // the check's refusal that stands against that head, and why an
  // approval would be refused now ("" when it would be taken).
  struct ReviewView {
    Task task;
    std::string branch;
    std::string tip;
    std::string onto;
    std::string onto_tip;
    BranchDiff diff;
    std::optional<StandingRefusal> refused;
    std::string not_approvable;
  };
  ReviewView review_view(const std::string& onto, const std::string& id);

  // `given`, or the hub's default branch when empty.
  std::string onto(const std::string& given);
  // Every swarm/* branch of the hub against `onto`; with `foresee`, each
  // unlanded one's conflicts with the other unlanded ones and with `onto`.
  Branches branches(const std::string& onto, bool foresee = true);
  // The slots `land --ready` takes: last close success, branch not landed,
  // no live session; those closed with --priority high first, each lane in
  // the order they were closed. With review required, only those whose task
  // is approved at the branch's tip; the others, in `unreviewed` when given.
  std::vector<BranchRow> ready(const std::string& onto, std::vector<BranchRow>* unreviewed = nullptr);
  // After a commit of `slot` pushed its branch: the conflicts its branch
  // now has with the other unlanded slot branches and with `onto`, each
  // journaled as an `overlap` event (with the session's `token`, `task`
  // and record `revision`). A journal that fails is a warning in the log.
  std::vector<Overlap> commit_overlaps(const std::string& slot, const std::string& onto, std::uint64_t token,
                                       const std::string& task, std::uint64_t revision);

  // Lands `slot` on `onto` holding `lease` (land.<onto>, granted to this
  // process): renews it meanwhile (`lease` is left as last renewed, for
  // its release), releases nothing. Conflicts, failed checks and trees
  // that cannot be checked out are results (refused); a lease lost before
  // the push, a hub that fails, or an onto branch that kept moving throw
  // (nothing moved). `forced`: landed past not_ready (journaled so).
  LandResult land(const std::string& slot, const std::string& onto, Lease& lease, const LandCheck& check,
                  bool forced = false);

  // Lands `slots` (in this order) as one batch holding `lease` (adr/0028):
  // each merged in turn into one candidate, the check run once on it; when
  // it fails the batch is bisected, the culprits refused (reason check,
  // with the batch and the failed checks they were in) and the rest landed.
  // The onto branch moves once, by the same fenced compare-and-swap, to the
  // last candidate that passed; each slot landed has its own merge commit
  // (or fast-forward) and `land` event carrying the batch. Results in the
  // order of `slots`, journaled only once the push went (a kill before it
  // leaves the onto branch and the journal as they were). Throws as land.
  std::vector<LandResult> land_batch(const std::vector<std::string>& slots, const std::string& onto, Lease& lease,
                                     const LandCheck& check);

  // The branch that holds task `id`'s closed head, unlanded on `onto`
  // (its slot's own, or the one it was parked at: see lane_slot), for
  // `land --task`; not_found naming the task when none does.
  std::string lane_of_task(const std::string& onto, const std::string& id);

  // Why `slot` is not ready to land on its own, as `land --ready` would
  // judge it ("" when it is): its last close was not success (or none is
  // journaled), its session is live (fresh or late) or corrupt, a check
  // refused its branch at the head it has now (refusal_of), or review is
  // required and its task is not approved at that head.
  std::string not_ready(const std::string& slot);
  // The check's refusal that stands against `slot`'s branch at `tip`: the
  // last land.refused for a check (or a checkout), when it was of this head.
  std::optional<StandingRefusal> refusal_of(const std::string& slot, const std::string& tip) const;

  // With a session token (land --session, $SWARM_SESSION): conflict unless
  // the slot has no live session or its session has that token.
  void require_session(const std::string& slot, std::optional<std::uint64_t> token) const;

  const Journal& journal() const { return journal_; }
  const SessionStore& sessions() const { return store_; }
  const LeaseStore& leases() const { return leases_; }

  // For a reader that must write nothing of the workspace (swarm serve): a
  // local hub is read where it is, a network hub's branches are fetched
  // into `cache` (a folder of the reader's own, outside the workspace),
  // and .swarm/land/ is never made. Only onto() and branches() then.
  void read_only(std::filesystem::path cache) { read_only_cache_ = std::move(cache); }

 private:
  class Batch;
  LandBackend& git();
  CommitAuthor land_author() const;
  const std::optional<TaskStore>& queue() const;
  // The queued task `id` (nullopt: none, a free-form id, or no queue).
  std::optional<Task> queued(const std::string& id) const;
  // Why review does not let slot's branch at `tip` land ("" when it does,
  // or review is not required).
  std::string not_approved(const std::string& task_id, const std::string& tip) const;
  // After a land's result was journaled: its slot's task moved (completed,
  // or the refusal kept); a failure is a warning (the land stands).
  void move_task(const LandResult& result, const std::string& task_id) const;
  std::string task_of(const std::string& slot) const;
  // The task of the slot's last close: what its branch was closed as (the
  // one a land completes and a review approves).
  std::string closed_task_of(const std::string& slot) const;
  // The journal's last `close` of the slot (none: never closed).
  std::optional<Event> last_close(const std::string& slot) const;
  // The close a lane's branch is at: for a slot's own, its last close; for
  // a parked task's, the slot's close at `tip` (its head), read back among
  // its recent closes.
  std::optional<Event> close_of(const std::string& lane, const std::string& tip) const;
  // The branch task `id` of `slot` is judged at: its parked one when the
  // hub has it, else the slot's own.
  std::string task_branch(const std::string& slot, const std::string& id) const;
  // The merged tree checked out and checked: the refusal, or nullopt when it passed.
  // `require_held` throws when the lease was lost (before anything is decided from the check).
  // `commit` checked out in the onto branch's checkout and checked, again
  // after a failure up to check.retries times; `who` names it (SWARM_LAND_SLOT, output).
  CheckVerdict check_tree(const std::string& commit, const std::string& who, const std::string& onto,
                          const Lease& lease, const LandCheck& check, CheckRun& run,
                          const std::function<void(const char*)>& require_held,
                          const std::vector<std::pair<std::string, std::string>>& more_env = {});
  std::optional<LandResult> check_merged(const MergePlan& plan, LandResult& result, const Lease& lease,
                                         const LandCheck& check, CheckRun& run, const std::string& task,
                                         const std::function<void(const char*)>& require_held);
  // The refusal of `result.slot`'s branch (reason hold) when it changed
  // paths that another live slot holds exclusively (of `live`, the holds
  // listed: HoldStore::live; nullopt: listed here); nullopt when it did not
  // (or land_past_holds). Journals hold.conflict either way it found some.
  std::optional<LandResult> refused_for_holds(LandResult& result, const std::string& task,
                                              const std::vector<LeaseEntry>* live = nullptr);
  // `result` refused for `reason`, journaled.
  LandResult refuse(LandResult& result, const std::string& reason, const std::string& message,
                    const std::string& task);

  Workspace workspace_;
  std::optional<std::filesystem::path> read_only_cache_;
  HubLocation hub_;
  SessionStore store_;
  LeaseStore leases_;
  HostIdentity me_;
  Journal journal_;
  std::unique_ptr<LandBackend> git_;
  int batches_ = 0;
  std::string task_bucket_ = kDefaultTaskBucket;
  bool review_required_ = false;
  bool past_holds_ = false;
  mutable std::optional<std::optional<TaskStore>> queue_;  // made by this Landing: a batch's id is <lease token>.<this count>
};

}  // namespace swarm
