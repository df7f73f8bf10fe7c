#include "swarm/status.h"

#include <algorithm>

namespace swarm {

SessionRow row_of(const SessionEntry& entry, std::chrono::milliseconds ttl, TimePoint now, const HostIdentity& me) {
  SessionRow row;
  row.entry = entry;
  row.age = age_of(entry.stored_at, now);
  row.state = entry.corrupt() ? State::corrupt : state_of(row.age, ttl);
  row.local = !entry.corrupt() && me.owns(*entry.session);
  return row;
}

std::vector<SessionRow> rows_of(const std::vector<SessionEntry>& entries, std::chrono::milliseconds ttl,
                                TimePoint now, const HostIdentity& me) {
  std::vector<SessionRow> rows;
  rows.reserve(entries.size());
  for (const auto& e : entries) rows.push_back(row_of(e, ttl, now, me));
  std::sort(rows.begin(), rows.end(), [](const SessionRow& a, const SessionRow& b) { return a.entry.slot < b.entry.slot; });
  return rows;
}

}  // namespace swarm
