// A session as `status` shows it: the record, how alive it is, whose it is.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "swarm/host.h"
#include "swarm/lease.h"
#include "swarm/liveness.h"
#include "swarm/session_store.h"

namespace swarm {

struct SessionRow {
  SessionEntry entry;
  State state = State::corrupt;
  std::chrono::milliseconds age{0};  // since the server stored the current revision
  bool local = false;                // the session belongs to this host
  // How its task lease disagrees with it ("" when it agrees: held by this slot).
  std::string task_lease_problem;
  std::string task_lease_name;
};

// Notes on each row how its task lease disagrees with its session, if it
// does. `task_leases` are the task leases read (any order).
void note_task_leases(std::vector<SessionRow>& rows, const std::vector<LeaseEntry>& task_leases, TimePoint now);

SessionRow row_of(SessionEntry entry, std::chrono::milliseconds ttl, TimePoint now, const HostIdentity& me);

// Rows sorted by slot; the entries are moved into them.
std::vector<SessionRow> rows_of(std::vector<SessionEntry> entries, std::chrono::milliseconds ttl, TimePoint now,
                                const HostIdentity& me);

// The sessions as a live watch reports them. Expiry by TTL sends no event,
// so entries older than the TTL are dropped here, by the server's timestamps.
class LiveSessions {
 public:
  struct Change {
    enum class Kind { put, erase, expired };
    Kind kind;
    std::string slot;
  };

  // Applies one watch event; the change it made, if any (caught_up makes none).
  std::optional<Change> apply(const SessionEvent& event);
  // Drops entries whose age reached `ttl`: the server has evicted them.
  std::vector<Change> expire(TimePoint now, std::chrono::milliseconds ttl);
  std::vector<SessionEntry> entries() const;
  std::size_t size() const { return entries_.size(); }

 private:
  std::map<std::string, SessionEntry> entries_;
};

std::string_view to_string(LiveSessions::Change::Kind kind);

}  // namespace swarm
