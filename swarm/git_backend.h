// The seam between swarm and libgit2. libgit2 and what it pulls in (ssh2,
// krb5, mbedtls, pcre2, ...) cost every process milliseconds of dynamic
// linking, and most verbs (status, renew, evict) never touch git. So git work
// lives in a module, libswarm_git.so, loaded on first use (adr/0008).
#pragma once

#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <string>
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

class HubBackend {
 public:
  virtual ~HubBackend() = default;
  virtual std::string default_branch() const = 0;
  virtual std::optional<std::string> branch_tip(const std::string& branch) const = 0;
  virtual bool has_commits_beyond_default(const std::string& branch) const = 0;
};

class WorktreeBackend {
 public:
  virtual ~WorktreeBackend() = default;
  virtual std::optional<std::string> commit(const std::string& message, const std::vector<std::string>& paths,
                                            const CommitAuthor& author) = 0;
  virtual void push() = 0;
  virtual std::optional<PreservedHistory> preserve_unpushed(const std::string& prefix) = 0;
  virtual std::vector<Change> changes() const = 0;
  virtual bool has_commits_beyond_default() const = 0;
  virtual std::optional<std::string> branch_tip() const = 0;
  virtual bool unpushed() const = 0;
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
                                                           const std::string& slot) = 0;
  // The worktree at `path`; `hub` (a path or a URL: config.json's) is where
  // its pushes go, whatever the clone's own remotes say.
  virtual std::unique_ptr<WorktreeBackend> open_worktree(const std::filesystem::path& path, const std::string& slot,
                                                         const std::string& hub) = 0;
  // Adds remote `name` for `url` to the git checkout whose top folder is
  // `checkout`, unless it has a remote by that name already (left as it is)
  // or is no checkout (nor a bare repository): returns whether it added it.
  virtual bool add_remote(const std::filesystem::path& checkout, const std::string& name, const std::string& url) = 0;
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

// The symbol the module exports, and its version.
inline constexpr const char* kGitBackendSymbol = "swarm_git_backend_v4";

}  // namespace swarm
