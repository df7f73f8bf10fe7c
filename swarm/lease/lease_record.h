// A lease as stored in the swarm-leases bucket under its name: who holds it,
// for how long, and its fencing token. Additive evolution, as for sessions.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "swarm/base/clock.h"
#include "swarm/base/record.h"

namespace swarm {

// A lease's TTL is 1s to 1h (the contract); 15s unless asked otherwise.
inline constexpr std::chrono::seconds kMinLeaseTtl{1};
inline constexpr std::chrono::hours kMaxLeaseTtl{1};
inline constexpr std::chrono::seconds kDefaultLeaseTtl{15};

// The highest priority of an election's candidate (elect --priority).
inline constexpr std::uint64_t kMaxElectionPriority = 1000;

struct LeaseRecord {
  std::string name;    // required: the key
  std::string holder;  // required: --holder, default "<host>:<pid>"
  std::string host;    // required
  std::string host_id;
  std::int64_t pid = 0;            // the process that holds it (swarm for lock/elect, the caller for acquire)
  std::uint64_t pid_start = 0;     // when that process started (/proc/<pid>/stat), so a reused pid is told apart
  // The revision of the write that granted the lease. A grant writes none
  // (it cannot know its revision before it is stored): while absent, the
  // token is the record's revision. Renewals write it.
  std::uint64_t token = 0;
  std::chrono::milliseconds ttl{0};  // required
  std::optional<TimePoint> acquired_at;
  std::optional<TimePoint> renewed_at;
  std::uint64_t transitions = 0;  // how many times the lease changed hands
  // A task lease (task.<id>, taken by join) names its slot and its task id as given.
  std::string slot;
  std::string task;
  // A place in a lease's line (a queue entry): the revision that made it,
  // its order in line. Written from its first renewal on; before, the order
  // is the entry's revision (see LeaseQueue).
  std::uint64_t order = 0;
  // A hold (hold.<slot>.<n>, swarm hold): the paths it announces, as
  // patterns; "exclusive" or "shared"; why, in the holder's words; and the
  // token of the slot's session it lives with.
  std::vector<std::string> patterns;
  std::string kind;
  std::string reason;
  std::uint64_t session = 0;
  // An election's candidate (elect --priority, --min-term): waiting
  // candidates are granted by priority (higher first), then arrival; a leader
  // holds requests to step down until it has led min_term.
  std::uint64_t priority = 0;
  std::chrono::milliseconds min_term{0};
  // A request to step down in favour of a waiting candidate (elect --resign
  // --to), and the release marker of a leader that did: the id of that
  // candidate's place in line ("_wait.<name>.<id>"), and its holder.
  std::string handover_to, handover_holder;
  std::string acquired_at_text, renewed_at_text;  // as read (see record::time_text)
  record::UnknownFields unknown_fields;
};

struct ParsedLease {
  std::optional<LeaseRecord> lease;
  std::string corrupt_reason;  // set when lease is empty
};

ParsedLease parse_lease(const std::string& json);
std::string to_json(const LeaseRecord& lease);

}  // namespace swarm
