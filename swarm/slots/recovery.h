// Salvage: before a slot's folder is removed, everything in it that exists
// nowhere else is kept. Uncommitted files go, with their relative paths, to
// .swarm/recovery/<slot>-<time>/ (with a MANIFEST); history the hub lacks
// goes to the hub as refs/recovery/<slot>-<time>/...
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "swarm/base/clock.h"
#include "swarm/base/safe_dir.h"
#include "swarm/git/hub_location.h"

namespace swarm {

struct Salvage {
  std::filesystem::path folder;   // empty when no file needed saving
  int files = 0;                  // files kept
  int deleted = 0;                // deletions, listed in the manifest only
  int skipped = 0;                // paths left where they were: a link on the way led out of the folder
  std::string commits_ref;        // the refs/recovery/<slot>-<time> prefix in the hub, or empty
  std::vector<std::string> refs;  // the refs pushed under it
  bool unreadable_repository = false;  // every file was kept, the repository's .git whole
};

// Which parts of a salvage to do, and how.
struct SalvageOptions {
  bool history = true;      // push to the hub what it lacks
  bool files = true;        // keep the uncommitted files (and anything beside the worktree)
  // Move the files into the recovery folder (one rename each; a copy only
  // across filesystems) instead of copying them: only for a folder that is
  // removed right after, by the caller that holds its lock and its record.
  bool move = false;
  // An earlier history step found the repository unreadable: keep every file, .git whole.
  bool keep_whole = false;
};

// Salvages the slot folder `slot_folder` (.swarm/slots/<slot>): its worktree's
// uncommitted files and the history the hub lacks; every file of a worktree
// whose repository cannot be read (its .git whole, as it is); and any other
// file beside the worktree (under beside-wt/). Throws (having removed
// nothing) when anything cannot be kept: the caller must keep the folder.
// The hub must be there: a worktree that cannot push to it counts as unreadable.
// With `options`, only some steps (a close pushes the history before it
// releases the record, and moves the files after). Files are moved or copied
// through descriptors, never through a link: a path whose folder became a
// link since git listed it is left where it is (counted as skipped), and a
// worktree that is a link is refused (bad_input).
Salvage salvage_slot_folder(const SafeDir& slot_folder, const std::string& slot, const HubLocation& hub,
                            const SafeDir& recovery_root, TimePoint now, const SalvageOptions& options = {});

// "<slot>-20261122T100000.123Z": the name a salvage at `now` gives its
// recovery folder and its prefix under refs/recovery/.
std::string recovery_name(const std::string& slot, TimePoint now);

}  // namespace swarm
