// The seam between swarm and libgit2. libgit2 and what it pulls in (ssh2,
// krb5, mbedtls, pcre2, ...) cost every process milliseconds of dynamic
// linking, and most verbs (status, renew, evict) never touch git. So git work
// lives in a module, libswarm_git.so, loaded on first use (adr/0008).
#pragma once

#include <filesystem>
#include <future>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <cstdint>
#include <vector>

namespace swarm {

struct Change;
struct CommitAuthor;

// What a salvage pushed to the hub: every ref under one new prefix.
struct PreservedHistory {
  std::string prefix;             // refs/recovery/<slot>-<time>, with -2, -3... when taken
  std::vector<std::string> refs;  // the full names pushed under it
};

// What a repack of a hub did.
struct RepackResult {
  bool busy = false;      // another repack of the hub was at it: nothing done
  int packs_before = 0;
  int packs_after = 0;
  long objects = 0;       // in the new pack; 0 when none was written
};

// Where a new clone starts its slot's branch (see Worktree::create).
struct WorktreeStart {
  std::string base;             // --base REF: a hub branch, tag or commit; empty: the default rules
  std::string recovery_prefix;  // where an unlanded branch that base replaces is kept first
  // The slot takes up another task than the one its branch holds (adr/0050):
  // the work starts from `resume` (a branch of the hub: this task's parked
  // head, swarm/<slot>.<key>) when the hub has it, else from the onto
  // branch. An unlanded branch is kept first: at `park_as` when its tip is
  // `park_if_at` (the head its task was closed at, as done), else under
  // recovery_prefix.
  bool other_task = false;
  std::string park_as;
  std::string park_if_at;
  std::string resume;
};

// What the clone started from.
struct WorktreeStarted {
  std::string from;       // "branch" (the slot's own), "onto" (its branch was landed, or it had none), "base",
                          // "parked" (the task's parked head, WorktreeStart::resume)
  std::string kept_ref;   // the recovery ref the replaced branch was pushed to, or empty
  std::string parked;     // the branch the slot's unlanded branch was parked at (WorktreeStart::park_as), or empty
  std::string resumed_id; // "parked": the commit the resumed branch was at (its removal is fenced on it)
};

class HubBackend {
 public:
  virtual ~HubBackend() = default;
  virtual std::string default_branch() const = 0;
  virtual std::optional<std::string> branch_tip(const std::string& branch) const = 0;
  virtual bool has_commits_beyond_default(const std::string& branch) const = 0;
};

// What `swarm sync` did to a worktree.
struct SyncResult {
  std::string how;                     // up-to-date, fast-forward, merge, conflict
  std::string from;                    // the branch's tip before
  std::string to;                      // and after (== from unless it moved)
  std::vector<std::string> conflicts;  // conflict: the paths left for the agent
};

// Told the paths a commit would change (sorted) before it is written: a
// throw refuses the commit, and nothing of the worktree, its index or its
// branch has changed.
using CommitGuard = std::function<void(const std::vector<std::string>& paths)>;

class WorktreeBackend {
 public:
  virtual ~WorktreeBackend() = default;
  // A merge in progress is finished without `guard` (its paths are the
  // merged branch's, not the slot's own changes).
  virtual std::optional<std::string> commit(const std::string& message, const std::vector<std::string>& paths,
                                            const CommitAuthor& author, const CommitGuard& guard) = 0;
  virtual void push() = 0;
  virtual std::optional<PreservedHistory> preserve_unpushed(const std::string& prefix) = 0;
  virtual std::vector<Change> changes() const = 0;
  virtual bool has_commits_beyond_default() const = 0;
  virtual std::optional<std::string> branch_tip() const = 0;
  virtual bool hub_lacks_branch() = 0;
  virtual SyncResult sync(const std::string& onto, const std::string& message, const CommitAuthor& author) = 0;
  virtual bool merging() const = 0;
};

// A slot branch of the hub, against the onto branch.
struct BranchInfo {
  std::string slot;               // the name after swarm/
  std::string head;               // 40 hex digits
  std::size_t ahead = 0;          // commits of the branch the onto branch lacks
  bool landed = false;            // its head is reachable from the onto branch's tip
  std::int64_t committed_at = 0;  // its head's committer time, Unix seconds
};

// How a slot branch would land on the onto branch as it is now.
struct MergePlan {
  enum class Kind { landed, fast_forward, merge, conflict };
  Kind kind = Kind::landed;
  std::string from;                    // the onto branch's tip it was made against
  std::string to;                      // what the onto branch would move to
  std::vector<std::string> conflicts;  // the paths in conflict (Kind::conflict)
  std::string head;                    // the branch's tip it was made of
};

// What a branch changed since its merge base with the onto branch: what a
// review approves (`swarm review show`).
struct BranchDiff {
  std::string base;  // the merge base ("" when they share no history)
  struct File {
    std::string path;
    std::size_t added = 0;
    std::size_t removed = 0;
    bool binary = false;
  };
  std::vector<File> files;
  std::string patch;  // unified, as git diff prints it (raw bytes of the files)
};

// A slot branch's foreseen conflict with another branch (another slot's
// unlanded branch, swarm/<name>, or the onto branch): the paths both changed
// that an in-memory merge of the two leaves in conflict.
struct Overlap {
  std::string with;                // a branch name: swarm/<slot>, or the onto branch
  std::vector<std::string> paths;  // sorted
};

// The conflicts foreseen for one branch.
struct Foreseen {
  std::string branch;              // swarm/<slot>
  std::vector<Overlap> overlaps;   // by `with`
};

// The hub as landing uses it: a local hub is worked on in place (merges
// written into it, its branch moved by a compare-and-swap of the ref); a
// network hub through a cache repository in the workspace (fetched, merged
// there, and the onto branch moved by a fast-forward push that the hub's
// receive-pack checks against the tip it had). A check runs in a checkout
// that is kept between lands.
class LandBackend {
 public:
  virtual ~LandBackend() = default;
  virtual std::string default_branch() = 0;
  // A network hub's branches fetched into the cache (nothing for a local hub).
  virtual void refresh() = 0;
  virtual std::optional<std::string> tip(const std::string& branch) = 0;
  // Every swarm/* branch, against `onto`.
  virtual std::vector<BranchInfo> slot_branches(const std::string& onto) = 0;
  // How `branch` lands on `onto` now: a merge commit (with `message`, by
  // `author`) is written but moves no branch.
  virtual MergePlan plan(const std::string& onto, const std::string& branch, const std::string& message,
                         const CommitAuthor& author) = 0;
  // As plan, on the commit `from` (a batch's candidate) instead of a branch's tip.
  virtual MergePlan plan_on(const std::string& from, const std::string& branch, const std::string& message,
                            const CommitAuthor& author) = 0;
  // For each of `branches` (full names: swarm/<slot>, unlanded), the
  // other branches among them and `onto` it would conflict with (adr/0028).
  // Only pairs whose changes since their base on `onto` share a path are
  // merged. `focus` (a name among `branches`): only its pairs, its row only.
  virtual std::vector<Foreseen> foresee(const std::string& onto, const std::vector<std::string>& branches,
                                        const std::string& focus) = 0;
  // `commit` checked out in `folder` (a repository made there on first use,
  // reading the objects where merges are written; files of earlier lands
  // that it lacks removed, ignored ones kept).
  virtual void check_out(const std::string& commit, const std::filesystem::path& folder) = 0;
  // Why `commit`'s tree cannot be checked out (see tree_problem), walking
  // only what differs from `base`'s tree (a commit; "" for none); nullopt
  // when it can be.
  virtual std::optional<std::string> unusable(const std::string& commit, const std::string& base) = 0;
  // What `branch` changed since its merge base with `onto`, as a patch.
  virtual BranchDiff diff(const std::string& onto, const std::string& branch) = 0;
  // The paths `branch` changed since its merge base with `onto` (all of
  // its tree when they share no history), sorted.
  virtual std::vector<std::string> branch_changes(const std::string& onto, const std::string& branch) = 0;
  // Moves `onto` from `from` to `to`, only if it is still at `from`: false
  // when it moved meanwhile (nothing changed).
  virtual bool advance(const std::string& onto, const std::string& from, const std::string& to) = 0;
};

class GitBackend {
 public:
  virtual ~GitBackend() = default;
  // A new bare hub in the local folder `path`, seeded from `source`.
  virtual std::unique_ptr<HubBackend> create_hub(const std::filesystem::path& path,
                                                 const std::filesystem::path& source) = 0;
  // The hub at `hub`: a local path, or a URL (one ls-remote, kept).
  virtual std::unique_ptr<HubBackend> open_hub(const std::string& hub) = 0;
  // Makes the hub at `hub` (a URL, or a local bare repository) ready for
  // slots and returns it opened: this host may push to it (exit 2
  // otherwise), and a hub with no branch is seeded as create_hub would, its
  // commits built in the local folder `scratch` (made and removed here) and
  // pushed. `seeded` says whether this call seeded it (false: it had
  // branches, or another host seeded it first).
  virtual std::unique_ptr<HubBackend> prepare_hub(const std::string& hub, const std::filesystem::path& source,
                                                  const std::filesystem::path& scratch, bool* seeded) = 0;
  // Packs every object of the local hub at `path` into one pack and removes
  // the packs it replaces, when it has more than `pack_limit` of them.
  virtual RepackResult repack_hub(const std::filesystem::path& path, int pack_limit) = 0;
  // Clones `hub` (a path or a URL) into `path`, on branch swarm/<slot>.
  virtual std::unique_ptr<WorktreeBackend> create_worktree(const std::string& hub, const std::filesystem::path& path,
                                                           const std::string& slot, const WorktreeStart& start,
                                                           WorktreeStarted* started) = 0;
  // The worktree at `path`; `hub` (a path or a URL: config.json's) is where
  // its pushes go, whatever the clone's own remotes say.
  virtual std::unique_ptr<WorktreeBackend> open_worktree(const std::filesystem::path& path, const std::string& slot,
                                                         const std::string& hub) = 0;
  // Adds remote `name` for `url` to the git checkout whose top folder is
  // `checkout`, unless it has a remote by that name already (left as it is)
  // or is no checkout (nor a bare repository): returns whether it added it.
  virtual bool add_remote(const std::filesystem::path& checkout, const std::string& name, const std::string& url) = 0;
  // The hub's refs under `prefix` ("refs/recovery/"), full names with their ids.
  virtual std::vector<std::pair<std::string, std::string>> list_refs(const std::string& hub, const std::string& prefix) = 0;
  // Deletes each of `refs` from the hub, only while it still points at the
  // id listed with it (a ref written again meanwhile stays). Returns those deleted.
  // A mark the hub keeps for every host that uses it (the workspace's name,
  // refs/swarm/workspace): `ref` naming a commit (no parent, the empty
  // tree) whose message is the text, made once, never moved. read_hub_mark: its text, nullopt when the hub has none.
  // mark_hub: makes it hold `content` unless the ref is there already (left
  // as it is: a host that got there first wins); returns the text it holds.
  virtual std::optional<std::string> read_hub_mark(const std::string& hub, const std::string& ref) = 0;
  virtual std::string mark_hub(const std::string& hub, const std::string& ref, const std::string& content) = 0;
  virtual std::vector<std::string> delete_refs(const std::string& hub,
                                               const std::vector<std::pair<std::string, std::string>>& refs) = 0;
  // Landing on the hub at `hub`: `cache` is where a network hub's objects
  // are kept (a bare repository, made on first use; its parent exists).
  virtual std::unique_ptr<LandBackend> open_land(const std::string& hub, const std::filesystem::path& cache) = 0;
};

// The backend, loading libswarm_git.so (next to the executable, else where
// the build put it) on first use. Throws swarm::Error(internal) naming the
// paths tried when it cannot be loaded.
GitBackend& git_backend();

// Starts loading the backend on another thread and returns at once. A verb
// that will need git calls this first, so the load overlaps its NATS round
// trips: libgit2's own init parses the system's CA bundle (~9 ms) even for a
// file:// hub. The future is ready when the load is done (its error, if any,
// comes again from git_backend()); destroying it waits for the thread.
std::future<void> prefetch_git_backend();

// How the module reads the environment ($SWARM_HUB_*, $SWARM_SSH_KEY): the
// program's own lookup, which also knows the credentials it took out of its
// environment (swarm/base/process_secrets.h). The module has no other way
// to them: it sees none of the program's symbols.
using EnvironmentLookup = std::optional<std::string> (*)(const char* name);

// The symbol the module exports (GitBackend* (EnvironmentLookup)), and its version.
inline constexpr const char* kGitBackendSymbol = "swarm_git_backend_v10";

}  // namespace swarm
