#include "swarm/slot_folder.h"

#include <unistd.h>

#include "swarm/error.h"
#include "swarm/log.h"

namespace swarm {

namespace fs = std::filesystem;

namespace {

// Trash entries are "<slot>.<time>.<pid>": slot names have no '.', so the
// entries of one slot are exactly those starting with "<slot>.".
std::string trash_name(const std::string& slot, TimePoint now) {
  return slot + "." + format_compact_utc(now) + "." + std::to_string(::getpid());
}

}  // namespace

FileLock lock_slot(const Workspace& ws, const std::string& slot, const std::string& doing) {
  auto lock = FileLock::acquire(ws.slot_lock(slot), doing, kSlotLockWait, [&](const std::string& holder) {
    spdlog::warn("slot {}: waiting for another swarm process to finish with its folder: {}", slot,
                 holder.empty() ? "(unknown)" : holder);
  });
  if (!lock)
    throw Error(Errc::conflict, "slot " + slot + ": another swarm process of this host is still working on its "
                                "folder after " + std::to_string(kSlotLockWait.count()) + "s (" +
                                    slot_lock_holder(ws, slot) + "); try again when it is done");
  return std::move(*lock);
}

std::optional<FileLock> try_lock_slot(const Workspace& ws, const std::string& slot, const std::string& doing) {
  return FileLock::try_acquire(ws.slot_lock(slot), doing);
}

std::string slot_lock_holder(const Workspace& ws, const std::string& slot) {
  return FileLock::holder_of(ws.slot_lock(slot));
}

Salvage salvage_slot(const Workspace& ws, const std::string& slot, TimePoint now, const SalvageOptions& options) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(ws.slot_dir(slot), ec))) return {};
  return salvage_slot_folder(ws.slot_dir(slot), slot, ws.recovery_dir(), now, options);
}

Removal discard_slot_folder(const Workspace& ws, const std::string& slot, TimePoint now) {
  Removal out;
  const fs::path folder = ws.slot_dir(slot);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(folder, ec))) {
    out.removed = true;
    return out;
  }
  fs::create_directories(ws.trash_dir(), ec);
  fs::path leftover = ws.trash_dir() / trash_name(slot, now);
  fs::rename(folder, leftover, ec);
  if (ec) {
    out.warning = "could not move " + folder.string() + " aside: " + ec.message();
    return out;
  }
  out.warning = finish_removal(leftover);
  out.removed = out.warning.empty();
  return out;
}

Removal remove_slot_folder(const Workspace& ws, const std::string& slot, TimePoint now) {
  Salvage salvage = salvage_slot(ws, slot, now, {.move = true});
  Removal out = discard_slot_folder(ws, slot, now);
  out.salvage = std::move(salvage);
  return out;
}

std::vector<fs::path> leftover_removals(const Workspace& ws, const std::string& slot) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(ws.trash_dir(), ec)) {
    std::string name = entry.path().filename().string();
    if (slot.empty() || name.rfind(slot + ".", 0) == 0) out.push_back(entry.path());
  }
  return out;
}

std::string finish_removal(const fs::path& leftover) {
  std::error_code ec;
  fs::remove_all(leftover, ec);
  // Another process finishing the same leftover may have deleted part of it
  // under us: what counts is that it is gone.
  if (ec && fs::exists(fs::symlink_status(leftover, ec))) {
    return "could not delete " + leftover.string() + " (already salvaged): " + ec.message();
  }
  return {};
}

}  // namespace swarm
