// A slot's worktree: a clone of the hub at .swarm/slots/<slot>/wt on branch
// swarm/<slot>. Commits move that branch and are pushed back to the hub.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "swarm/git/backend.h"
#include "swarm/git/hub_location.h"

namespace swarm {

class Hub;

// One uncommitted path, relative to the worktree, with a git-status-like code.
struct Change {
  std::string path;
  char code = '?';  // 'A' added, 'M' modified, 'D' deleted, 'R' renamed, 'T' type change, '?' untracked, '!' ignored
};

struct CommitAuthor {
  std::string name;
  std::string email;
};

class Worktree {
 public:
  // Clones the hub into `path` and checks out swarm/<slot>: the hub's branch
  // of that name when it exists (earlier work of the slot), else a new branch
  // at the tip of the hub's default branch.
  // The hub may be a URL (a network hub): then it is probed and cloned over the network.
  // A slot whose hub branch is landed (reachable from the default branch)
  // starts from the default branch's tip instead; with `start.base`, from
  // that ref, the hub's branch moved there (an unlanded one kept under
  // `start.recovery_prefix` first).
  static Worktree create(const HubLocation& hub, const std::filesystem::path& path, const std::string& slot,
                         const WorktreeStart& start = {}, WorktreeStarted* started = nullptr);
  static Worktree create(const Hub& hub, const std::filesystem::path& path, const std::string& slot);

  // Opens an existing worktree, whose pushes go to `hub` (the workspace's,
  // whatever the clone's own remotes say). Throws not_found when `path` is
  // not a git repository.
  static Worktree open(const std::filesystem::path& path, const std::string& slot, const HubLocation& hub);

  const std::filesystem::path& path() const { return path_; }
  std::string branch() const { return "swarm/" + slot_; }

  // Commits `paths` (relative to the worktree; empty: every change, untracked
  // included, ignored files not) with the branch tip as parent, and moves the
  // branch. Returns the new commit, or nullopt when there is nothing to commit.
  // `guard` is told the paths the commit would change first (CommitGuard).
  std::optional<std::string> commit(const std::string& message, const std::vector<std::string>& paths,
                                    const CommitAuthor& author, const CommitGuard& guard = {}) {
    return repo_->commit(message, paths, author, guard);
  }

  // Pushes swarm/<slot> to the hub. Throws when the push fails or is rejected.
  void push() { repo_->push(); }

  // Everything the hub lacks that this clone can reach: commits of any local
  // branch (swarm/<slot> or another), tags, the stash and its older entries,
  // a detached HEAD and the commits in HEAD's reflog. Pushed as new refs under
  // `prefix` (refs/recovery/<slot>-<time>; -2, -3... when the hub has that
  // prefix already), so nothing can refuse them. nullopt when the hub had it
  // all. Throws when the push fails.
  std::optional<PreservedHistory> preserve_unpushed(const std::string& prefix) {
    return repo_->preserve_unpushed(prefix);
  }

  // Every uncommitted change, untracked and ignored files included (an
  // ignored folder as one entry, "dir/").
  std::vector<Change> changes() const { return repo_->changes(); }

  // Whether swarm/<slot> has commits that the hub's default branch (as cloned) lacks.
  bool has_commits_beyond_default() const { return repo_->has_commits_beyond_default(); }

  // The commit at the tip of swarm/<slot> (40 hex digits), or nullopt.
  std::optional<std::string> branch_tip() const { return repo_->branch_tip(); }

  // Whether the hub's swarm/<slot> lacks commits of this clone's: it is
  // not there (and the branch has commits of its own), or behind, or apart
  // (one listing of the hub, whatever this clone remembers pushing).
  bool hub_lacks_branch() { return repo_->hub_lacks_branch(); }

  // Brings the hub's `onto` branch into swarm/<slot>: a fast-forward, a
  // clean merge committed with both parents (`message`), or the merge left
  // in the worktree with its conflicts (SyncResult::conflicts) for the
  // agent to resolve and commit. Conflict (exit 3) when a merge is in
  // progress already or tracked files have uncommitted changes.
  SyncResult sync(const std::string& onto, const std::string& message, const CommitAuthor& author) {
    return repo_->sync(onto, message, author);
  }
  // Whether a merge is in progress (MERGE_HEAD): commit() finishes it.
  bool merging() const { return repo_->merging(); }

 private:
  Worktree(std::unique_ptr<WorktreeBackend> repo, std::filesystem::path path, std::string slot)
      : repo_(std::move(repo)), path_(std::move(path)), slot_(std::move(slot)) {}

  std::unique_ptr<WorktreeBackend> repo_;
  std::filesystem::path path_;
  std::string slot_;
};

// The path, relative to `worktree`, that `user_path` names (relative paths are
// relative to `cwd`). Throws bad_input when it lies outside the worktree,
// including through a symlink, or inside its .git folder.
std::string path_inside(const std::filesystem::path& worktree, const std::filesystem::path& cwd,
                        const std::string& user_path);

}  // namespace swarm
