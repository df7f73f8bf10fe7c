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

void Presence::apply_to(Session& s) const {
  if (status) s.status = *status;
  if (note) s.note = *note;
  if (agent) {
    s.agent_pid = agent->first;
    s.agent_start = agent->second;
  }
  if (leaf_start) s.leaf_start = *leaf_start;
  for (const auto& name : add_holds)
    if (std::find(s.holds.begin(), s.holds.end(), name) == s.holds.end()) s.holds.push_back(name);
  for (const auto& name : drop_holds) s.holds.erase(std::remove(s.holds.begin(), s.holds.end(), name), s.holds.end());
}

void require_presence(const Presence& presence) {
  if (presence.status && !presence.status->empty()) {
    bool known = false;
    for (const char* status : kAgentStatuses) known = known || *presence.status == status;
    if (!known)
      throw Error(Errc::bad_input, "bad --status '" + printable(presence.status->substr(0, 40)) +
                                       "': use working, blocked, idle or waiting ('' says nothing)");
  }
  if (presence.note && (presence.note->size() > kMaxNoteBytes || !is_plain_text(*presence.note)))
    throw Error(Errc::bad_input, "bad --note '" + printable(presence.note->substr(0, 60)) + "': at most " +
                                     std::to_string(kMaxNoteBytes) + " bytes of UTF-8, one line, no control character");
}

std::uint64_t SlotLifecycle::renew(const SessionEntry& entry, const Presence& presence, SessionEntry* written) const {
  return same_session_cas(entry, "renewing", [&](SessionEntry& current) {
    // Only last_renewed and the presence asked change (and the session
    // token is kept from now on); every other field (a newer client's too)
    // stays.
    current.session->session_token = current.token();
    current.session->last_renewed = clock_();
    presence.apply_to(*current.session);
    const std::uint64_t revision = store_.update(*current.session, current.revision);
    if (written != nullptr) {
      *written = current;
      written->revision = revision;
    }
    return revision;
  });
}

std::uint64_t SlotLifecycle::renew(const SessionEntry& entry, std::optional<LeaseEntry> task_lease,
                                   std::vector<std::string>* warnings, const Presence& presence,
                                   SessionEntry* written, std::optional<LeaseEntry>* task_written) const {
  if (task_written != nullptr) task_written->reset();
  const Session& s = *entry.session;
  auto warn = [&](const std::string& w) {
    if (warnings != nullptr && !w.empty()) warnings->push_back(w);
  };
  const std::optional<PortBlock> block = s.port_block();
  if (s.task_id.empty() && !block && s.holds.empty() && presence.add_holds.empty())
    return renew(entry, presence, written);
  // The leases that live with the session, as held now: each one the slot
  // still holds is renewed in the session's round trip; one released or
  // taken meanwhile is claimed again after, if it is free.
  Session renewed = s;
  renewed.last_renewed = clock_();
  renewed.session_token = entry.token();
  presence.apply_to(renewed);
  std::vector<kv::Bucket::Write> writes = {{&store_.bucket(), s.slot, "", entry.revision}};
  int task_write = -1, block_write = -1;
  // Read before the session's value is written out: a lost hold leaves its list.
  const HoldsRenewal holds = renew_holds(entry, renewed, writes, warn);
  writes[0].value = to_json(renewed);
  if (!s.task_id.empty()) {
    if (!task_lease) task_lease = translating_kv([&] { return tasks_.read(s.task_id); });
    if (task_lease && TaskLeases::held_by(*task_lease, s.slot, s.task_id)) {
      task_write = static_cast<int>(writes.size());
      writes.push_back(tasks_.renewal(*task_lease, store_.ttl()));
    }
  }
  std::optional<LeaseEntry> block_held;
  if (block) {
    auto held = read_arriving([&] { return translating_kv([&] { return ports_.read(*block); }); });
    if (held.value && translating_kv([&] { return ports_.renewable(*held.value, held.at, s.slot); })) {
      block_write = static_cast<int>(writes.size());
      writes.push_back(ports_.renewal(*held.value, store_.ttl()));
      block_held = held.value;
    }
  }
  std::uint64_t revision = 0;
  std::vector<kv::Bucket::WriteResult> results;
  auto kept = [&](int index) { return index > 0 && !results[static_cast<std::size_t>(index)].error; };
  if (writes.size() == 1 && renewed.holds == s.holds) {
    revision = renew(entry, presence, written);
  } else {
    results = kv::Bucket::update_together(writes);
    revision = results[0].revision;
    if (!results[0].error && written != nullptr) {
      *written = entry;
      written->session = renewed;
      written->revision = revision;
    }
    if (results[0].error) {
      const Error failed = from_kv(*results[0].error);
      if (failed.kind() != Errc::conflict) throw failed;  // it may have landed: the leases stay
      try {
        revision = renew(entry, presence, written);  // lost a race: reread, and go on only for the same session
      } catch (const Error& e) {
        // The session is gone (or another's now): a block renewed beside it is given up.
        if (e.kind() == Errc::not_found || e.kind() == Errc::conflict) {
          if (kept(block_write)) ports_.give_up(*block_held);
          // Its holds too: nothing renews them any more.
          for (std::size_t i = 0; i < holds.held.size(); ++i)
            if (kept(holds.at[i])) holds_.release(holds.held[i].name, holds.held[i].token());
        }
        throw;
      }
    }
  }
  if (kept(task_write) && task_written != nullptr) {
    // As the renewal wrote it (renewal_of): its token kept, the TTL of now.
    LeaseEntry renewed_lease = *task_lease;
    renewed_lease.revision = results[static_cast<std::size_t>(task_write)].revision;
    renewed_lease.record->token = task_lease->token();
    renewed_lease.record->ttl = store_.ttl();
    *task_written = std::move(renewed_lease);
  }
  if (!s.task_id.empty() && !kept(task_write)) warn(tasks_.reclaim(s.slot, s.task_id, s.leaf_pid));
  if (block && !kept(block_write)) warn(ports_.reclaim(s.slot, *block, s.leaf_pid));
  if (kept(block_write))
    warn(ports_.confirm_renewal(s.slot, *block, *block_held, results[static_cast<std::size_t>(block_write)].revision));
  for (std::size_t i = 0; i < holds.held.size(); ++i) {
    if (kept(holds.at[i]))
      warn(holds_.confirm_renewal(holds.held[i], holds.arrived,
                                  results[static_cast<std::size_t>(holds.at[i])].revision));
    else if (!results.empty())
      warn("the hold " + holds.held[i].name + " was not renewed (it changed meanwhile); the next renewal looks again");
  }
  return revision;
}

SlotLifecycle::HoldsRenewal SlotLifecycle::renew_holds(const SessionEntry& entry, Session& renewed,
                                                       std::vector<kv::Bucket::Write>& writes,
                                                       const std::function<void(const std::string&)>& warn) const {
  HoldsRenewal out;
  const Session& s = *entry.session;
  if (renewed.holds.empty()) return out;
  // The names as the record has them after this write's changes; one that
  // names no hold of this slot (planted) is dropped.
  const std::vector<std::string> named = renewed.holds;
  renewed.holds = names_of_slot(s.slot, named);
  if (renewed.holds.size() != named.size())
    warn("the record of slot " + s.slot + " named holds that are none of its own; they are no longer named");
  if (renewed.holds.empty()) return out;
  auto read = translating_kv([&] { return holds_.read(renewed.holds); });
  out.arrived = read.at;
  const std::vector<std::string> names = std::move(renewed.holds);
  renewed.holds.clear();
  for (const auto& name : names) {
    auto it = std::find_if(read.value.begin(), read.value.end(), [&](const LeaseEntry& e) { return e.name == name; });
    if (it != read.value.end() && translating_kv([&] { return holds_.renewable(*it, read.at, s.slot, entry.token()); })) {
      out.at.push_back(static_cast<int>(writes.size()));
      writes.push_back(holds_.renewal(*it, store_.ttl()));
      out.held.push_back(*it);
      renewed.holds.push_back(name);
      continue;
    }
    warn("the hold " + name + " of slot " + s.slot + " was lost (" +
         (it == read.value.end() ? std::string("released") : hold_of(*it, s.slot, entry.token()) ? "expired" : "now another's") +
         "); hold its paths again with `swarm hold`");
  }
  return out;
}

std::vector<std::string> SlotLifecycle::release_leases(const SessionEntry& entry) const {
  std::vector<std::string> warnings;
  const Session& s = *entry.session;
  if (auto w = tasks_.release(s.slot, s.task_id); !w.empty()) warnings.push_back(w);
  if (auto block = s.port_block())
    if (auto w = ports_.release(s.slot, *block); !w.empty()) warnings.push_back(w);
  for (auto& w : holds_.release_all(s.slot, entry.token(), s.holds)) warnings.push_back(std::move(w));
  return warnings;
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

std::string with_provenance(const std::string& message, const Session& session, std::uint64_t token) {
  std::string out = message;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  // A last paragraph of "Key: value" lines is a trailer block already:
  // ours join it, as `git interpret-trailers` would; else they start one.
  const auto last_break = out.rfind("\n\n");
  bool in_trailers = last_break != std::string::npos;
  for (std::size_t at = in_trailers ? last_break + 2 : out.size(); in_trailers && at < out.size();) {
    auto end = out.find('\n', at);
    const std::string line = out.substr(at, end == std::string::npos ? std::string::npos : end - at);
    const auto colon = line.find(": ");
    in_trailers = colon != std::string::npos && colon > 0 &&
                  std::all_of(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(colon), [](char c) {
                    return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
                  });
    at = end == std::string::npos ? out.size() : end + 1;
  }
  out += in_trailers ? "\n" : "\n\n";
  out += "Swarm-Slot: " + session.slot + "\nSwarm-Task: " + trailer_value(session.task_id) + "\nSwarm-Session: " +
         std::to_string(token) + "\n";
  return out;
}

CommitResult SlotLifecycle::commit(const std::string& slot, const std::string& message,
                                   const std::vector<std::string>& paths, ExpectedSession session) {
  if (message.empty()) throw Error(Errc::bad_input, "an empty commit message; say what changed with -m");
  require_slot_name(slot);
  // No close or doctor --fix of this host removes the folder while we commit.
  FileLock folder_lock = lock_slot(workspace_, slot, "commit of slot " + slot);
  SessionEntry entry = read_own(slot, session);
  Worktree worktree = open_worktree(slot);
  CommitResult result;
  result.branch = worktree.branch();
  result.token = entry.token();
  result.task_id = entry.session->task_id;
  result.commit = worktree.commit(with_provenance(message, *entry.session, entry.token()), paths,
                                  author_of(*entry.session), holds_guard(entry, result));
  // Also with nothing new to commit, when the hub lacks what the branch has
  // (an earlier push did not get through, plain git commits, a hub branch
  // deleted or moved back).
  try {
    if (result.commit || worktree.hub_lacks_branch()) {
      worktree.push();
      result.pushed = true;
    }
  } catch (const Error& e) {
    result.warnings.push_back(std::string("push failed, the commit stands locally: ") + e.what());
  }
  try {
    result.revision = renew(entry, std::nullopt, &result.warnings);
  } catch (const Error& e) {
    result.warnings.push_back(std::string("renewal failed: ") + e.what());
  }
  // A commit that made nothing and pushed nothing is no act (a renewal).
  if (result.commit || result.pushed)
    journal_.record(commit_event(store_.bucket_name(), entry, result, Actor::here(me_)));
  if (!result.held.empty()) {
    result.warnings.push_back("this commit changes paths other slots hold: " + held_paths_text(result.held) +
                              "; tell them (`swarm send`), or let the workspace refuse such commits with "
                              "`swarm up --holds refuse`");
    journal_.record(hold_conflict_event(store_.bucket_name(), entry.slot, entry.session->task_id, entry.token(),
                                        result.revision != 0 ? result.revision : entry.revision, "commit",
                                        result.held, "warn", Actor::here(me_)));
  }
  return result;
}

CommitGuard SlotLifecycle::holds_guard(const SessionEntry& entry, CommitResult& result) const {
  // Listed while git stages and writes the tree: the guard waits for it
  // only when the commit has changes to compare.
  std::shared_future<std::vector<LeaseEntry>> listed =
      std::async(std::launch::async, [this, slot = entry.slot] {
        return translating_kv([&] { return holds_.live_exclusive_of_others(slot, HoldStore::Listing::replay); });
      }).share();
  return [this, &entry, &result, listed](const std::vector<std::string>& paths) {
    std::vector<LeaseEntry> others;
    try {
      others = listed.get();
    } catch (const Error& e) {
      // Under warn the comparison is advice: the commit goes on, saying so.
      if (config_.holds == HoldPolicy::refuse) throw;
      result.warnings.push_back(std::string("the holds of other slots could not be read, so this commit was not "
                                            "compared with them: ") + e.what());
      return;
    }
    if (others.empty()) return;
    result.held = held_elsewhere(others, entry.slot, paths);
    if (result.held.empty() || config_.holds != HoldPolicy::refuse) return;
    // Revision 0: a refused commit wrote nothing (the event gets an id of its own).
    journal_.record(hold_conflict_event(store_.bucket_name(), entry.slot, entry.session->task_id, entry.token(), 0,
                                        "commit", result.held, "refuse", Actor::here(me_)));
    throw Error(Errc::conflict, "nothing was committed: this commit changes paths other slots hold exclusively: " +
                                    held_paths_text(result.held) + ", and the workspace refuses such commits "
                                    "(`swarm up --holds refuse`); wait for their holds to end (`swarm holds`), "
                                    "or leave those paths out");
  };
}

Worktree SlotLifecycle::open_worktree(const std::string& slot) const {
  if (!has_worktree(slot))
    throw Error(Errc::not_found, "slot " + slot + " has no worktree at " + workspace_.worktree(slot).string() +
                                     "; close the slot and join it again");
  return Worktree::open(workspace_.worktree(slot), slot, hub_);
}

CommitAuthor SlotLifecycle::author_of(const Session& session) const {
  // From the record, so data: one line, escaped, with nothing that ends a
  // signature's name or mail (a newline would add a header to the commit).
  auto clean = [](const std::string& text) {
    std::string out = printable(text);
    for (char& c : out)
      if (c == '<' || c == '>') c = '_';
    return out;
  };
  const std::string name = session.agent_id.empty() ? "swarm" : clean(session.agent_id);
  return {name, name + "@" + clean(me_.host)};
}

std::uint64_t SlotLifecycle::renew(const std::string& slot, std::vector<std::string>* warnings,
                                   ExpectedSession session, const Presence& presence) {
  require_presence(presence);
  return renew(read_own(slot, session), std::nullopt, warnings, presence);
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
