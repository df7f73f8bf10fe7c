// Doctor's checks of the leases, and their fixes: corrupt records, leases
// held by a process of this host that is gone, task leases and holds whose
// session is gone (problems: --fix removes or releases them, this host's
// only), and expired leases (a notice).
#include <algorithm>

#include "swarm/base/duration.h"
#include "swarm/base/text.h"
#include "swarm/doctor/checks.h"
#include "swarm/holds/hold_store.h"
#include "swarm/slots/port_block.h"

namespace swarm::doctor {

bool block_is_orphan(const LeaseEntry& lease, const LeaseInput& in) {
  const auto block = port_block_of(lease.name);
  if (!block || lease.corrupt() || lease.record->slot.empty()) return false;
  const SessionBrief* b = find_brief(in.sessions, lease.record->slot);
  return b == nullptr || b->corrupt || in.erased_slots.count(lease.record->slot) != 0 || b->ports != block;
}

bool task_is_orphan(const LeaseRecord& r, const LeaseInput& in) {
  if (r.slot.empty()) return false;
  const SessionBrief* b = find_brief(in.sessions, r.slot);
  const bool has_session = b != nullptr && !b->corrupt && in.erased_slots.count(r.slot) == 0 && b->task_id == r.task;
  return !has_session;
}

bool hold_is_orphan(const LeaseEntry& hold, const LeaseInput& in) {
  if (hold.corrupt() || !hold_slot_of(hold.name)) return false;
  const LeaseRecord& r = *hold.record;
  const SessionBrief* b = find_brief(in.sessions, r.slot);
  return b == nullptr || b->corrupt || in.erased_slots.count(r.slot) != 0 || b->token != r.session;
}

namespace {

// Whether the slot's session (the same one the hold was taken for) names it.
bool hold_is_named(const LeaseEntry& hold, const LeaseInput& in) {
  const SessionBrief* b = find_brief(in.sessions, hold.record->slot);
  return b != nullptr && std::find(b->holds.begin(), b->holds.end(), hold.name) != b->holds.end();
}

Finding orphan_hold(const LeaseEntry& lease, const LeaseStanding& standing, bool mine) {
  const LeaseRecord& r = *lease.record;
  return make_finding(mine ? Severity::problem : Severity::notice, FindingKind::orphan_hold, lease.name,
                      "hold " + lease.name + " of slot " + printable(r.slot) + " (host " + printable(r.host) +
                          ") outlived its session " + std::to_string(r.session) +
                          ", so nothing renews it; it stands in others' way for up to " +
                          format_duration(std::chrono::duration_cast<std::chrono::seconds>(standing.left)),
                      mine ? "swarm doctor --fix" : "on " + printable(r.host) + ": swarm doctor --fix");
}

// A hold its own session does not name: one being taken now (it is named
// right after its grant), or one a killed `swarm hold` left. Only said.
Finding unnamed_hold(const LeaseEntry& lease, const LeaseStanding& standing) {
  const LeaseRecord& r = *lease.record;
  return make_finding(Severity::notice, FindingKind::orphan_hold, lease.name,
                      "hold " + lease.name + " of slot " + printable(r.slot) +
                          " is named by no session (a `swarm hold` under way, or one that was killed); it expires "
                          "within " + format_duration(std::chrono::duration_cast<std::chrono::seconds>(standing.left)),
                      "nothing to do");
}

Finding corrupt_lease(const LeaseEntry& lease) {
  return make_finding(Severity::problem, FindingKind::corrupt_lease, lease.name,
                      "the record of lease " + lease.name + " is corrupt (" + lease.corrupt_reason + ")",
                      "swarm doctor --fix");
}

Finding expired_lease(const LeaseEntry& lease, const LeaseStanding& standing) {
  const LeaseRecord& r = *lease.record;
  const std::string token = std::to_string(lease.token());
  return make_finding(Severity::notice, FindingKind::expired_lease, lease.name,
                      "lease " + lease.name + " (" + r.holder + ", token " + token + ") expired " +
                          ago(standing.age - r.ttl) +
                          "; its holder stopped renewing it, and the next to ask takes it",
                      "nothing to do   (or: swarm lease release " + lease.name + " --token " + token + ")");
}

Finding orphan_task_lease(const LeaseEntry& lease, const LeaseStanding& standing, bool mine) {
  const LeaseRecord& r = *lease.record;
  return make_finding(mine ? Severity::problem : Severity::notice, FindingKind::orphan_task_lease, lease.name,
                      "lease " + lease.name + " claims task " + r.task + " for slot " + r.slot +
                          ", which has no session for that task; it expires within " +
                          format_duration(std::chrono::duration_cast<std::chrono::seconds>(standing.left)) +
                          " unless released",
                      mine ? "swarm doctor --fix" : "on " + r.host + ": swarm doctor --fix");
}

// A join takes its block a moment before it writes the session that names
// it: a block no session names is a join under way that long (its TTL's
// third, at most 30 s, since its grant or its last renewal).
std::chrono::milliseconds join_grace(const LeaseRecord& r) {
  return std::min<std::chrono::milliseconds>(r.ttl / 3, std::chrono::seconds(30));
}

// A block of ports no session names: a join under way (only said: removing
// it would take a joining slot's), or, past the grace, one a killed join
// left or whose session is gone or names another block (any host's: it
// holds its ports from every slot until its TTL runs out; --fix releases it).
Finding orphan_port_block(const LeaseEntry& lease, const LeaseStanding& standing) {
  const LeaseRecord& r = *lease.record;
  const std::string left = format_duration(std::chrono::duration_cast<std::chrono::seconds>(standing.left));
  if (standing.age < join_grace(r))
    return make_finding(Severity::notice, FindingKind::orphan_port_block, lease.name,
                        "port block " + lease.name + " of slot " + printable(r.slot) + " (host " + printable(r.host) +
                            ") is named by no session yet (a join under way); it expires within " + left,
                        "nothing to do");
  return make_finding(Severity::problem, FindingKind::orphan_port_block, lease.name,
                      "port block " + lease.name + " of slot " + printable(r.slot) + " (host " + printable(r.host) +
                          ") is named by no live session (a join that was killed, or a session gone or holding "
                          "another block), so nothing renews it; it keeps its ports from every slot for up to " + left,
                      "swarm doctor --fix");
}

Finding dead_holder(const LeaseEntry& lease) {
  const LeaseRecord& r = *lease.record;
  return make_finding(Severity::problem, FindingKind::dead_holder, lease.name,
                      "lease " + lease.name + " is held by process " + std::to_string(r.pid) + " of this host (" +
                          r.holder + "), which is gone",
                      "swarm doctor --fix   (or: swarm lease release " + lease.name + " --token " +
                          std::to_string(lease.token()) + ")");
}

// The finding one lease makes, if any.
std::optional<Finding> lease_finding(const LeaseInput& in, const LeaseEntry& lease) {
  if (lease.corrupt()) return corrupt_lease(lease);
  const LeaseRecord& r = *lease.record;
  auto standing = standing_of(lease, in.server_now());
  const bool mine = in.me.owns(r.host, r.host_id);
  if (standing.state == LeaseState::expired) return expired_lease(lease, standing);
  // A port block lives with its session: never a process's to check.
  if (port_block_of(lease.name)) {
    if (!block_is_orphan(lease, in)) return std::nullopt;
    return orphan_port_block(lease, standing);
  }
  // A hold lives with its session too.
  if (hold_slot_of(lease.name)) {
    if (hold_is_orphan(lease, in)) return orphan_hold(lease, standing, mine);
    if (!hold_is_named(lease, in)) return unnamed_hold(lease, standing);
    return std::nullopt;
  }
  // A task lease lives with its session.
  if (!r.slot.empty()) {
    if (!task_is_orphan(r, in)) return std::nullopt;
    return orphan_task_lease(lease, standing, mine);
  }
  if (mine && r.pid != 0 && !in.process_alive(r.pid, r.pid_start)) return dead_holder(lease);
  return std::nullopt;
}

}  // namespace

Findings check_leases(const LeaseInput& in) {
  Findings out;
  for (const auto& lease : in.leases)
    if (auto f = lease_finding(in, lease)) out.push_back(std::move(*f));
  return out;
}

namespace {

// Releases a lease for the grant read (its token): a renewal meanwhile
// keeps it, a new grant is left alone.
void release_lease(const LeaseStore& store, const LeaseEntry& lease, Finding& f) {
  try {
    store.release(lease.name, lease.token());
    f.fixed = true;
    f.fix_note = "released lease " + lease.name + " (token " + std::to_string(lease.token()) + ")";
  } catch (const Error& e) {
    if (e.kind() != Errc::conflict && e.kind() != Errc::not_found) throw;
    f.severity = Severity::notice;
    f.fix_note = std::string("left alone: ") + e.what();
  }
}

void erase_lease(const LeaseStore& store, const LeaseEntry& lease, Finding& f, const std::string& done) {
  try {
    store.keys().erase(lease.name, lease.revision);
    f.fixed = true;
    f.fix_note = done;
  } catch (const Error& e) {
    if (e.kind() != Errc::conflict) throw;
    f.severity = Severity::notice;
    f.fix_note = "the record changed meanwhile; left alone";
  }
}

// A join writes its session before its task lease: look again first.
void fix_orphan_task_lease(const FixInput& in, const LeaseEntry& lease, Finding& f) {
  const LeaseRecord& r = *lease.record;
  if (auto now = in.sessions->get(r.slot); now && !now->corrupt() && now->session->task_id == r.task) {
    f.severity = Severity::notice;
    f.fix_note = "a session took the task meanwhile; left alone";
  } else {
    release_lease(*in.leases, lease, f);
  }
}

// Looked at again first: a session that names the block now (a join that
// was under way) keeps it.
void fix_orphan_port_block(const FixInput& in, const LeaseEntry& lease, Finding& f) {
  const LeaseRecord& r = *lease.record;
  auto now = in.sessions->get(r.slot);
  if (now && !now->corrupt() && now->session->port_block() == port_block_of(lease.name)) {
    f.severity = Severity::notice;
    f.fix_note = "a session names it now; left alone";
  } else {
    release_lease(*in.leases, lease, f);
  }
}

// Looked at again first: a session of that token (a join that replaced
// it cannot have one) means the hold still has its session.
void fix_orphan_hold(const FixInput& in, const LeaseEntry& lease, Finding& f) {
  const LeaseRecord& r = *lease.record;
  if (auto now = in.sessions->get(r.slot); now && !now->corrupt() && now->token() == r.session) {
    f.severity = Severity::notice;
    f.fix_note = "its session is there after all; left alone";
  } else {
    release_lease(*in.leases, lease, f);
  }
}

}  // namespace

void fix_lease(Finding& f, const FixInput& in, FixResult&) {
  const LeaseInput& listed = *in.lease_input;
  auto it = in.lease_entries.find(f.subject);
  if (it == in.lease_entries.end()) return;
  const LeaseEntry& lease = *it->second;
  switch (f.kind) {
    case FindingKind::corrupt_lease: erase_lease(*in.leases, lease, f, "removed the corrupt lease record"); break;
    case FindingKind::expired_lease:
      // This host's task lease of a session that is gone: tidied away.
      if (listed.me.owns(lease.record->host, lease.record->host_id) && !port_block_of(lease.name) &&
          (hold_slot_of(lease.name) ? hold_is_orphan(lease, listed) : task_is_orphan(*lease.record, listed)))
        release_lease(*in.leases, lease, f);
      break;
    case FindingKind::orphan_task_lease:
      if (listed.me.owns(lease.record->host, lease.record->host_id)) fix_orphan_task_lease(in, lease, f);
      break;
    case FindingKind::dead_holder: release_lease(*in.leases, lease, f); break;
    case FindingKind::orphan_port_block:
      // Only one past its join's grace (a problem), of whichever host.
      if (f.severity == Severity::problem) fix_orphan_port_block(in, lease, f);
      break;
    case FindingKind::orphan_hold:
      // Only one whose session is gone (a notice of an unnamed hold is
      // left to expire: it may be a hold being taken), and this host's.
      if (f.severity == Severity::problem && listed.me.owns(lease.record->host, lease.record->host_id))
        fix_orphan_hold(in, lease, f);
      break;
    default: break;
  }
}

}  // namespace swarm::doctor
