#include "swarm/status.h"

#include <algorithm>
#include <unordered_map>

namespace swarm {

SessionRow row_of(SessionEntry entry, std::chrono::milliseconds ttl, TimePoint now, const HostIdentity& me) {
  SessionRow row;
  row.age = age_of(entry.stored_at, now);
  row.state = entry.corrupt() ? State::corrupt : state_of(row.age, ttl);
  row.local = !entry.corrupt() && me.owns(*entry.session);
  row.entry = std::move(entry);
  return row;
}

std::vector<SessionRow> rows_of(std::vector<SessionEntry> entries, std::chrono::milliseconds ttl, TimePoint now,
                                const HostIdentity& me) {
  // Sort indices, then move each entry once: rows are too big to shuffle.
  std::vector<std::size_t> order(entries.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return entries[a].slot < entries[b].slot; });
  std::vector<SessionRow> rows;
  rows.reserve(entries.size());
  for (std::size_t i : order) rows.push_back(row_of(std::move(entries[i]), ttl, now, me));
  return rows;
}

void note_task_leases(std::vector<SessionRow>& rows, const std::vector<LeaseEntry>& task_leases, TimePoint now) {
  std::unordered_map<std::string, const LeaseEntry*> by_name;
  for (const auto& lease : task_leases) by_name[lease.name] = &lease;
  for (auto& row : rows) {
    if (row.entry.corrupt() || row.entry.session->task_id.empty()) continue;
    const Session& s = *row.entry.session;
    row.task_lease_name = task_lease_name(s.task_id);
    auto it = by_name.find(row.task_lease_name);
    if (it == by_name.end()) {
      row.task_lease_problem = "no task lease (released, or never taken)";
      continue;
    }
    const LeaseEntry& lease = *it->second;
    if (lease.corrupt()) row.task_lease_problem = "its task lease is corrupt (" + lease.corrupt_reason + ")";
    else if (lease.record->slot != s.slot)
      row.task_lease_problem = "its task lease is held by " +
                               (lease.record->slot.empty() ? lease.record->holder : "slot " + lease.record->slot);
    else if (standing_of(lease, now).state == LeaseState::expired)
      row.task_lease_problem = "its task lease expired (not renewed with the session)";
  }
}

std::optional<LiveSessions::Change> LiveSessions::apply(const SessionEvent& event) {
  switch (event.kind) {
    case SessionEvent::Kind::caught_up: return std::nullopt;
    case SessionEvent::Kind::put:
      entries_[event.entry.slot] = event.entry;
      return Change{Change::Kind::put, event.entry.slot};
    case SessionEvent::Kind::erase:
      if (entries_.erase(event.entry.slot) == 0) return std::nullopt;
      return Change{Change::Kind::erase, event.entry.slot};
  }
  return std::nullopt;
}

std::vector<LiveSessions::Change> LiveSessions::expire(TimePoint now, std::chrono::milliseconds ttl) {
  std::vector<Change> changes;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (age_of(it->second.stored_at, now) >= ttl) {
      changes.push_back({Change::Kind::expired, it->first});
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  return changes;
}

std::vector<SessionEntry> LiveSessions::entries() const {
  std::vector<SessionEntry> out;
  out.reserve(entries_.size());
  for (const auto& [slot, entry] : entries_) out.push_back(entry);
  return out;
}

std::string_view to_string(LiveSessions::Change::Kind kind) {
  switch (kind) {
    case LiveSessions::Change::Kind::put: return "put";
    case LiveSessions::Change::Kind::erase: return "delete";
    case LiveSessions::Change::Kind::expired: return "expired";
  }
  return "put";
}

}  // namespace swarm
