// The slot verbs (join, commit, renew, close, evict) on one workspace: who may
// do what to a slot's record and worktree, and in which order, so that a
// failure part way never leaves a record without a worktree or loses work.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "swarm/base/clock.h"
#include "swarm/base/error.h"
#include "swarm/base/host.h"
#include "swarm/git/worktree.h"
#include "swarm/holds/hold_store.h"
#include "swarm/journal/journal.h"
#include "swarm/slots/liveness.h"
#include "swarm/slots/port_block.h"
#include "swarm/slots/recovery.h"
#include "swarm/slots/session_store.h"
#include "swarm/slots/task_lease.h"
#include "swarm/tasks/task_store.h"
#include "swarm/workspace/workspace.h"

namespace swarm {

// A CAS write that lost a race is retried at most this often, and only while
// the record is still the same session.
inline constexpr int kMaxCasAttempts = 5;

// The session an agent was given at join (join --json's session_token):
// when set, a verb acts only while the slot's current session is that one,
// so a replaced agent cannot act on its successor's. Empty: host ownership
// alone decides (as before tokens).
using ExpectedSession = std::optional<std::uint64_t>;

// Whether join may take over a live session of this host (--force), or only
// a stale one.
enum class Takeover { only_stale, force };

// Who joins: a `swarm join` (a process that ends once the slot is made), or
// `swarm run`, which holds the slot's run lock already (try_lock_run) and
// lives as long as the session: its start time makes the session dead at
// once when it is gone.
struct Joiner {
  bool run = false;
  std::uint64_t leaf_start = 0;  // run: its /proc start time
  // Set when the join was refused because of its task (its lease held, its
  // queue record not claimable or claimed meanwhile): join_next moves on.
  bool* task_refused = nullptr;
  // join --next: the task must be in the queue (an index hint naming an id
  // that is not is no task to claim, never a free-form id).
  bool queued_only = false;
  // join --next --label: labels the task's record must have (a hint's are
  // only what its writer saw).
  std::vector<std::string> labels;
};

struct JoinResult {
  std::filesystem::path worktree;
  Session session;
  std::uint64_t revision = 0;  // also the session token
  std::optional<SessionEntry> replaced;  // the stale (or forced) record it replaced
  std::optional<State> replaced_state;   // how it stood: stale, or live (--force)
  bool resumed_worktree = false;         // the slot's folder was already there
  std::string base;                      // join --base REF, or empty
  WorktreeStarted started;               // where a new worktree's branch started (empty when resumed)
};

struct CommitResult {
  std::optional<std::string> commit;  // empty: nothing to commit
  std::string branch;
  bool pushed = false;
  std::uint64_t revision = 0;         // the renewed record's revision, 0 when renewal failed
  std::vector<std::string> warnings;  // push or renewal failures: the commit stands
  std::uint64_t token = 0;            // the session's
  std::string task_id;                // the session's
  // Paths of the commit that other live slots hold exclusively (under
  // `up --holds warn`: committed, said and journaled as hold.conflict).
  std::vector<HeldPath> held;
};

// A session names at most this many holds, and a hold at most this many
// patterns (more is bad_input): each commit and land compares every path
// with every pattern of other slots' holds.
inline constexpr std::size_t kMaxHoldsPerSession = 100;
inline constexpr std::size_t kMaxPatternsPerHold = 64;

// `swarm hold`: the hold taken, and the session it lives with.
struct HoldResult {
  Lease lease;
  std::uint64_t session = 0;
  std::vector<std::string> warnings;  // of the renewal that named it (a task lease not kept, ...)
};

// `swarm hold --release`: the holds let go, and those narrowed to fewer patterns.
struct HoldRelease {
  std::vector<std::string> released;  // lease names
  std::vector<std::string> narrowed;
  std::vector<std::string> warnings;
};

struct SyncOutcome {
  std::string onto;                   // the branch brought home
  SyncResult git;                     // how (up-to-date, fast-forward, merge, conflict), from, to, conflicts
  bool pushed = false;                // the branch as synced went to the hub
  std::uint64_t revision = 0;         // the renewed record's revision, 0 when renewal failed
  std::vector<std::string> warnings;  // push or renewal failures: the sync stands
};

// What a renewal writes into the record besides last_renewed, in the same
// CAS write: what the agent says it does (renew --status --note; "" clears
// it), and the agent `swarm run` started.
struct Presence {
  std::optional<std::string> status;
  std::optional<std::string> note;
  std::optional<std::pair<std::int64_t, std::uint64_t>> agent;  // its pid and /proc start time ({0, 0}: none)
  std::optional<std::uint64_t> leaf_start;  // the run's start time (0: no run keeps the session any more)
  // Holds the record starts or stops naming (swarm hold): as changes, so
  // that a write retried on a record read again keeps others' holds.
  std::vector<std::string> add_holds;
  std::vector<std::string> drop_holds;

  bool empty() const { return !status && !note && !agent && !leaf_start && add_holds.empty() && drop_holds.empty(); }
  void apply_to(Session& s) const;
};
// `status` one of kAgentStatuses and `note` at most kMaxNoteBytes of UTF-8
// with no control character; else bad_input naming the value.
void require_presence(const Presence& presence);

// How a slot's work ended, as close is told (--result).
enum class Outcome { success, fail, fork };
std::string_view to_string(Outcome outcome);
// "success", "fail" or "fork"; else bad_input naming it.
Outcome parse_outcome(std::string_view text);

struct CloseOptions {
  Outcome result = Outcome::success;
  bool priority_high = false;  // --priority high: landed ahead of normal ones by land --ready
  bool keep_worktree = false;
  bool no_artifact = false;
  // Why a fail is one, when the closer knows (run: the agent exited 0 with
  // no commit): in the task's result, its task.state event and the close event.
  std::string why;
  ExpectedSession session;
  // The caller is the `swarm run` that holds the slot's run lock. Anyone
  // else's close of a slot a live run keeps is a conflict: its agent still
  // works in the folder, and the run closes it when the agent ends.
  bool by_run = false;
};

struct CloseResult {
  std::optional<SessionEntry> released;  // the record it deleted
  Salvage salvage;
  bool pushed_branch = false;  // swarm/<slot> had commits the hub's lacked (plain git commits): pushed
  bool removed_worktree = false;
  std::vector<std::string> warnings;
};

class SlotLifecycle {
 public:
  // `leases` holds the task leases join takes (their TTL is the session's).
  SlotLifecycle(Workspace workspace, WorkspaceConfig config, SessionStore store, LeaseStore leases, HostIdentity me,
                Clock clock = system_clock());

  // Takes the slot: a record of another host is never touched (foreign_host);
  // a live one of this host only with `force` (else conflict); a stale one of
  // this host is replaced. The record is CAS-written first (so racing joins
  // lose before touching the disk), then the worktree is made or reused; if
  // that fails the record is removed again.
  // A new worktree of a slot whose hub branch is landed starts from the
  // onto branch; with `base`, from that ref (refused for a slot whose
  // worktree is there already).
  // With `ports` (K > 0), the slot also takes a block of K ports of the
  // workspace's range (PortBlocks), kept in the record.
  // A join of a slot whose run lock another process holds (a live `swarm
  // run`: the folder is its agent's) is a conflict naming it.
  JoinResult join(const std::string& slot, const std::string& task, Takeover takeover, std::int64_t leaf_pid,
                  const std::string& base = {}, unsigned ports = 0, Joiner joiner = {});
  // join --next: the most urgent ready task of the queue (then the oldest)
  // whose labels include every one of `labels`, claimed as join --task
  // claims it; a task lost to another claimer moves on to the next. None
  // ready: not_found; with `wait`, watches the queue that long for one.
  JoinResult join_next(const std::string& slot, const std::vector<std::string>& labels,
                       std::chrono::milliseconds wait, Takeover takeover, std::int64_t leaf_pid,
                       const std::string& base = {}, unsigned ports = 0, Joiner joiner = {});
  // The workspace's task queue; nullopt when its bucket does not exist (a
  // workspace older than tasks: task ids are free-form).
  const std::optional<TaskStore>& queue() const;

  // Commits in the slot's worktree, pushes the branch, renews the record (one
  // CAS update with the revision read). Push and renewal failures are warnings.
  // `paths` are relative to the worktree (see path_inside).
  CommitResult commit(const std::string& slot, const std::string& message, const std::vector<std::string>& paths,
                      ExpectedSession session = {});

  // Brings the hub's `onto` branch (empty: the hub's default branch) into
  // the slot's worktree (slot_sync.cc): see Worktree::sync. A fast-forward
  // or merge is pushed and renews the record (failures are warnings); a
  // conflict is left in the worktree, its paths in the result.
  SyncOutcome sync(const std::string& slot, const std::string& onto, ExpectedSession session = {});

  // The same lifecycle, whose requests to NATS take at most `budget` each
  // (a keeper's renewal must end before its session's deadline).
  SlotLifecycle with_budget(std::chrono::milliseconds budget) const;
  // Bumps last_renewed by CAS, and renews the slot's task lease and port
  // block in the same round trip. Returns the new revision; a lease that
  // could not be kept is a warning (the session stands).
  // `presence` is written in the same CAS write.
  std::uint64_t renew(const std::string& slot, std::vector<std::string>* warnings = nullptr,
                      ExpectedSession session = {}, const Presence& presence = {});
  // The session alone, from a record already read (one round trip): on a
  // lost race it rereads and retries only while it is still the same session.
  // `written`, when given, gets the record as written (a reread one's
  // fields included): what the next renewal starts from.
  std::uint64_t renew(const SessionEntry& read, const Presence& presence = {}, SessionEntry* written = nullptr) const;
  // The session, its task lease and its port block in one round trip
  // (kv::Bucket::update_together). `task_lease` empty: read it first.
  // `task_written`, when given, gets the task lease as renewed (nullopt when
  // it was not): a keeper's next renewal needs no read of it (a lease that
  // changed meanwhile fails its CAS, and is read again).
  std::uint64_t renew(const SessionEntry& read, std::optional<LeaseEntry> task_lease,
                      std::vector<std::string>* warnings, const Presence& presence = {},
                      SessionEntry* written = nullptr, std::optional<LeaseEntry>* task_written = nullptr) const;

  // Takes a hold on `patterns` for the slot's session (HoldStore::take), and
  // names it in the session's record (by CAS, while it is the same session),
  // so that renewals keep it and close releases it. A hold the session
  // could not name is given back.
  HoldResult hold(const std::string& slot, const std::vector<std::string>& patterns, HoldKind kind,
                  const std::string& reason, ExpectedSession session = {});
  // Lets go of the slot's holds on `patterns` (a hold left with none is
  // released, one with others narrowed), or of all of them (`patterns`
  // empty). A pattern no hold of the slot names is not_found, before
  // anything is released.
  HoldRelease release_holds(const std::string& slot, const std::vector<std::string>& patterns,
                            ExpectedSession session = {});
  const HoldStore& holds() const { return holds_; }

  // Releases the slot: artifact gate, salvage, CAS delete, then the folder.
  CloseResult close(const std::string& slot, const CloseOptions& options);
  // Whether the slot committed since it was taken up: what close's
  // artifact gate asks of a success (`--no-artifact` aside).
  bool committed_since_taken(const std::string& slot) const;

  // Operator override: CAS-deletes the record whatever its host. Returns it.
  SessionEntry evict(const std::string& slot);

  // The record of `slot` when it is this host's (and, with `session`, that
  // session); not_found, corrupt, foreign_host and conflict errors name the
  // next step.
  SessionEntry read_own(const std::string& slot, ExpectedSession session = {}) const;
  // The slot's worktree (not_found when it has none), and who commits in it.
  Worktree open_worktree(const std::string& slot) const;
  CommitAuthor author_of(const Session& session) const;

  const Workspace& workspace() const { return workspace_; }
  const HubLocation& hub() const { return hub_; }
  const HostIdentity& me() const { return me_; }
  const Journal& journal() const { return journal_; }
  const SessionStore& sessions() const { return store_; }
  const LeaseStore& leases() const { return tasks_.store(); }

 private:
  // Calls write(entry) (on its own copy, which write may change); after a lost
  // race rereads and calls it again only while it is still the same session.
  std::uint64_t same_session_cas(SessionEntry entry, const char* doing,
                                 const std::function<std::uint64_t(SessionEntry&)>& write) const;

  // join's steps (slot_join.cc), each undone by undo_join when a later one fails.
  struct JoinSteps {
    bool task_claimed = false;
    bool task_kept = false;   // the claim kept this slot's own lease: it is the replaced session's too
    bool ports_claimed = false;
    bool ports_kept = false;  // the same for its port block
    std::optional<Task> queued_before;  // the queue's record before this join claimed it
    bool* task_refused = nullptr;       // Joiner::task_refused
    bool queued_only = false;           // Joiner::queued_only
    const std::vector<std::string>* labels = nullptr;  // Joiner::labels
    WorktreeStart resume;                              // where the worktree started (task_start)
  };
  // Runs a step of the join that concerns its task: a conflict it throws
  // marks the join refused because of the task (join_next moves on).
  template <typename Call>
  static void task_step(bool* task_refused, Call&& call) {
    try {
      call();
    } catch (const Error& e) {
      if (e.kind() == Errc::conflict && task_refused != nullptr) *task_refused = true;
      throw;
    }
  }
  // The queue's side of a join (queued_task.cc): a read-only check before
  // any write, the claim of the record by CAS after the task lease, and
  // its undo when a later step fails.
  void require_queued_claimable(const std::string& slot, const std::string& task, const Joiner& joiner) const;
  // Of the working tasks `ids`, those whose claim lapsed: their task lease
  // released or gone, expired, or held for a run of this host that is gone
  // (dead_claim). join --next claims them as it claims ready ones.
  std::set<std::string> lapsed_claims(const std::vector<std::string>& ids) const;
  // Whether `lease` (a task lease) is the claim of a session of this host
  // whose run is gone (by /proc, with its start time): dead at once, not
  // a TTL later.
  bool dead_claim(const LeaseEntry& lease) const;
  // Before a join takes `task`: another slot's dead claim on it is let go
  // (its lease released at that grant), so it is taken over at once.
  void release_dead_claim(const std::string& slot, const std::string& task) const;
  void claim_queued(const JoinResult& result, JoinSteps& done) const;
  void undo_queued_claim(const JoinResult& result, const JoinSteps& done) const;
  // close's side: the slot's working task moves by its result.
  void close_queued(const Session& closed, const std::string& result, const std::string& head,
                    const std::string& why, std::vector<std::string>* warnings) const;
  // A block of `count` ports for the new session (before its record is written).
  // `replacing`: the record this join replaces (its block is kept when it has that size).
  void claim_ports(JoinResult& result, unsigned count, const std::optional<SessionEntry>& replacing,
                   JoinSteps& done) const;
  Session new_session(const std::string& slot, const std::string& task, std::int64_t leaf_pid,
                      std::uint64_t leaf_start) const;
  // Throws unless this host may take over `existing` (corrupt, foreign_host,
  // conflict naming why); returns how it stood.
  // `arrived`: when the read that returned `existing` got its answer.
  State require_takeover(const SessionEntry& existing, std::chrono::steady_clock::time_point arrived,
                         Takeover takeover) const;
  // Writes the record (create, or CAS over a session it may take over).
  // With `ports`, the port block is claimed first (claim_ports), and given
  // back when the record's write fails.
  void write_join_record(JoinResult& result, Takeover takeover, unsigned ports, JoinSteps& done) const;
  // The task lease, the worktree (made or resumed) and the slot's crumbs.
  void set_up_joined_slot(JoinResult& result, JoinSteps& done) const;
  // From inside a handler: undoes `done` and the record, then rethrows,
  // saying what could not be undone.
  [[noreturn]] void undo_join(const JoinResult& result, const JoinSteps& done) const;

  // close's steps (slot_close.cc).
  std::optional<SessionEntry> read_for_close(const std::string& slot, ExpectedSession session) const;
  // --result success: conflict while a merge is in progress in the
  // worktree, or (`need_commit`) unless the slot committed in this run.
  void require_success(const std::string& slot, bool need_commit) const;
  // The history to the hub, before anything is released.
  // Pushes swarm/<slot> as the worktree has it (plain `git commit`s too),
  // fast-forward only. Diverged: a success is refused, else a warning (the
  // commits go to refs/recovery/ with the rest of the history).
  void push_branch(const std::string& slot, Outcome outcome, CloseResult& result) const;
  void salvage_history(const std::string& slot, TimePoint now, CloseResult& result) const;
  // Releases the leases that live with the session `entry` (its task's,
  // its port block, its holds) where the slot still holds them; warnings
  // for those that failed.
  std::vector<std::string> release_leases(const SessionEntry& entry) const;
  void release_record(const std::string& slot, const std::optional<SessionEntry>& entry, CloseResult& result) const;
  // The worktree's files to .swarm/recovery/, then its folder removed.
  void salvage_files_and_remove(const std::string& slot, TimePoint now, CloseResult& result) const;
  // Makes the slot's worktree (from `start`), or opens the one there;
  // `resumed` says which.
  Worktree ensure_worktree(const std::string& slot, bool* resumed, const WorktreeStart& start,
                           WorktreeStarted* started = nullptr) const;
  // One task's work per branch (task_start.cc, adr/0050): where a new
  // worktree of `slot` for `task` starts, from what the journal says its
  // branch holds; and, once the join is done, the parked branch it resumed
  // removed.
  WorktreeStart task_start(const std::string& slot, const std::string& task, const std::string& base) const;
  void forget_resumed(const JoinResult& result, const WorktreeStart& start) const;
  // Whether the slot committed in its current run: the branch moved since
  // session-base, or (a slot joined before session-base existed) it has
  // commits beyond the default branch.
  bool committed_in_this_run(const std::string& slot, const std::optional<Worktree>& worktree) const;
  // commit's side of holds: the guard that compares the paths a commit
  // would change with other live slots' exclusive holds (none when no
  // other slot holds anything exclusively), refusing it under
  // `up --holds refuse`; what it found goes to `held`.
  CommitGuard holds_guard(const SessionEntry& entry, CommitResult& result) const;
  // The renewal's side of holds: for each hold the session names, its
  // renewing write (appended to `writes`, its index in `at`) when it is
  // still the session's and live; the others are said lost and left out
  // of `renewed`'s list.
  struct HoldsRenewal {
    std::vector<LeaseEntry> held;
    std::vector<int> at;
    Steady::time_point arrived{};  // when the read of the holds arrived
  };
  HoldsRenewal renew_holds(const SessionEntry& entry, Session& renewed, std::vector<kv::Bucket::Write>& writes,
                           const std::function<void(const std::string&)>& warn) const;
  // Throws not_bootstrapped naming the hub when it is not there.
  void require_hub() const;
  // The tip of the slot's branch in its worktree, for the journal; nullopt
  // when there is none or it cannot be read.
  std::optional<std::string> branch_head(const std::string& slot) const;
  // Deletes what interrupted removals of the slot left in .swarm/trash/.
  void finish_leftovers(const std::vector<std::string>& leftovers, CloseResult& result) const;
  // Whether something is where the slot's worktree should be; throws
  // bad_input when it is a link (or another user's folder), or one is where
  // its slot folder should be.
  bool has_worktree(const std::string& slot) const;
  // Checks, before anything changes, that the folders the verb may use
  // (.swarm/trash, .swarm/recovery, the slot's folder and worktree) are
  // real folders of this user: a link there is refused (exit 2, naming it)
  // before a record is written or released.
  void require_kept_folders(const std::string& slot) const;
  // join's checks of the slot's folder before it writes: a worktree it
  // could not resume (half salvaged, no git repository), a file in place of
  // the folder (conflict, naming each). The task's are asked after.
  void require_joinable(const std::string& slot) const;
  // Throws filesystem (exit 9) when .swarm/recovery/ takes no new file.
  void require_room_for_salvage(const std::string& slot) const;

  Workspace workspace_;
  WorkspaceConfig config_;
  HubLocation hub_;
  SessionStore store_;
  TaskLeases tasks_;
  PortBlocks ports_;
  HoldStore holds_;
  HostIdentity me_;
  Clock clock_;
  Journal journal_;
  mutable std::optional<std::optional<TaskStore>> queue_;  // opened on first use
};

// A commit message with the trailers of its provenance appended
// (Swarm-Slot, Swarm-Task, Swarm-Session: the session token), after the
// message's own trailer block when it ends with one.
std::string with_provenance(const std::string& message, const Session& session, std::uint64_t token);

// The messages of the contract's refusals.
std::string foreign_message(const std::string& slot, const Session& owner);
std::string not_found_message(const std::string& slot);
// Throws conflict naming the slot's current session when it is not `session`.
void require_session(const SessionEntry& entry, ExpectedSession session);

}  // namespace swarm
