#include "swarm/slot_lifecycle.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "swarm/duration.h"
#include "swarm/error.h"
#include "swarm/hub.h"
#include "swarm/liveness.h"
#include "swarm/log.h"
#include "swarm/names.h"
#include "swarm/slot_folder.h"
#include "swarm/text.h"
#include "swarm/worktree.h"

namespace swarm {

namespace fs = std::filesystem;

std::string foreign_message(const std::string& slot, const Session& owner) {
  // The record's words are escaped: they go into messages a terminal shows.
  const std::string host = printable(owner.host);
  return "slot " + slot + " belongs to host " + host +
         (owner.task_id.empty() ? "" : " (task " + printable(owner.task_id) + ")") + "; run the verb on " + host +
         ", or `swarm evict --slot " + slot + "` if that host is gone";
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

namespace {

std::string not_found_message(const std::string& slot) {
  return "no session for slot " + slot + " (closed, evicted or expired); take it again with `swarm join --slot " +
         slot + " --task ...`";
}

// Removes the slot's folder when nothing is left in it.
void remove_if_empty(const Workspace& ws, const std::string& slot) {
  if (auto slots = ws.folder_if_exists(kSlotsFolder)) slots->remove_empty_folder(slot);
}

}  // namespace

SlotLifecycle::SlotLifecycle(Workspace workspace, WorkspaceConfig config, SessionStore store, LeaseStore leases,
                             HostIdentity me, Clock clock)
    : workspace_(std::move(workspace)),
      config_(std::move(config)),
      hub_(config_.hub_location()),
      store_(std::move(store)),
      tasks_(std::move(leases), me, store_.ttl()),
      me_(std::move(me)),
      clock_(std::move(clock)) {}

template <typename Write>
std::uint64_t SlotLifecycle::same_session_cas(SessionEntry entry, const char* doing, Write write) const {
  const std::string slot = entry.slot;
  const std::optional<Session> original = entry.session;
  for (int attempt = 1;; ++attempt) {
    try {
      return write(entry);
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict || attempt >= kMaxCasAttempts) throw;
    }
    // Lost a race: go on only if the record is still the same session.
    spdlog::debug("slot {}: lost a CAS race while {} (attempt {}), rereading", slot, doing, attempt);
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

std::uint64_t SlotLifecycle::renew(const SessionEntry& entry) const {
  return same_session_cas(entry, "renewing", [&](SessionEntry& current) {
    // Only last_renewed changes (and the session token is kept from now
    // on); every other field (a newer client's too) stays.
    current.session->session_token = current.token();
    current.session->last_renewed = clock_();
    return store_.update(*current.session, current.revision);
  });
}

std::uint64_t SlotLifecycle::renew(const SessionEntry& entry, std::optional<LeaseEntry> task_lease,
                                   std::vector<std::string>* warnings) const {
  const Session& s = *entry.session;
  auto warn = [&](const std::string& w) {
    if (warnings != nullptr && !w.empty()) warnings->push_back(w);
  };
  if (s.task_id.empty()) return renew(entry);
  if (!task_lease) task_lease = translating_kv([&] { return tasks_.read(s.task_id); });
  if (!task_lease || !TaskLeases::held_by(*task_lease, s.slot, s.task_id)) {
    // Released or taken meanwhile: the session is renewed, the claim taken
    // again if it is free.
    std::uint64_t revision = renew(entry);
    warn(tasks_.reclaim(s.slot, s.task_id, s.leaf_pid));
    return revision;
  }
  // Both writes in one round trip.
  Session renewed = s;
  renewed.last_renewed = clock_();
  renewed.session_token = entry.token();
  auto results = kv::Bucket::update_together(
      {{&store_.bucket(), s.slot, to_json(renewed), entry.revision}, tasks_.renewal(*task_lease)});
  std::uint64_t revision = results[0].revision;
  if (results[0].error) {
    if (results[0].error->kind() != kv::Errc::conflict) throw from_kv(*results[0].error);
    revision = renew(entry);  // lost a race: reread, and go on only for the same session
  }
  if (results[1].error) warn(tasks_.reclaim(s.slot, s.task_id, s.leaf_pid));
  return revision;
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

Worktree SlotLifecycle::ensure_worktree(const std::string& slot, bool* resumed) const {
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
    Worktree::create(hub_, trash.path() / clone, slot);
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

bool SlotLifecycle::committed_in_this_run(const std::string& slot, const std::optional<Worktree>& worktree) const {
  std::string why;
  auto folder = workspace_.slot_folder(slot);
  std::istringstream in(folder ? folder->read_file(kSessionBaseName, 256, &why).value_or("") : "");
  std::string base;
  if (in >> base) {
    if (worktree) return worktree->branch_tip() != base;
    auto pushed = Hub::open(hub_).branch_tip("swarm/" + slot);  // the worktree is gone: what reached the hub
    return pushed && *pushed != base;
  }
  return worktree ? worktree->has_commits_beyond_default()
                  : Hub::open(hub_).has_commits_beyond_default("swarm/" + slot);
}

JoinResult SlotLifecycle::join(const std::string& slot, const std::string& task, bool force, std::int64_t leaf_pid) {
  require_slot_name(slot);
  require_task_id(task);
  JoinResult result;
  Session& s = result.session;
  s.slot = slot;
  s.task_id = task;
  s.agent_id = "slot-" + slot;
  s.host = me_.host;
  s.host_id = me_.host_id;
  s.leaf_pid = leaf_pid;
  // Only the winner of the slot makes a worktree (and loads git); every
  // joiner checks the hub is there, cheaply.
  require_hub();
  s.hub_url = hub_.session_url();
  // The slot's folder is ours alone from here: a close or doctor --fix of
  // this host removing it finishes first, and sees the record we write.
  FileLock folder_lock = lock_slot(workspace_, slot, "join of slot " + slot);
  require_kept_folders(slot);
  s.started_at = clock_();
  s.last_renewed = s.started_at;

  auto existing = store_.get(slot);
  if (!existing) {
    try {
      result.revision = store_.create(s);
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict) throw;
      throw Error(Errc::conflict, "slot " + slot + " was just taken by another join; see `swarm status --slot " +
                                      slot + "`");
    }
  } else {
    if (existing->corrupt()) throw Error::corrupt_session(slot, existing->corrupt_reason);
    const Session& owner = *existing->session;
    if (!me_.owns(owner)) throw Error(Errc::foreign_host, foreign_message(slot, owner));
    auto server = store_.server_clock(clock_);
    auto age = age_of(existing->stored_at, server.now());
    State state = state_of(age, store_.ttl());
    if (state == State::stale && !server.measured && !force)
      throw Error(Errc::conflict, "slot " + slot + " looks stale by this host's clock, but the server's clock could "
                                  "not be read to be sure; take it over with --force, or try again");
    if (state != State::stale && !force)
      throw Error(Errc::conflict, "slot " + slot + " is held by a " + std::string(to_string(state)) +
                                      " session of this host (task " + printable(owner.task_id) + ", renewed " +
                                      format_duration(std::chrono::duration_cast<std::chrono::seconds>(age)) +
                                      " ago); take it over with --force, or `swarm close --slot " + slot + "` first");
    try {
      result.revision = store_.update(s, existing->revision);
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict) throw;
      throw Error(Errc::conflict, "slot " + slot + " changed while joining; see `swarm status --slot " + slot + "`");
    }
    result.replaced = existing;
    spdlog::debug("slot {}: replaced a {} session of this host (revision {})", slot, to_string(state),
                  existing->revision);
  }

  // The record is ours: now the task's lease, then the worktree. If either
  // fails, undo the record (and the lease), and the worktree too when it was
  // made just now (it holds no work yet).
  std::optional<Worktree> worktree;
  bool claimed = false;
  try {
    tasks_.claim(slot, task, leaf_pid);
    claimed = true;
    // A rejoin for another task lets the old one go.
    if (result.replaced && result.replaced->session->task_id != task)
      if (auto w = tasks_.release(slot, result.replaced->session->task_id); !w.empty()) spdlog::warn("{}", w);
    worktree.emplace(ensure_worktree(slot, &result.resumed_worktree));
    SafeDir folder = *workspace_.slot_folder(slot);
    folder.write_file(kLeafPidName, std::to_string(leaf_pid) + "\n");
    // A slot's run of work starts with a new worktree (or one kept by close);
    // a join that takes over a worktree its session never closed (expired,
    // stale or forced out) carries that run on, its commits included.
    if (!result.resumed_worktree || folder.kind(kSessionBaseName) == EntryKind::missing)
      folder.write_file(kSessionBaseName, worktree->branch_tip().value_or("") + "\n");
  } catch (...) {
    if (!result.resumed_worktree) {
      // Made just now, or never made: nothing in it is work yet.
      worktree.reset();
      try {
        if (auto folder = workspace_.slot_folder(slot)) {
          folder->remove_tree(kWorktreeName);
          folder->remove_file(kLeafPidName);
          folder->remove_file(kSessionBaseName);
        }
        remove_if_empty(workspace_, slot);
      } catch (const Error&) {
        // A folder that is not ours to clean (a link, a stranger's): left as it is.
      }
    }
    std::string left;  // what could not be undone, for the message
    try {
      store_.erase(slot, result.revision);
    } catch (const Error& e) {
      // Expired or taken meanwhile: either way it is not ours to remove now.
      // NATS gone: the record stays, and the user must know it is there.
      if (e.kind() == Errc::unavailable)
        left = "; its record could not be removed (" + std::string(e.what()) + "): `swarm doctor --fix` removes it "
               "once NATS answers, or it expires within the TTL (" + format_duration(config_.ttl) + ")";
    }
    if (claimed) tasks_.release(slot, task);
    if (left.empty()) throw;
    try {
      throw;
    } catch (const Error& e) {
      throw Error(e.kind(), e.what() + left);
    }
  }
  result.worktree = fs::weakly_canonical(workspace_.worktree(slot));
  return result;
}

CommitResult SlotLifecycle::commit(const std::string& slot, const std::string& message,
                                   const std::vector<std::string>& paths, ExpectedSession session) {
  if (message.empty()) throw Error(Errc::bad_input, "an empty commit message; say what changed with -m");
  require_slot_name(slot);
  // No close or doctor --fix of this host removes the folder while we commit.
  FileLock folder_lock = lock_slot(workspace_, slot, "commit of slot " + slot);
  SessionEntry entry = read_own(slot, session);
  fs::path wt = workspace_.worktree(slot);
  if (!has_worktree(slot))
    throw Error(Errc::not_found, "slot " + slot + " has no worktree at " + wt.string() +
                                     "; close the slot and join it again");
  Worktree worktree = Worktree::open(wt, slot, hub_);
  CommitResult result;
  result.branch = worktree.branch();
  result.commit = worktree.commit(message, paths, {entry.session->agent_id.empty() ? "swarm" : entry.session->agent_id,
                                                   (entry.session->agent_id.empty() ? "swarm" : entry.session->agent_id) +
                                                       "@" + me_.host});
  // Also with nothing new to commit, when an earlier push did not get through.
  if (result.commit || worktree.unpushed()) {
    try {
      worktree.push();
      result.pushed = true;
    } catch (const Error& e) {
      result.warnings.push_back(std::string("push failed, the commit stands locally: ") + e.what());
    }
  }
  try {
    result.revision = renew(entry, std::nullopt, &result.warnings);
  } catch (const Error& e) {
    result.warnings.push_back(std::string("renewal failed: ") + e.what());
  }
  return result;
}

std::uint64_t SlotLifecycle::renew(const std::string& slot, std::vector<std::string>* warnings,
                                   ExpectedSession session) {
  return renew(read_own(slot, session), std::nullopt, warnings);
}

CloseResult SlotLifecycle::close(const std::string& slot, const CloseOptions& options) {
  require_slot_name(slot);
  if (options.result != "success" && options.result != "fail" && options.result != "fork")
    throw Error(Errc::bad_input, "bad --result '" + options.result + "': use success, fail or fork");
  // Salvage pushes to the hub and the artifact gate reads it: without it,
  // close keeps everything.
  require_hub();
  // Every step below, from the first look at the record to the removal, with
  // the folder ours alone: a join of this host waits, then sees what we did.
  FileLock folder_lock = lock_slot(workspace_, slot, "close of slot " + slot);
  require_kept_folders(slot);
  CloseResult result;
  auto entry = store_.get(slot);
  if (entry && entry->corrupt()) throw Error::corrupt_session(slot, entry->corrupt_reason);
  if (entry && !me_.owns(*entry->session)) throw Error(Errc::foreign_host, foreign_message(slot, *entry->session));
  // A replaced agent closes nothing of its successor's (nor a slot whose
  // session is gone, for it cannot tell whose the folder is now).
  if (options.session) {
    if (!entry) throw Error(Errc::not_found, not_found_message(slot) + "; session " +
                                                 std::to_string(*options.session) + " is over, nothing was done");
    require_session(*entry, options.session);
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
  const fs::path wt = workspace_.worktree(slot);
  if (options.result == "success" && !options.no_artifact) {
    std::optional<Worktree> worktree;
    if (has_worktree(slot)) {
      try {
        worktree.emplace(Worktree::open(wt, slot, hub_));
      } catch (const Error&) {
        // A broken repository: it cannot show a commit; salvage keeps its files.
      }
    }
    if (!committed_in_this_run(slot, worktree))
      throw Error(Errc::conflict, "slot " + slot + " has not committed since it was taken up, so there is nothing to "
                                  "show for success; commit first, close with --result fail, or pass --no-artifact");
  }
  // The history goes to the hub before anything is released or removed: a
  // hub that cannot take it stops the close here, everything kept.
  const bool remove_folder = have_folder && !options.keep_worktree;
  const TimePoint now = clock_();
  if (remove_folder) {
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
  if (entry) {
    same_session_cas(*entry, "closing", [&](SessionEntry& current) {
      store_.erase(slot, current.revision);
      return current.revision;
    });
    result.released = entry;
    if (auto w = tasks_.release(slot, entry->session->task_id); !w.empty()) result.warnings.push_back(w);
  } else {
    result.warnings.push_back("slot " + slot + " had no record (it expired); cleaned up its folder only");
  }
  if (remove_folder) {
    // The record is gone (ours, by CAS) and the folder's lock is ours: no
    // one else uses the worktree, so its files move (one rename each)
    // instead of being copied, right before the folder goes.
    try {
      Salvage files = salvage_slot(workspace_, slot, hub_, now,
                                   {.history = false, .move = true, .keep_whole = result.salvage.unreadable_repository});
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
  } else {
    if (auto folder = workspace_.slot_folder(slot)) {
      folder->remove_file(kLeafPidName);
      folder->remove_file(kSessionBaseName);
    }
    remove_if_empty(workspace_, slot);
  }
  finish_leftovers(leftovers, result);
  return result;
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
  // Its claim on its task goes with it (whichever host held it).
  if (!removed.corrupt())
    if (auto w = tasks_.release(slot, removed.session->task_id); !w.empty()) spdlog::warn("{}", w);
  return removed;
}

}  // namespace swarm
