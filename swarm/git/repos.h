// The libgit2 implementations of the hub and a worktree, inside the git module.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "swarm/git/backend.h"
#include "swarm/git/handles.h"

namespace swarm::git {

class HubRepo : public HubBackend {
 public:
  explicit HubRepo(RepositoryPtr repo);
  static std::unique_ptr<HubRepo> create(const std::filesystem::path& path, const std::filesystem::path& source);
  static std::unique_ptr<HubRepo> open(const std::filesystem::path& path);

  std::string default_branch() const override;
  std::optional<std::string> branch_tip(const std::string& branch) const override;
  bool has_commits_beyond_default(const std::string& branch) const override;

 private:
  RepositoryPtr repo_;
};

// A hub reached over the network: what one ls-remote said of its refs.
class RemoteHubRepo : public HubBackend {
 public:
  using Refs = std::vector<std::pair<std::string, git_oid>>;
  RemoteHubRepo(std::string url, Refs refs, std::string head_branch);
  static std::unique_ptr<RemoteHubRepo> open(const std::string& url);

  std::string default_branch() const override;
  std::optional<std::string> branch_tip(const std::string& branch) const override;
  // Fetches the two branches into a scratch repository to compare them.
  bool has_commits_beyond_default(const std::string& branch) const override;

 private:
  std::optional<git_oid> tip(const std::string& branch) const;
  std::string url_;
  Refs refs_;
  std::string head_branch_;  // what the hub's HEAD names, when it says
};

// The hub at `hub`, local (HubRepo) or over the network (RemoteHubRepo).
std::unique_ptr<HubBackend> open_any_hub(const std::string& hub);
// Writes `tree` into the empty worktree of `repo` and its index, file by
// file, when no attribute or setting could change a file (plain_checkout.cc).
// false: it wrote nothing, and libgit2's checkout must do it.
bool write_tree_plainly(git_repository* repo, git_tree* tree);
// Why `tree` cannot be checked out (tree_check.cc): its first path git
// refuses to write, that is in its folder twice, has an unknown mode or an
// object the repository lacks; nullopt when it can be. Folders the same in
// `base` (null: none) are not walked. commit_tree_problem: the same for a
// commit's tree against `base`'s (a commit id; null: none).
std::optional<std::string> tree_problem(git_repository* repo, const git_tree* tree, const git_tree* base);
std::optional<std::string> commit_tree_problem(git_repository* repo, const git_oid& commit, const git_oid* base);
// See GitBackend::list_refs and delete_refs (hub_refs.cc).
std::vector<std::pair<std::string, std::string>> list_refs(const std::string& hub, const std::string& prefix);
std::vector<std::string> delete_refs(const std::string& hub, const std::vector<std::pair<std::string, std::string>>& refs);
// See GitBackend::read_hub_mark and mark_hub (hub_refs.cc).
std::optional<std::string> read_hub_mark(const std::string& hub, const std::string& ref);
std::string mark_hub(const std::string& hub, const std::string& ref, const std::string& content);
// See GitBackend::open_land (land_repo.cc).
std::unique_ptr<LandBackend> open_land(const std::string& hub, const std::filesystem::path& cache);
// The paths `index` (a merge's) holds in conflict, in index order.
std::vector<std::string> conflict_paths(git_index* index);
// The tree of commit `oid`; null for a null oid (the empty tree).
TreePtr tree_of(git_repository* repo, const git_oid* oid);
// The paths added, changed or removed from tree `from` to tree `to` (either
// null: no tree), or between two commits' trees (`from` null: none); sorted,
// unique (tree_diff.cc).
std::vector<std::string> changed_paths(git_repository* repo, const git_tree* from, const git_tree* to);
std::vector<std::string> changed_paths(git_repository* repo, const git_oid* from, const git_oid& to);
// The diff of commit `to` against `from` (null: nothing), files and patch (tree_diff.cc).
BranchDiff diff_of(git_repository* repo, const git_oid* from, const git_oid& to);
// See LandBackend::foresee (land_foresee.cc): `branches` by name and tip.
std::vector<Foreseen> foresee_conflicts(git_repository* repo, const std::string& onto, const git_oid& onto_tip,
                                        const std::vector<std::pair<std::string, git_oid>>& branches,
                                        const std::string& focus);
// See GitBackend::repack_hub.
RepackResult repack_hub(const std::filesystem::path& hub, int pack_limit);
// See GitBackend::prepare_hub.
std::unique_ptr<HubBackend> prepare_hub(const std::string& hub, const std::filesystem::path& source,
                                        const std::filesystem::path& scratch, bool* seeded);
// The hub's default branch among `branches` (short names): the one HEAD
// names (`head`, empty when the hub's HEAD names no branch it has), else
// main, else master, else the only branch outside swarm/ (a hub seeded by
// `swarm up` with another initial branch than its HEAD's). Empty: none.
std::string pick_default_branch(const std::string& head, const std::vector<std::string>& branches);
// Where a clone of the hub starts slots: the commit of origin's default
// branch (pick_default_branch over origin/*). nullopt: none.
std::optional<git_oid> default_start(git_repository* clone);

// `commit` checked out in a land's checkout `folder` (in .swarm/land/),
// reading objects from `objects`; whatever a check left there is never
// written through (land_checkout.cc). Conflict when the tree cannot be
// checked out even into a checkout made from nothing.
void check_out_land(const std::filesystem::path& folder, const std::filesystem::path& objects, const git_oid& commit);

// The conflicts of a merge in progress the agent has not resolved: text
// files that still hold marker lines, and conflicts no marker can show
// (binary, a mode, a side's deletion), which wait for git add or git rm.
struct Unresolved {
  std::vector<std::string> with_markers;
  std::vector<std::string> without_markers;
};

class WorktreeRepo : public WorktreeBackend {
 public:
  // `hub`: the workspace's hub (config.json's), where every push and fetch
  // goes, whatever the clone's own remotes say.
  WorktreeRepo(RepositoryPtr repo, std::filesystem::path path, std::string slot, std::string hub);
  static std::unique_ptr<WorktreeRepo> create(const std::string& hub, const std::filesystem::path& path,
                                              const std::string& slot, const WorktreeStart& start = {},
                                              WorktreeStarted* started = nullptr);
  static std::unique_ptr<WorktreeRepo> open(const std::filesystem::path& path, const std::string& slot,
                                            const std::string& hub);

  std::optional<std::string> commit(const std::string& message, const std::vector<std::string>& paths,
                                    const CommitAuthor& author, const CommitGuard& guard) override;
  void push() override;
  std::optional<PreservedHistory> preserve_unpushed(const std::string& prefix) override;
  std::vector<Change> changes() const override;
  bool has_commits_beyond_default() const override;
  std::optional<std::string> branch_tip() const override;
  bool hub_lacks_branch() override;
  // worktree_merge.cc: the onto branch brought home, and the merge it may leave.
  SyncResult sync(const std::string& onto, const std::string& message, const CommitAuthor& author) override;
  bool merging() const override;

 private:
  std::string branch_name() const { return "swarm/" + slot_; }
  void push_branch_to(const std::string& target_ref);
  // Records that the hub has `branch` at the local tip (refs/remotes/origin/...):
  // pushes go to an anonymous remote, which libgit2 keeps no tracking ref for.
  void remember_pushed(const std::string& branch) const;
  void require_on_branch() const;
  // Each path is on disk, staged, or in the tip (a deletion to commit).
  void require_paths_exist(git_index* index, git_tree* tip, const std::vector<std::string>& paths) const;
  // commit()'s second half: stage, write the tree, commit when it changed,
  // and leave the index as the user will see it. `named` empty: everything.
  std::optional<std::string> commit_index(git_index* index, git_commit* parent, git_tree* parent_tree,
                                          const std::string& message, const std::vector<std::string>& named,
                                          const CommitAuthor& author, const CommitGuard& guard);
  // Stages `paths` (every change when empty) into `index`.
  void stage(git_index* index, const std::vector<std::string>& paths) const;
  // A commit of `tree` on the branch with `parents` (the branch's tip first:
  // libgit2 refuses if the branch moved meanwhile, so no commit is lost).
  std::string write_commit(git_tree* tree, const std::vector<const git_commit*>& parents, const std::string& message,
                           const CommitAuthor& author);
  // The merge in progress committed with every MERGE_HEAD as a parent;
  // conflict naming the paths that still hold conflict markers.
  // `restage`: the worktree's changes staged first (the agent's resolution);
  // false: the index as the merge left it (sync's clean merge).
  std::optional<std::string> commit_merge(const std::string& message, const std::vector<std::string>& paths,
                                          const CommitAuthor& author, bool restage = true);
  // The conflicted paths of `index` the agent has not resolved yet.
  Unresolved unresolved(git_index* index) const;
  // What MERGE_HEAD names, each a commit of the clone; conflict naming the
  // file when it cannot be read or names what is no commit.
  std::vector<git_oid> merge_heads() const;
  // The hub's `onto` fetched into refs/remotes/origin/<onto>; its tip.
  git_oid fetch_onto(const std::string& onto);

  RepositoryPtr repo_;
  std::filesystem::path path_;
  std::string slot_;
  std::string hub_;
};

}  // namespace swarm::git
