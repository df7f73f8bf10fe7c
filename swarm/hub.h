// The hub: the workspace's bare git repository (.swarm/hub.git). Every slot's
// worktree is a clone of it and pushes its branch swarm/<slot> back to it.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "swarm/git_backend.h"

namespace swarm {

class Hub {
 public:
  // Creates a bare hub at `path`, seeded from `source`'s HEAD (its commits and
  // branch name) when `source` is a git repository with a commit, else with
  // one empty initial commit on "main". Leaves `source` untouched.
  static Hub create(const std::filesystem::path& path, const std::filesystem::path& source);

  // Opens an existing hub. Throws not_bootstrapped when it is missing or broken.
  static Hub open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  std::string url() const { return url_of(path_); }
  // The URL sessions record for the hub at `path` (hub_url): of its canonical
  // path, so every verb and doctor compare the same text.
  static std::string url_of(const std::filesystem::path& path) {
    return "file://" + std::filesystem::weakly_canonical(path).string();
  }
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
  Hub(std::unique_ptr<HubBackend> repo, std::filesystem::path path) : repo_(std::move(repo)), path_(std::move(path)) {}
  std::unique_ptr<HubBackend> repo_;
  std::filesystem::path path_;
};

}  // namespace swarm
