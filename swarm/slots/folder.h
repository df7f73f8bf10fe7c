// A slot's folder on this host, .swarm/slots/<slot>/: local work on it is
// exclusive (join making or reusing the worktree, commit, close and doctor
// salvaging and removing it each hold the slot's lock), and removing it
// never loses work and can always be finished (adr/0009).
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "swarm/base/clock.h"
#include "swarm/base/file_lock.h"
#include "swarm/slots/recovery.h"
#include "swarm/workspace/workspace.h"

namespace swarm {

// How long a verb waits for another swarm process of this host to finish
// with a slot's folder: a salvage of a very large worktree takes a while.
inline constexpr std::chrono::seconds kSlotLockWait{120};

// Takes the slot's lock, waiting up to kSlotLockWait (and saying on stderr
// whom it waits for). Throws conflict naming the holder when the wait runs out.
FileLock lock_slot(const Workspace& ws, const std::string& slot, const std::string& doing);
// The same without waiting: nullopt when another process holds it.
std::optional<FileLock> try_lock_slot(const Workspace& ws, const std::string& slot, const std::string& doing);
// The lock `swarm run` holds for as long as its agent lives
// (.swarm/locks/run.<slot>): the slot's folder is the run's meanwhile, so a
// join of another process, or doctor --fix, leaves it alone. nullopt: a
// live run holds it (run_lock_holder says which).
std::optional<FileLock> try_lock_run(const Workspace& ws, const std::string& slot, const std::string& doing);
std::string run_lock_holder(const Workspace& ws, const std::string& slot);
// Who holds the slot's lock, as it described itself.
std::string slot_lock_holder(const Workspace& ws, const std::string& slot);

struct Removal {
  Salvage salvage;
  bool removed = false;  // false: the folder stays (in .swarm/trash/ when it got that far), see warning
  std::string warning;   // why it is not removed
};

// Salvages the slot's folder (see salvage_slot_folder). Call it holding the
// slot's lock. Throws when anything cannot be kept: then nothing was removed.
Salvage salvage_slot(const Workspace& ws, const std::string& slot, const HubLocation& hub, TimePoint now,
                     const SalvageOptions& options = {});

// Removes a salvaged slot folder: moves it whole into .swarm/trash/ (one
// rename: from then on the slot has no folder, and what is left is only
// deletion, which anyone may finish later) and deletes it there, never
// following a link. Call it holding the slot's lock, after salvage_slot.
Removal discard_slot_folder(const Workspace& ws, const std::string& slot, TimePoint now);

// salvage_slot (moving the files: the folder goes), then discard_slot_folder.
// Call it once the slot's record is gone.
Removal remove_slot_folder(const Workspace& ws, const std::string& slot, const HubLocation& hub, TimePoint now);

// The name in .swarm/trash/ of a folder a join clones into before it
// becomes the slot's worktree (what a killed join leaves holds no work).
std::string clone_name(const std::string& slot, TimePoint now);
// Whether `name` has the shape swarm gives what it puts in .swarm/trash/
// ("<slot>.<time>.<pid>" or "<slot>.clone.<time>.<pid>"): anything else
// there is not swarm's, and is left alone. `slot`: of that slot only.
bool is_trash_name(const std::string& name, const std::string& slot = {});

// What interrupted removals left in .swarm/trash/ (of `slot`, or of every
// slot when empty), as names there. Their salvage was complete before they
// moved there.
std::vector<std::string> leftover_removals(const Workspace& ws, const std::string& slot = {});
// Deletes one such leftover; an error message, or "" when it is gone.
std::string finish_removal(const Workspace& ws, const std::string& leftover);
// Removes the slot's folder when nothing is left in it (never a folder
// that holds anything).
void remove_if_empty(const Workspace& ws, const std::string& slot);

}  // namespace swarm
