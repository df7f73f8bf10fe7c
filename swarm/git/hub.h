// The hub: the workspace's git repository that every slot clones and pushes
// its branch swarm/<slot> to. A bare repository in .swarm/hub.git by default,
// or any other folder or URL given to `swarm up --hub` (adr/0015): a remote
// hub is shared by every host of the workspace.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "swarm/git/backend.h"
#include "swarm/git/hub_location.h"

namespace swarm {

// A local hub with more packs than this is repacked (git gc --auto's gc.autoPackLimit).
inline constexpr int kHubPackLimit = 50;

class Hub {
 public:
  // Creates a bare hub in the local folder `path`, seeded from `source`'s
  // HEAD (its commits and branch name) when `source` is a git repository with
  // a commit, else with one empty initial commit on "main". Leaves `source`
  // untouched.
  static Hub create(const std::filesystem::path& path, const std::filesystem::path& source);

  // Opens the hub: a local one's repository, a remote one's refs (one
  // ls-remote). Throws not_bootstrapped when a local hub is missing or
  // broken, unavailable when a remote one cannot be reached, bad_input when
  // it refuses the credentials.
  static Hub open(const HubLocation& where);
  static Hub open(const std::string& where) { return open(parse_hub_location(where, std::filesystem::current_path())); }

  // The hub at `where`, made ready for `swarm up`: a missing local one is
  // created, an empty remote one is seeded (as create does, built in the
  // local folder `scratch`). `created` says whether it was either.
  static Hub ensure(const HubLocation& where, const std::filesystem::path& source, const std::filesystem::path& scratch,
                    bool* created);

  // Throws bad_input naming `path` when no hub can be there: it is a file, or
  // lies inside one, or is a folder with files but no bare repository (a
  // repository with a worktree included). A missing or empty folder, or a
  // bare repository, is fine. Reads only the filesystem.
  static void require_can_be_at(const std::filesystem::path& path);

  // The packs in the local hub at `path` that a repack would take
  // (repackable_packs): a directory listing, no git.
  static int pack_count(const std::filesystem::path& path);
  // Packs the local hub at `path` into one pack when it has more than
  // `pack_limit` (adr/0016); every object is kept. Another repack at it: busy.
  static RepackResult repack(const std::filesystem::path& path, int pack_limit = kHubPackLimit) {
    return git_backend().repack_hub(path, pack_limit);
  }

  const HubLocation& location() const { return location_; }
  // Adds remote `swarm` for the hub at `where` to the git checkout `root`
  // (unless it has one by that name, or is no checkout): `git fetch swarm`
  // then brings every slot branch home. Its URL never holds a password.
  // Returns whether it added it.
  static bool add_remote_to(const std::filesystem::path& root, const HubLocation& where);
  // The workspace the hub at `where` is marked as (refs/swarm/workspace:
  // its name, and an id no other workspace has; nullopt: none), and its
  // marking: what another host's `up` of this hub reads to join the same
  // workspace. A hub marked already keeps its mark: mark_workspace returns
  // the mark it holds. A mark swarm did not write has an empty name.
  struct WorkspaceMark {
    std::string name;
    std::string id;
  };
  static std::optional<WorkspaceMark> workspace_mark(const HubLocation& where);
  static WorkspaceMark mark_workspace(const HubLocation& where, const WorkspaceMark& mark);
  // Whether the hub has slot branches (swarm/*): a workspace works on it.
  static bool has_slot_branches(const HubLocation& where);
  // Whether it has any branch (an empty one is seeded by `up` first).
  static bool has_branches(const HubLocation& where);
  // The URL sessions record for this hub (hub_url).
  std::string url() const { return location_.session_url(); }
  // Whether `path` looks like a hub (a bare repository's HEAD is there),
  // without loading git: cheap enough for every join, winner or not.
  static bool exists_at(const std::filesystem::path& path);
  // The branch HEAD names, e.g. "main".
  std::string default_branch() const { return repo_->default_branch(); }
  // The commit at the tip of `branch` (40 hex digits), or nullopt.
  std::optional<std::string> branch_tip(const std::string& branch) const { return repo_->branch_tip(branch); }
  // Whether `branch` has commits that the default branch does not.
  bool has_commits_beyond_default(const std::string& branch) const {
    return repo_->has_commits_beyond_default(branch);
  }

 private:
  Hub(std::unique_ptr<HubBackend> repo, HubLocation location)
      : repo_(std::move(repo)), location_(std::move(location)) {}
  std::unique_ptr<HubBackend> repo_;
  HubLocation location_;
};

}  // namespace swarm
