// The session record: who owns a slot, as stored (JSON) under the slot's key.
// Additive evolution only: unknown fields read are written back unchanged.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "swarm/base/clock.h"
#include "swarm/base/port_range.h"
#include "swarm/base/record.h"

namespace swarm {

struct Session {
  std::string slot;      // required
  std::string task_id;
  std::string agent_id;
  std::string host;      // required: the owner's hostname
  std::string host_id;   // the owner's machine id; absent in records of older clients
  std::int64_t leaf_pid = 0;
  std::string hub_url;
  std::optional<TimePoint> started_at;
  std::optional<TimePoint> last_renewed;
  // The KV revision of the write that made this session (its session
  // token), kept from its first renewal on; 0 until then (the entry's
  // revision is the token: see token_of).
  std::uint64_t session_token = 0;
  // The slot's block of ports (join --ports K): `ports` of them from
  // `port_base`; 0 and 0 when it has none.
  std::uint64_t port_base = 0;
  std::uint64_t ports = 0;
  // When the leaf is a process that lives as long as the session (swarm
  // run): its start time (/proc's starttime), so a reused pid is told apart.
  // 0: the leaf is a short-lived join, no liveness signal.
  std::uint64_t leaf_start = 0;
  // The agent `swarm run` started (pid and start time; 0 when none): on this
  // host, a session whose agent or run is gone is dead at once.
  std::int64_t agent_pid = 0;
  std::uint64_t agent_start = 0;
  // What the agent says it is doing (swarm renew --status --note): working,
  // blocked, idle or waiting, and a line of its own; empty when unsaid.
  std::string status;
  std::string note;
  // The session's holds (swarm hold): their lease names, hold.<slot>.<n>,
  // renewed with it and released with it.
  std::vector<std::string> holds;
  // The times as read: written back as they were while unchanged, so a
  // renewal never rewrites another writer's started_at (its precision, its
  // offset) into ours.
  std::string started_at_text;
  std::string last_renewed_text;
  // Fields this version does not know, as (name, JSON text as read), in their order.
  record::UnknownFields unknown_fields;

  // Same session: the identity a CAS retry checks before it goes on.
  bool same_session_as(const Session& other) const {
    // To the millisecond the record keeps: a session as written in memory
    // (finer) is the same as the one read back.
    auto stored = [](const std::optional<TimePoint>& t) {
      return t ? std::optional(std::chrono::floor<std::chrono::milliseconds>(*t)) : std::nullopt;
    };
    return slot == other.slot && host == other.host && stored(started_at) == stored(other.started_at);
  }
  // Its block of ports; nullopt when it has none (or the record names no
  // block a range could hold: ports 1 to 65535).
  std::optional<PortBlock> port_block() const {
    if (ports == 0 || port_base == 0 || port_base + ports - 1 > 65535) return std::nullopt;
    return PortBlock{static_cast<unsigned>(port_base), static_cast<unsigned>(ports)};
  }
};

// The statuses an agent may say it is in (renew --status).
inline constexpr const char* kAgentStatuses[] = {"working", "blocked", "idle", "waiting"};
// The longest note a renewal takes, in bytes of UTF-8.
inline constexpr std::size_t kMaxNoteBytes = 200;

// A record that could not be read as a Session: the reason says why, plainly.
struct ParsedSession {
  std::optional<Session> session;
  std::string corrupt_reason;  // set when session is empty
  bool as_written = false;     // the text is byte for byte to_json(*session)
};

ParsedSession parse_session(const std::string& json);
std::string to_json(const Session& session);

}  // namespace swarm
