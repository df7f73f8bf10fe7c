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
  std::filesystem::path folder;  // empty when there was no uncommitted file
  int files = 0;                 // copied files
  int deleted = 0;               // deletions, listed in the manifest only
  std::string commits_ref;       // hub ref holding commits that were never pushed, or empty
};

// Everything a worktree holds that the hub may not: its uncommitted files
// (untracked ones included) are copied into a new folder under
// `recovery_root` with a MANIFEST, and commits the hub lacks are pushed to the
// hub as refs/recovery/<slot>-<time>. Throws (having removed nothing) when
// either fails: the caller must then keep the worktree.
Salvage salvage_worktree(Worktree& worktree, const std::string& slot, const std::filesystem::path& recovery_root,
                         TimePoint now);

// Salvages a folder that may not be a readable git worktree: every file is
// copied, .git/ included (whole). For slot folders whose repository is broken.
Salvage salvage_everything(const std::filesystem::path& folder, const std::string& slot,
                           const std::filesystem::path& recovery_root, TimePoint now);

}  // namespace swarm
