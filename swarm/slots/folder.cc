#include "swarm/slots/folder.h"

#include <unistd.h>

#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/base/warnings.h"

namespace swarm {

namespace fs = std::filesystem;

namespace {

// Trash entries are "<slot>.<time>.<pid>": slot names have no '.', so the
// entries of one slot are exactly those starting with "<slot>.".
std::string trash_name(const std::string& slot, TimePoint now) {
  return slot + "." + format_compact_utc(now) + "." + std::to_string(::getpid());
}

bool all_digits(std::string_view s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos; }

// "20261122T100000.123Z.4121": a compact time, then a pid.
bool is_time_and_pid(std::string_view rest) {
  auto z = rest.find("Z.");
  if (z == std::string_view::npos || !all_digits(rest.substr(z + 2))) return false;
  std::string_view time = rest.substr(0, z);
  if (time.size() < 15 || !all_digits(time.substr(0, 8)) || time[8] != 'T' || !all_digits(time.substr(9, 6)))
    return false;
  std::string_view fraction = time.substr(15);
  return fraction.empty() || (fraction[0] == '.' && all_digits(fraction.substr(1)));
}

// Slot folders live in .swarm/slots/; a missing one is no slot folder.
std::optional<SafeDir> slots_folder(const Workspace& ws) { return ws.folder_if_exists(kSlotsFolder); }

}  // namespace

FileLock lock_slot(const Workspace& ws, const std::string& slot, const std::string& doing) {
  SafeDir locks = ws.make_folder(kLocksFolder);
  auto lock = FileLock::acquire(locks, "slot." + slot, doing, kSlotLockWait, [&](const std::string& holder) {
    warn(log::format("slot {}: waiting for another swarm process to finish with its folder: {}", slot,
                 holder.empty() ? "(unknown)" : holder));
  });
  if (!lock)
    throw Error(Errc::conflict, "slot " + slot + ": another swarm process of this host is still working on its "
                                "folder after " + std::to_string(kSlotLockWait.count()) + "s (" +
                                    slot_lock_holder(ws, slot) + "); try again when it is done");
  return std::move(*lock);
}

std::optional<FileLock> try_lock_slot(const Workspace& ws, const std::string& slot, const std::string& doing) {
  return FileLock::try_acquire(ws.make_folder(kLocksFolder), "slot." + slot, doing);
}

std::optional<FileLock> try_lock_run(const Workspace& ws, const std::string& slot, const std::string& doing) {
  return FileLock::try_acquire(ws.make_folder(kLocksFolder), "run." + slot, doing);
}

std::string run_lock_holder(const Workspace& ws, const std::string& slot) {
  return FileLock::holder_of(ws.make_folder(kLocksFolder), "run." + slot);
}

std::string slot_lock_holder(const Workspace& ws, const std::string& slot) {
  auto locks = ws.folder_if_exists(kLocksFolder);
  return locks ? FileLock::holder_of(*locks, "slot." + slot) : "";
}

Salvage salvage_slot(const Workspace& ws, const std::string& slot, const HubLocation& hub, TimePoint now,
                     const SalvageOptions& options) {
  auto folder = ws.slot_folder(slot);
  if (!folder) return {};
  return salvage_slot_folder(*folder, slot, hub, ws.make_folder(kRecoveryFolder, 0700), now, options);
}

Removal discard_slot_folder(const Workspace& ws, const std::string& slot, TimePoint now) {
  Removal out;
  auto slots = slots_folder(ws);
  std::optional<SafeDir> folder = slots ? slots->folder_if_exists(slot) : std::nullopt;
  if (!folder) {
    out.removed = true;
    return out;
  }
  SafeDir trash = ws.make_folder(kTrashFolder, 0700);
  const std::string leftover = trash_name(slot, now);
  // By name, and only while the name is still the folder opened: a link
  // swapped in meanwhile would be moved (and deleted as a link), never followed.
  if (!slots->still_is(slot, *folder)) {
    out.warning = "the folder " + (ws.slots_dir() / slot).string() + " changed while it was being removed";
    return out;
  }
  try {
    if (!slots->move(slot, trash, leftover)) {
      out.warning = "could not move " + (ws.slots_dir() / slot).string() + " aside: it is on another filesystem";
      return out;
    }
  } catch (const Error& e) {
    out.warning = std::string("could not move it aside: ") + e.what();
    return out;
  }
  out.warning = finish_removal(ws, leftover);
  out.removed = out.warning.empty();
  return out;
}

Removal remove_slot_folder(const Workspace& ws, const std::string& slot, const HubLocation& hub, TimePoint now) {
  Salvage salvage = salvage_slot(ws, slot, hub, now, {.move = true});
  Removal out = discard_slot_folder(ws, slot, now);
  out.salvage = std::move(salvage);
  return out;
}

std::string clone_name(const std::string& slot, TimePoint now) {
  return slot + ".clone." + format_compact_utc(now) + "." + std::to_string(::getpid());
}

bool is_trash_name(const std::string& name, const std::string& slot) {
  auto dot = name.find('.');
  if (dot == std::string::npos || !is_valid_slot_name(std::string_view(name).substr(0, dot))) return false;
  if (!slot.empty() && name.compare(0, dot, slot) != 0) return false;
  std::string_view rest = std::string_view(name).substr(dot + 1);
  if (rest.substr(0, 6) == "clone.") rest.remove_prefix(6);
  return is_time_and_pid(rest);
}

std::vector<std::string> leftover_removals(const Workspace& ws, const std::string& slot) {
  std::vector<std::string> out;
  auto trash = ws.folder_if_exists(kTrashFolder);
  if (!trash) return out;
  for (auto& name : trash->list())
    if (is_trash_name(name, slot)) out.push_back(std::move(name));
  return out;
}

std::string finish_removal(const Workspace& ws, const std::string& leftover) {
  try {
    auto trash = ws.folder_if_exists(kTrashFolder);
    // Another process finishing the same leftover may have deleted part of
    // it under us: what counts is that it is gone.
    if (trash) trash->remove_tree(leftover);
  } catch (const Error& e) {
    return "could not delete " + (ws.trash_dir() / leftover).string() + " (already salvaged): " + e.what();
  }
  return {};
}

void remove_if_empty(const Workspace& ws, const std::string& slot) {
  if (auto slots = ws.folder_if_exists(kSlotsFolder)) slots->remove_empty_folder(slot);
}

}  // namespace swarm
