// Doctor's fix pass: for each finding a fix is known for, what is safe on
// this host, by CAS on what was read and under the slot's lock, looking
// again once the lock is held.
#include "swarm/doctor/checks.h"
#include "swarm/journal/journal.h"
#include "swarm/base/log.h"
#include "swarm/base/text.h"
#include "swarm/slots/folder.h"
#include "swarm/slots/liveness.h"

namespace swarm::doctor {

namespace fs = std::filesystem;

namespace {

// What `doctor --fix` did to a slot or a lease (`check`: the finding's kind).
Event fix_event(Thing thing, std::string_view bucket, std::string_view name, std::string_view check,
                const std::string& note, std::uint64_t revision, const Actor& actor) {
  Event e = thing == Thing::slot ? slot_event("fix", bucket, name, actor, {}, 0, revision)
                                 : lease_event("fix", bucket, name, actor, 0, revision);
  e.detail.set("check", check).set("did", note);
  return e;
}

using Fixer = void (*)(Finding&, const FixInput&, FixResult&);

// The kinds --fix repairs; the others it leaves to the command they name.
// unsafe_path is never here: swarm never follows, empties or fixes it.
struct FixRow {
  FindingKind kind;
  Fixer fix;
};
constexpr FixRow kFixers[] = {
    {FindingKind::unfinished_removal, fix_unfinished_removal},
    {FindingKind::corrupt_record, fix_corrupt_record},
    {FindingKind::stale_session, fix_stale_session},
    {FindingKind::dead_session, fix_dead_session},
    {FindingKind::missing_folder, fix_missing_folder},
    {FindingKind::orphan_folder, fix_orphan_folder},
    {FindingKind::corrupt_lease, fix_lease},
    {FindingKind::expired_lease, fix_lease},
    {FindingKind::orphan_task_lease, fix_lease},
    {FindingKind::orphan_hold, fix_lease},
    {FindingKind::orphan_port_block, fix_lease},
    {FindingKind::dead_holder, fix_lease},
    {FindingKind::corrupt_task, fix_corrupt_task},
};

// CAS delete at the revision read: a session that renewed meanwhile survives.
bool erase_record(const FixInput& in, const SessionEntry& entry, Finding& f, const std::string& done, FixResult& result) {
  try {
    in.sessions->erase(entry);
    result.erased_slots.insert(entry.slot);
    f.fixed = true;
    f.fix_note = done;
    swarm::log::debug("doctor: {} of slot {} (revision {})", done, entry.slot, entry.revision);
    return true;
  } catch (const Error& e) {
    if (e.kind() != Errc::conflict) throw;
    f.severity = Severity::notice;
    f.fix_note = "the record changed meanwhile (renewed or replaced); left alone";
    return false;
  }
}

// What --fix did to a slot folder it removed.
std::string removal_note(const FixInput& in, const std::string& slot, const Removal& removal, std::string note) {
  const Salvage& salvage = removal.salvage;
  note += "removed " + in.ws.slot_dir(slot).string();
  if (salvage.files > 0)
    note += " after salvaging " + std::to_string(salvage.files) + " file(s) to " + salvage.folder.string();
  if (salvage.unreadable_repository) note += " (every file kept, its .git whole: the repository could not be read)";
  if (!salvage.commits_ref.empty()) note += "; history the hub lacked is in the hub under " + salvage.commits_ref;
  return note;
}

// Salvages and removes a slot folder; the caller holds the slot's lock.
void remove_folder(const FixInput& in, const std::string& slot, Finding& f) {
  if (!in.folders_elsewhere.empty()) {
    f.fixed = false;
    f.fix_note = "left alone: the records were read from another server or bucket than config.json's (" +
                 in.folders_elsewhere + "), where this slot may well have a session; run doctor without it";
    return;
  }
  if (!in.hub->hub) {
    f.fixed = false;
    f.fix_note = "left alone: the hub is missing, and salvage keeps history there; fix the hub first";
    return;
  }
  Removal removal;
  try {
    removal = remove_slot_folder(in.ws, slot, in.hub->where, in.clock());
  } catch (const std::exception& e) {
    f.fixed = false;
    f.fix_note = std::string("left alone: could not salvage it first: ") + e.what();
    return;
  }
  std::string note = f.fix_note.empty() ? "" : f.fix_note + "; ";
  if (!removal.removed) {
    f.fixed = false;
    f.fix_note = note + "salvaged, but " + removal.warning;
    return;
  }
  f.fixed = true;
  f.fix_note = removal_note(in, slot, removal, note);
}

const SessionEntry* record_of(const FixInput& in, const Finding& f) {
  auto it = in.records.find(f.subject);
  return it == in.records.end() ? nullptr : it->second;
}

std::string doing(const std::string& slot) { return "doctor --fix of slot " + slot; }

}  // namespace

void busy(const Workspace& ws, Finding& f, const std::string& slot) {
  f.fix_note = "left alone: another swarm process is working on the slot's folder (" + slot_lock_holder(ws, slot) +
               "); run doctor again when it is done";
}

void kept_by_run(const Workspace& ws, Finding& f, const std::string& slot) {
  f.fix_note = "left alone: a `swarm run` of this host keeps the slot (" + run_lock_holder(ws, slot) +
               "); it stops its agent before the session's deadline";
}

namespace {

// The `fix` event of a repair: about the slot or lease it repaired, at the
// revision of the record it read (0 for a folder alone).
void journal_fix(const Finding& f, const FixInput& in) {
  if (in.journal == nullptr) return;
  const std::string check(to_string(f.kind));
  if (f.kind == FindingKind::corrupt_task && in.tasks != nullptr) {
    auto it = in.task_entries.find(f.subject);
    Event e = task_event("fix", in.tasks->bucket_name(), f.subject, in.actor, "",
                         it != in.task_entries.end() ? it->second->revision : 0);
    e.detail.set("check", check).set("did", f.fix_note);
    in.journal->record(e);
    return;
  }
  const bool about_lease = f.kind == FindingKind::corrupt_lease || f.kind == FindingKind::expired_lease ||
                           f.kind == FindingKind::orphan_task_lease || f.kind == FindingKind::dead_holder ||
                           f.kind == FindingKind::orphan_hold || f.kind == FindingKind::orphan_port_block;
  if (about_lease && in.leases != nullptr) {
    auto it = in.lease_entries.find(f.subject);
    const std::uint64_t revision = it != in.lease_entries.end() ? it->second->revision : 0;
    in.journal->record(fix_event(Thing::lease, in.leases->bucket_name(), f.subject, check, f.fix_note, revision,
                                 in.actor));
    return;
  }
  if (in.sessions == nullptr) return;
  std::string slot = f.subject;
  if (f.kind == FindingKind::unfinished_removal) {
    const std::string name = fs::path(f.subject).filename().string();
    slot = name.substr(0, name.find('.'));
  }
  const SessionEntry* entry = record_of(in, f);
  in.journal->record(fix_event(Thing::slot, in.sessions->bucket_name(), slot, check, f.fix_note,
                               entry != nullptr ? entry->revision : 0, in.actor));
}

}  // namespace

void fix_findings(std::span<Finding> findings, const FixInput& in, FixResult& result) {
  for (auto& f : findings)
    for (const auto& row : kFixers)
      if (row.kind == f.kind) {
        row.fix(f, in, result);
        if (f.fixed) journal_fix(f, in);
      }
}

void fix_corrupt_record(Finding& f, const FixInput& in, FixResult& result) {
  if (const SessionEntry* entry = record_of(in, f)) erase_record(in, *entry, f, "removed the corrupt record", result);
}

namespace {

// The slot's run lock and folder lock, for a fix that removes a session of
// this host and its folder: nullopt (the finding says why) while a live
// `swarm run` keeps the slot or another process works on its folder.
std::optional<std::pair<FileLock, FileLock>> lock_session_folder(const FixInput& in, Finding& f,
                                                                 const std::string& slot) {
  auto run = try_lock_run(in.ws, slot, doing(slot));
  if (!run) {
    kept_by_run(in.ws, f, slot);
    return std::nullopt;
  }
  auto lock = try_lock_slot(in.ws, slot, doing(slot));
  if (!lock) {
    busy(in.ws, f, slot);
    return std::nullopt;
  }
  return std::pair{std::move(*run), std::move(*lock)};
}

}  // namespace

void fix_stale_session(Finding& f, const FixInput& in, FixResult& result) {
  const SessionEntry* entry = record_of(in, f);
  if (entry == nullptr || !in.here->me.owns(*entry->session)) return;
  const std::string& slot = entry->slot;
  if (!in.age_is_certain) {
    f.fix_note = "not fixed: the server's clock could not be read, so the age is not certain";
    return;
  }
  // A run of this host that still lives keeps its folder: its agent is
  // stopped by the run before the session's deadline, not here.
  auto locks = lock_session_folder(in, f, slot);
  if (!locks) return;
  // By CAS on the revision read: a session that renewed meanwhile survives.
  if (erase_record(in, *entry, f, "removed the stale record", result) && has_folder(in.ws, slot)) remove_folder(in, slot, f);
}

void fix_dead_session(Finding& f, const FixInput& in, FixResult& result) {
  const SessionEntry* entry = record_of(in, f);
  if (entry == nullptr || !in.here->me.owns(*entry->session)) return;
  const std::string& slot = entry->slot;
  // A run alive holds its lock: then it is not dead, whatever was read.
  auto locks = lock_session_folder(in, f, slot);
  if (!locks) return;
  const Session& s = *entry->session;
  if (!run_is_gone(s.leaf_pid, s.leaf_start, s.agent_pid, s.agent_start)) {
    f.severity = Severity::notice;
    f.fix_note = "its run is alive after all; left alone";
    return;
  }
  // By CAS on the revision read: a session that changed meanwhile survives.
  if (erase_record(in, *entry, f, "removed the dead run's record", result) && has_folder(in.ws, slot))
    remove_folder(in, slot, f);
}

void fix_missing_folder(Finding& f, const FixInput& in, FixResult& result) {
  const SessionEntry* entry = record_of(in, f);
  if (entry == nullptr) return;
  const std::string& slot = entry->slot;
  // A join holds the lock from before its record until its folder is made.
  auto lock = try_lock_slot(in.ws, slot, doing(slot));
  if (!lock) {
    busy(in.ws, f, slot);
    return;
  }
  if (!has_folder(in.ws, slot)) erase_record(in, *entry, f, "removed the record whose folder was gone", result);
}

void fix_orphan_folder(Finding& f, const FixInput& in, FixResult&) {
  const std::string& slot = f.subject;
  auto lock = try_lock_slot(in.ws, slot, doing(slot));
  if (!lock) {
    busy(in.ws, f, slot);
    return;
  }
  // A join that took the slot before we locked it wrote its record first: look again.
  if (auto now = in.sessions->get(slot); now && in.here->has_record_here(*now)) {
    f.fix_note = "a session took the slot meanwhile; left alone";
    f.severity = Severity::notice;
    return;
  }
  remove_folder(in, slot, f);
}

void fix_unfinished_removal(Finding& f, const FixInput& in, FixResult&) {
  const std::string leftover = f.subject;
  const std::string name = fs::path(leftover).filename().string();
  std::string slot = name.substr(0, name.find('.'));
  auto lock = try_lock_slot(in.ws, slot, doing(slot));
  if (!lock) {
    busy(in.ws, f, slot);
    return;
  }
  if (auto problem = finish_removal(in.ws, name); !problem.empty()) {
    f.fix_note = problem;
    return;
  }
  f.fixed = true;
  f.fix_note = "deleted " + leftover;
}

Findings check_task_records(const std::vector<TaskEntry>& tasks) {
  Findings out;
  for (const auto& t : tasks)
    if (t.corrupt())
    {
      // A schema or a state this version does not know may be a newer
      // swarm's record: said, never removed.
      const bool newer = t.corrupt_reason.rfind("schema is", 0) == 0 || t.corrupt_reason.rfind("unknown state", 0) == 0;
      out.push_back(make_finding(newer ? Severity::notice : Severity::problem, FindingKind::corrupt_task, t.key,
                                 "the task record under key " + printable(t.key) + " is " +
                                     (newer ? "not one this version reads (" : "corrupt (") +
                                     printable(t.corrupt_reason) + "): claims skip it",
                                 newer ? "upgrade swarm on this host, or edit the record with a newer one"
                                       : "swarm doctor --fix   (removes it; `swarm task import` can bring a good copy "
                                         "back)"));
    }
  return out;
}

// CAS delete at the revision read: a record rewritten meanwhile (mended by
// its writer) survives.
void fix_corrupt_task(Finding& f, const FixInput& in, FixResult&) {
  if (in.tasks == nullptr) return;
  if (f.severity == Severity::notice) {
    f.fix_note = "left alone: it may be a newer swarm's record";
    return;
  }
  auto it = in.task_entries.find(f.subject);
  if (it == in.task_entries.end()) return;
  try {
    in.tasks->erase(it->second->key, it->second->revision);
    f.fixed = true;
    f.fix_note = "removed the corrupt task record";
  } catch (const Error& e) {
    if (e.kind() != Errc::conflict) throw;
    f.severity = Severity::notice;
    f.fix_note = "the record changed meanwhile; left alone";
  }
}

}  // namespace swarm::doctor
