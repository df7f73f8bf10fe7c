// A session as `status` shows it: the record, how alive it is, whose it is.
#pragma once

#include <chrono>
#include <vector>

#include "swarm/host.h"
#include "swarm/liveness.h"
#include "swarm/session_store.h"

namespace swarm {

struct SessionRow {
  SessionEntry entry;
  State state = State::corrupt;
  std::chrono::milliseconds age{0};  // since the server stored the current revision
  bool local = false;                // the session belongs to this host
};

SessionRow row_of(const SessionEntry& entry, std::chrono::milliseconds ttl, TimePoint now, const HostIdentity& me);

// Rows sorted by slot.
std::vector<SessionRow> rows_of(const std::vector<SessionEntry>& entries, std::chrono::milliseconds ttl,
                                TimePoint now, const HostIdentity& me);

}  // namespace swarm
