// SlotLifecycle::close, step by step: read the record (this host's, this
// session's), the artifact gate, the history to the hub, the record
// released (CAS), then the worktree's files kept and its folder removed.
// Each step may stop the close; what is done before it stays done, and the
// message says where everything is.
#include <unistd.h>

#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/git/worktree.h"
#include "swarm/slots/events.h"
#include "swarm/slots/folder.h"
#include "swarm/slots/lifecycle.h"

namespace swarm {

namespace fs = std::filesystem;

std::string_view to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::success: return "success";
    case Outcome::fail: return "fail";
    case Outcome::fork: return "fork";
  }
  return "fail";
}

Outcome parse_outcome(std::string_view text) {
  for (Outcome o : {Outcome::success, Outcome::fail, Outcome::fork})
    if (text == to_string(o)) return o;
  throw Error(Errc::bad_input, "bad --result '" + std::string(text) + "': use success, fail or fork");
}

std::optional<SessionEntry> SlotLifecycle::read_for_close(const std::string& slot, ExpectedSession session) const {
  auto entry = store_.get(slot);
  if (entry && entry->corrupt()) throw Error::corrupt_session(slot, entry->corrupt_reason);
  if (entry && !me_.owns(*entry->session)) throw Error(Errc::foreign_host, foreign_message(slot, *entry->session));
  // A replaced agent closes nothing of its successor's (nor a slot whose
  // session is gone, for it cannot tell whose the folder is now).
  if (session) {
    if (!entry)
      throw Error(Errc::not_found, not_found_message(slot) + "; session " + std::to_string(*session) +
                                       " is over, nothing was done");
    require_session(*entry, session);
  }
  return entry;
}

void SlotLifecycle::require_success(const std::string& slot, bool need_commit) const {
  std::optional<Worktree> worktree;
  if (has_worktree(slot)) {
    try {
      worktree.emplace(Worktree::open(workspace_.worktree(slot), slot, hub_));
    } catch (const Error&) {
      // A broken repository: it cannot show a commit; salvage keeps its files.
    }
  }
  // A success names the branch as it is: a merge left half way (sync's
  // conflicts, a git pull's) would land the old branch, and fail again.
  if (worktree && worktree->merging())
    throw Error(Errc::conflict, "slot " + slot + " has a merge in progress in its worktree, so its branch is not what "
                                "it will be; resolve it and swarm commit, or abort it (git -C " +
                                    workspace_.worktree(slot).string() + " merge --abort), then close; nothing changed");
  if (need_commit && !committed_in_this_run(slot, worktree))
    throw Error(Errc::conflict, "slot " + slot + " has not committed since it was taken up, so there is nothing to "
                                "show for success; commit first, close with --result fail, or pass --no-artifact");
}

bool SlotLifecycle::committed_since_taken(const std::string& slot) const {
  std::optional<Worktree> worktree;
  if (has_worktree(slot)) {
    try {
      worktree.emplace(Worktree::open(workspace_.worktree(slot), slot, hub_));
    } catch (const Error&) {
      // A broken repository: what reached the hub tells.
    }
  }
  return committed_in_this_run(slot, worktree);
}

void SlotLifecycle::push_branch(const std::string& slot, Outcome outcome, CloseResult& result) const {
  std::optional<Worktree> worktree;
  try {
    if (has_worktree(slot)) worktree.emplace(Worktree::open(workspace_.worktree(slot), slot, hub_));
  } catch (const Error& e) {
    if (e.kind() == Errc::bad_input) throw;  // a link in its place
    return;  // a broken repository: salvage keeps it whole
  }
  if (!worktree || !worktree->hub_lacks_branch()) return;
  try {
    worktree->push();  // fast-forward only
    result.pushed_branch = true;
  } catch (const Error& e) {
    if (e.kind() != Errc::conflict)
      throw Error(e.kind(), "slot " + slot + " is not closed and nothing changed: pushing its branch failed (" +
                                e.what() + ")");
    // Diverged: a success would name a branch that lacks the work.
    if (outcome == Outcome::success)
      throw Error(Errc::conflict, "slot " + slot + " is not closed and nothing changed: " + e.what());
    result.warnings.push_back(std::string(e.what()) + "; its commits go to refs/recovery/ instead");
  }
}

void SlotLifecycle::salvage_history(const std::string& slot, TimePoint now, CloseResult& result) const {
  try {
    result.salvage = salvage_slot(workspace_, slot, hub_, now, {.files = false});
  } catch (const Error& e) {
    throw Error(e.kind(), "slot " + slot + " is not closed and its worktree is kept: salvaging it failed (" +
                              e.what() + "); fix that, or close with --keep-worktree");
  }
  // A filesystem that takes no new file cannot take the salvage either:
  // stop while nothing is released (exit 9), rather than half way after.
  require_room_for_salvage(slot);
}

void SlotLifecycle::release_record(const std::string& slot, const std::optional<SessionEntry>& entry,
                                   CloseResult& result) const {
  if (!entry) {
    result.warnings.push_back("slot " + slot + " had no record (it expired); cleaned up its folder only");
    return;
  }
  // What is released is the record as deleted (a hold named since the read included).
  SessionEntry removed = *entry;
  same_session_cas(*entry, "closing", [&](SessionEntry& current) {
    store_.erase(slot, current.revision);
    removed = current;
    return current.revision;
  });
  result.released = removed;
  for (auto& w : release_leases(removed)) result.warnings.push_back(std::move(w));
}

void SlotLifecycle::salvage_files_and_remove(const std::string& slot, TimePoint now, CloseResult& result) const {
  // The record is gone (ours, by CAS) and the folder's lock is ours: no
  // one else uses the worktree, so its files move (one rename each)
  // instead of being copied, right before the folder goes.
  try {
    Salvage files = salvage_slot(workspace_, slot, hub_, now,
                                 {.history = false, .move = true, .keep_whole = result.salvage.unreadable_repository});
    log::phase("close: moved the uncommitted files to .swarm/recovery/");
    files.commits_ref = result.salvage.commits_ref;
    files.refs = result.salvage.refs;
    files.unreadable_repository = files.unreadable_repository || result.salvage.unreadable_repository;
    result.salvage = std::move(files);
  } catch (const Error& e) {
    auto folder = workspace_.slot_folder(slot);
    const bool marked = folder && folder->kind(kSalvageMarkName) != EntryKind::missing;
    throw Error(e.kind(), "slot " + slot + " is released, but keeping its uncommitted files failed (" + e.what() +
                              (marked ? "); some may be in .swarm/recovery/ already, the rest are in its folder, "
                                        "which is marked half salvaged"
                                      : "); they are all still in its folder") +
                              ": `swarm doctor --fix` salvages and removes it");
  }
  Removal removal = discard_slot_folder(workspace_, slot, now);
  result.removed_worktree = removal.removed;
  if (!removal.removed) result.warnings.push_back(removal.warning + "; `swarm doctor --fix` finishes it");
}

CloseResult SlotLifecycle::close(const std::string& slot, const CloseOptions& options) {
  require_slot_name(slot);
  // Salvage pushes to the hub and the artifact gate reads it: without it,
  // close keeps everything.
  require_hub();
  // Every step below, from the first look at the record to the removal, with
  // the folder ours alone: a join of this host waits, then sees what we did.
  FileLock folder_lock = lock_slot(workspace_, slot, "close of slot " + slot);
  require_kept_folders(slot);
  CloseResult result;
  const std::optional<SessionEntry> entry = read_for_close(slot, options.session);
  std::optional<FileLock> run_lock;
  if (!options.by_run) {
    run_lock = try_lock_run(workspace_, slot, "close of slot " + slot);
    if (!run_lock)
      throw Error(Errc::conflict, "slot " + slot + " is kept by a `swarm run` of this host (" +
                                      run_lock_holder(workspace_, slot) + "): its agent works in the folder, and the "
                                      "run closes the slot when the agent ends (exit 0: success, else fail); "
                                      "nothing was changed");
  }
  // A link in place of the slot's folder is refused here (exit 2, naming it).
  const bool have_folder = workspace_.slot_folder(slot).has_value();
  auto leftovers = leftover_removals(workspace_, slot);
  if (!entry && !have_folder) {
    if (leftovers.empty()) throw Error(Errc::not_found, not_found_message(slot));
    // A close killed while deleting the folder it had salvaged: finish it.
    finish_leftovers(leftovers, result);
    result.warnings.push_back("slot " + slot + " had no record and no folder; finished removing what an "
                              "interrupted close or doctor --fix had salvaged already");
    return result;
  }
  // A session that expired may have been cut off half way (or its slot
  // taken over and given back): only a live one says its work is done.
  if (!entry && options.result == Outcome::success)
    throw Error(Errc::not_found, "slot " + slot + "'s session expired before this close (it has no record), so it "
                                 "cannot close as a success: join the slot again (its worktree and commits are kept) "
                                 "and close it, or close it with --result fail; nothing was changed");
  if (options.result == Outcome::success) require_success(slot, !options.no_artifact);
  // The history goes to the hub before anything is released or removed: a
  // hub that cannot take it stops the close here, everything kept.
  const bool remove_folder = have_folder && !options.keep_worktree;
  const TimePoint now = clock_();
  log::phase("close: read the record and checked the slot");
  if (have_folder) push_branch(slot, options.result, result);
  log::phase("close: pushed what the hub lacked");
  if (remove_folder) salvage_history(slot, now, result);
  log::phase("close: kept the history the hub lacks");
  const std::optional<std::string> head = have_folder ? branch_head(slot) : std::nullopt;
  release_record(slot, entry, result);
  if (result.released && result.released->session)
    close_queued(*result.released->session, std::string(to_string(options.result)), head.value_or(""),
                 options.why, &result.warnings);
  log::phase("close: released the record and its leases");
  if (remove_folder) {
    salvage_files_and_remove(slot, now, result);
    log::phase("close: salvaged the files and removed the folder");
  } else {
    if (auto folder = workspace_.slot_folder(slot)) {
      folder->remove_file(kLeafPidName);
      folder->remove_file(kSessionBaseName);
    }
    remove_if_empty(workspace_, slot);
  }
  finish_leftovers(leftovers, result);
  log::phase("close: finished earlier removals");
  journal_.record(close_event(store_.bucket_name(), slot, result, options.result, head, Actor::here(me_),
                              options.priority_high, options.why));
  return result;
}

std::optional<std::string> SlotLifecycle::branch_head(const std::string& slot) const {
  try {
    if (has_worktree(slot)) return Worktree::open(workspace_.worktree(slot), slot, hub_).branch_tip();
  } catch (const Error& e) {
    swarm::log::debug("slot {}: no head for the journal: {}", slot, e.what());
  }
  return std::nullopt;
}

void SlotLifecycle::finish_leftovers(const std::vector<std::string>& leftovers, CloseResult& result) const {
  for (const auto& leftover : leftovers)
    if (auto problem = finish_removal(workspace_, leftover); !problem.empty()) result.warnings.push_back(problem);
}

void SlotLifecycle::require_room_for_salvage(const std::string& slot) const {
  SafeDir recovery = workspace_.make_folder(kRecoveryFolder, 0700);
  const std::string probe = ".room." + slot + "." + std::to_string(::getpid());
  try {
    recovery.write_file(probe, std::string(4096, '\n'));
  } catch (const Error& e) {
    throw Error(e.kind(), "slot " + slot + " is not closed and nothing changed: .swarm/recovery/ takes no new file (" +
                              e.what() + "), so its uncommitted files could not be kept; free space, then close again");
  }
  recovery.remove_file(probe);
}

}  // namespace swarm
