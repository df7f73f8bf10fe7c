#include "swarm/slots/status.h"

#include "swarm/base/text.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace swarm {

std::string_view TextArena::keep(std::string_view text) {
  if (text.empty()) return {};
  if (used_ + text.size() > capacity_) {
    capacity_ = std::max(kBlock, text.size());
    // Not zeroed: a page of the block costs a fault only once text lands on
    // it (zeroing the whole block cost status of 10 sessions 64 faults).
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(capacity_));
    used_ = 0;
  }
  char* at = blocks_.back().get() + used_;
  std::memcpy(at, text.data(), text.size());
  used_ += text.size();
  return {at, text.size()};
}

void SessionTable::add(const SessionEntry& entry) {
  SessionRow row;
  row.slot = text_.keep(entry.slot);
  row.revision = entry.revision;
  row.stored_at = entry.stored_at;
  row.corrupt = entry.corrupt();
  if (row.corrupt) {
    row.corrupt_reason = text_.keep(entry.corrupt_reason);
  } else {
    const Session& s = *entry.session;
    row.task_id = text_.keep(s.task_id);
    row.host = text_.keep(s.host);
    row.local = me_.owns(s);
    row.session_token = entry.token();
    row.token_in_record = s.session_token != 0;
    row.newer_fields = !s.unknown_fields.empty();
    row.leaf_pid = s.leaf_pid;
    row.leaf_start = s.leaf_start;
    row.agent_pid = s.agent_pid;
    row.agent_start = s.agent_start;
    if (!s.status.empty()) row.status = text_.keep(s.status);
    if (!s.note.empty()) row.note = text_.keep(s.note);
    if (keep_json_)
      row.record_json = entry.json_as_stored.empty() ? text_.keep(to_json(s)) : text_.keep(entry.json_as_stored);
  }
  rows_.push_back(row);
}

// Sorted by each slot's natural key, made once: a comparison of two keys is
// one of bytes (10,000 rows make ~130,000 of them). The rows are then moved
// into their places along the permutation's cycles, not copied into a
// second table: at 100,000 rows a copy is the peak of the process's memory.
void SessionTable::sort_by_slot() {
  std::vector<std::size_t> from(rows_.size());  // the row that goes at each place
  {
    std::vector<std::pair<std::string, std::size_t>> order;
    order.reserve(rows_.size());
    for (std::size_t i = 0; i < rows_.size(); ++i) order.emplace_back(natural_key(rows_[i].slot), i);
    std::sort(order.begin(), order.end());
    for (std::size_t k = 0; k < order.size(); ++k) from[k] = order[k].second;
  }
  for (std::size_t start = 0; start < rows_.size(); ++start) {
    if (from[start] == start) continue;  // in its place (or put there)
    SessionRow held = std::move(rows_[start]);
    std::size_t at = start;
    while (from[at] != start) {
      const std::size_t next = from[at];
      rows_[at] = std::move(rows_[next]);
      from[at] = at;
      at = next;
    }
    rows_[at] = std::move(held);
    from[at] = at;
  }
}

void SessionTable::finish(std::uint64_t since, std::chrono::milliseconds ttl, TimePoint now,
                          std::chrono::milliseconds margin) {
  kv::drop_repeats(rows_, since, [](const SessionRow& r) { return r.slot; },
                   [](const SessionRow& r) { return r.revision; });
  sort_by_slot();
  for (auto& row : rows_) {
    row.age = age_of(row.stored_at, now);
    row.state = row.corrupt ? State::corrupt : observed_state(row.age, ttl, margin);
    // This host's run that is gone is dead now, whatever its age says.
    if (row.local && (row.agent_pid > 0 || row.leaf_start != 0) && row.state != State::stale &&
        run_is_gone(row.leaf_pid, row.leaf_start, row.agent_pid, row.agent_start))
      row.state = State::dead;
  }
}

void SessionTable::note_task_leases(const std::vector<LeaseEntry>& task_leases, TimePoint now) {
  std::unordered_map<std::string, const LeaseEntry*> by_name;
  for (const auto& lease : task_leases) by_name[lease.name] = &lease;
  // The same words for many rows are kept once.
  const std::string_view none = text_.keep("no task lease (released, or never taken)");
  const std::string_view expired = text_.keep("its task lease expired (not renewed with the session)");
  for (auto& row : rows_) {
    if (row.corrupt || row.task_id.empty()) continue;
    auto it = by_name.find(task_lease_name(std::string(row.task_id)));
    if (it == by_name.end()) {
      row.task_lease_problem = none;
      continue;
    }
    const LeaseEntry& lease = *it->second;
    if (lease.corrupt()) row.task_lease_problem = text_.keep("its task lease is corrupt (" + lease.corrupt_reason + ")");
    else if (lease.record->slot != row.slot)
      row.task_lease_problem = text_.keep("its task lease is held by " + (lease.record->slot.empty()
                                                                             ? lease.record->holder
                                                                             : "slot " + lease.record->slot));
    else if (standing_of(lease, now).state == LeaseState::expired)
      row.task_lease_problem = expired;
  }
}

void SessionTable::note_task_states(const std::vector<TaskEntry>& tasks) {
  std::unordered_map<std::string_view, std::string_view> state_of;
  for (const auto& e : tasks)
    if (e.task) state_of[e.task->id] = to_string(e.task->state());
  for (auto& row : rows_)
    if (auto it = state_of.find(row.task_id); !row.corrupt && it != state_of.end()) row.task_state = it->second;
}

std::optional<LiveSessions::Change> LiveSessions::apply(const SessionEvent& event) {
  switch (event.kind) {
    case SessionEvent::Kind::caught_up: return std::nullopt;
    case SessionEvent::Kind::put:
      entries_[event.entry.slot] = event.entry;
      return Change{Change::Kind::put, event.entry.slot};
    case SessionEvent::Kind::erase: {
      auto it = entries_.find(event.entry.slot);
      if (it == entries_.end()) return std::nullopt;
      Change change{event.expired ? Change::Kind::expired : Change::Kind::erase, event.entry.slot};
      change.ended = std::move(it->second);
      change.at = event.entry.stored_at;
      change.by_server = event.expired;
      change.revision = event.entry.revision;
      entries_.erase(it);
      return change;
    }
  }
  return std::nullopt;
}

std::vector<LiveSessions::Change> LiveSessions::expire(TimePoint now, std::chrono::milliseconds ttl,
                                                      std::chrono::milliseconds grace) {
  std::vector<Change> changes;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (age_of(it->second.stored_at, now) >= ttl + grace) {
      Change change{Change::Kind::expired, it->first};
      change.at = it->second.stored_at + ttl;
      change.ended = std::move(it->second);
      changes.push_back(std::move(change));
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
