#include "swarm/slots/lifecycle.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <future>
#include <sstream>

#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/base/warnings.h"
#include "swarm/git/hub.h"
#include "swarm/git/worktree.h"
#include "swarm/slots/events.h"
#include "swarm/slots/folder.h"
#include "swarm/slots/liveness.h"

namespace swarm {

namespace fs = std::filesystem;

std::string foreign_message(const std::string& slot, const Session& owner) {
  // The record's words are escaped: they go into messages a terminal shows.
  const std::string host = printable(owner.host);
  return "slot " + slot + " belongs to host " + host +
         (owner.task_id.empty() ? "" : " (task " + printable(owner.task_id) + ")") + "; run the verb on " + host +
         ", or `swarm evict --slot " + slot + "` if that host is gone";
}

std::string not_found_message(const std::string& slot) {
  return "no session for slot " + slot + " (closed, evicted or expired); take it again with `swarm join --slot " +
         slot + " --task ...`";
}

void require_session(const SessionEntry& entry, ExpectedSession session) {
  if (!session || entry.token() == *session) return;
  std::string now = "token " + std::to_string(entry.token());
  if (!entry.corrupt())
    now += ", host " + printable(entry.session->host) + ", task " + printable(entry.session->task_id) +
           (entry.session->started_at ? ", started " + format_rfc3339(*entry.session->started_at) : "");
  throw Error(Errc::conflict, "slot " + entry.slot + " is held by another session now (" + now + "): session " +
                                  std::to_string(*session) + " was replaced (a join --force, or it expired and the "
                                  "slot was taken again), so nothing was done; stop working in it");
}

SlotLifecycle::SlotLifecycle(Workspace workspace, WorkspaceConfig config, SessionStore store, LeaseStore leases,
                             HostIdentity me, Clock clock)
    : workspace_(std::move(workspace)),
      config_(std::move(config)),
      hub_(config_.hub_location()),
      store_(std::move(store)),
      tasks_(leases, me, store_.ttl()),
      ports_(leases, me, store_.ttl()),
      holds_(std::move(leases), me, store_.ttl()),
      me_(std::move(me)),
      clock_(std::move(clock)),
      journal_(store_.connection(), config_.names()) {}

SlotLifecycle SlotLifecycle::with_budget(std::chrono::milliseconds budget) const {
  SlotLifecycle copy = *this;
  copy.store_ = store_.with_budget(budget);
  copy.tasks_ = tasks_.with_budget(budget);
  copy.ports_ = ports_.with_budget(budget);
  copy.holds_ = holds_.with_budget(budget);
  copy.journal_ = journal_.with_budget(budget);
  return copy;
}

std::uint64_t SlotLifecycle::same_session_cas(SessionEntry entry, const char* doing,
                                              const std::function<std::uint64_t(SessionEntry&)>& write) const {
  const std::string slot = entry.slot;
  const std::optional<Session> original = entry.session;
  for (int attempt = 1;; ++attempt) {
    try {
      return write(entry);
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict || attempt >= kMaxCasAttempts) throw;
    }
    // Lost a race: go on only if the record is still the same session.
    swarm::log::debug("slot {}: lost a CAS race while {} (attempt {}), rereading", slot, doing, attempt);
    auto reread = store_.get(slot);
    if (!reread)
      throw Error(Errc::not_found, "the record of slot " + slot + " vanished while " + doing +
                                       " (closed, evicted or expired)");
    bool same = original ? (!reread->corrupt() && reread->session->same_session_as(*original))
                         : (reread->corrupt() && reread->raw == entry.raw);  // the same bad bytes
    if (!same)
      throw Error(Errc::conflict, "slot " + slot + " changed hands while " + doing +
                                      "; the new session is left alone (see `swarm status --slot " + slot + "`)");
    entry = *reread;
  }
}

SessionEntry SlotLifecycle::read_own(const std::string& slot, ExpectedSession session) const {
  require_slot_name(slot);
  auto entry = store_.get(slot);
  if (!entry) throw Error(Errc::not_found, not_found_message(slot));
  if (entry->corrupt()) throw Error::corrupt_session(slot, entry->corrupt_reason);
  if (!me_.owns(*entry->session)) throw Error(Errc::foreign_host, foreign_message(slot, *entry->session));
  require_session(*entry, session);
  return *entry;
}

Worktree SlotLifecycle::ensure_worktree(const std::string& slot, bool* resumed, const WorktreeStart& start,
                                        WorktreeStarted* started) const {
  const fs::path wt = workspace_.worktree(slot);
  SafeDir slots = workspace_.make_folder(kSlotsFolder);
  if (slots.kind(slot) == EntryKind::file || slots.kind(slot) == EntryKind::other)
    throw Error(Errc::conflict, workspace_.slot_dir(slot).string() + " is a file where the folder of slot " + slot +
                                    " should be; move it away (swarm never removes it)");
  // A link in place of the slot's folder or its worktree is refused here
  // (exit 2, naming it), never followed.
  SafeDir folder = slots.make_folder(slot);
  const EntryKind existing = folder.kind(kWorktreeName);
  *resumed = existing != EntryKind::missing;
  if (*resumed) {
    folder.folder(kWorktreeName);  // a real folder of ours, or refused
    if (folder.kind(kSalvageMarkName) != EntryKind::missing)
      throw Error(Errc::conflict, "the worktree of slot " + slot + " is half salvaged (a close or doctor --fix was "
                                  "interrupted while moving its files to .swarm/recovery/); finish it with `swarm "
                                  "doctor --fix`, then join again");
    try {
      return Worktree::open(wt, slot, hub_);
    } catch (const Error&) {
      throw Error(Errc::conflict, "the folder " + wt.string() + " exists but is not a git worktree; move it away, "
                                  "or salvage and remove it with `swarm doctor --fix`");
    }
  }
  // Cloned aside and moved in by one rename, so a join killed half way never
  // leaves a half-checked-out worktree that a later join would take for work
  // (its missing files would commit as deletions). What a killed clone
  // leaves in .swarm/trash/ holds no work; close and doctor --fix delete it.
  // The trash is this user's alone (0700): no one else reads a clone's
  // files while it is made.
  SafeDir trash = workspace_.make_folder(kTrashFolder, 0700);
  const std::string clone = clone_name(slot, clock_());
  try {
    Worktree::create(hub_, trash.path() / clone, slot, start, started);
    if (!trash.move(clone, folder, kWorktreeName))
      throw Error(Errc::filesystem, "cannot move the new clone of slot " + slot + " into " + wt.string() +
                                        ": .swarm/trash/ is on another filesystem than .swarm/slots/");
  } catch (...) {
    try {
      trash.remove_tree(clone);  // ours, and holds nothing yet
    } catch (const Error&) {
      // Left in the trash: doctor --fix deletes it.
    }
    throw;
  }
  return Worktree::open(wt, slot, hub_);
}

void SlotLifecycle::require_kept_folders(const std::string& slot) const {
  // Each throws bad_input naming a link or a stranger's folder in its place.
  workspace_.make_folder(kTrashFolder, 0700);
  workspace_.make_folder(kRecoveryFolder, 0700);
  // A file where the slot's folder should be is join's to name (a conflict).
  auto slots = workspace_.folder_if_exists(kSlotsFolder);
  if (!slots || (slots->kind(slot) != EntryKind::folder && slots->kind(slot) != EntryKind::link)) return;
  auto folder = slots->folder_if_exists(slot);
  const EntryKind wt = folder ? folder->kind(kWorktreeName) : EntryKind::missing;
  if (wt == EntryKind::link || wt == EntryKind::folder) folder->folder_if_exists(kWorktreeName);
}

bool SlotLifecycle::has_worktree(const std::string& slot) const {
  auto folder = workspace_.slot_folder(slot);
  const EntryKind kind = folder ? folder->kind(kWorktreeName) : EntryKind::missing;
  // A link in its place is refused (bad_input, naming it): never opened.
  if (kind == EntryKind::link || kind == EntryKind::folder) folder->folder_if_exists(kWorktreeName);
  return kind != EntryKind::missing;
}

void SlotLifecycle::require_hub() const {
  // A network hub is reached when it is used: a clone or push that cannot
  // reach it fails with exit 7 and undoes or keeps what it must.
  if (!hub_.remote() && !Hub::exists_at(hub_.path()))
    throw Error(Errc::not_bootstrapped, "the hub " + hub_.text + " is missing or not a git repository, so "
                                        "nothing was changed; the workspace's operator must restore it");
}

SessionEntry SlotLifecycle::evict(const std::string& slot) {
  require_slot_name(slot);
  auto entry = store_.get(slot);
  if (!entry) throw Error(Errc::not_found, "no record for slot " + slot + " to evict");
  SessionEntry removed = *entry;
  same_session_cas(*entry, "evicting", [&](SessionEntry& current) {
    store_.erase(slot, current.revision);
    removed = current;
    return current.revision;
  });
  // Its claim on its task and its ports go with it (whichever host held them).
  if (!removed.corrupt())
    for (const auto& w : release_leases(removed)) warn(w);
  journal_.record(evict_event(store_.bucket_name(), removed, Actor::here(me_)));
  return removed;
}

}  // namespace swarm
