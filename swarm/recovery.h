// Salvage: before a worktree is removed, its uncommitted files are copied,
// with their relative paths, to .swarm/recovery/<slot>-<time>/, so removing a
// slot never loses work.
#pragma once

#include <filesystem>
#include <string>

#include "swarm/clock.h"
#include "swarm/worktree.h"

namespace swarm {

struct Salvage {
  std::filesystem::path folder;  // empty when there was nothing to salvage
  int files = 0;                 // copied files
  int deleted = 0;               // deletions, listed in the manifest only
};

// Copies the uncommitted files of `worktree` (untracked ones included) into a
// new folder under `recovery_root`, with a MANIFEST listing each change.
// Throws (and leaves the worktree alone) when a copy fails.
Salvage salvage_uncommitted(const Worktree& worktree, const std::string& slot,
                            const std::filesystem::path& recovery_root, TimePoint now);

// Salvages a folder that may not be a readable git worktree: every file but
// .git/ is copied. For orphaned slot folders whose repository is broken.
Salvage salvage_everything(const std::filesystem::path& folder, const std::string& slot,
                           const std::filesystem::path& recovery_root, TimePoint now);

}  // namespace swarm
