// The journal's events of a slot's acts (join, commit, sync, close, evict),
// built from what the act returned, never by reading JSON back (see the
// contract's Journal section for each kind's fields).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "swarm/journal/journal.h"
#include "swarm/slots/lifecycle.h"
#include "swarm/slots/liveness.h"

namespace swarm {

// A join: `replaced_state` is how the record it replaced stood (stale, or
// live and taken over by --force).
Event join_event(std::string_view bucket, const JoinResult& join, std::optional<State> replaced_state);
Event commit_event(std::string_view bucket, const SessionEntry& entry, const CommitResult& commit,
                   const Actor& actor);
// A close that released `result.released` (or found no record: revision 0);
// `priority_high`: "priority": "high" (close --priority high).
// `swarm run` lost its session (how: taken, evicted, unreachable), once its
// agent was stopped.
Event session_lost_event(std::string_view bucket, const Session& session, std::uint64_t token,
                         std::uint64_t revision, std::string_view reason, std::string_view why, const Actor& actor);
Event close_event(std::string_view bucket, const std::string& slot, const CloseResult& result, Outcome outcome,
                  const std::optional<std::string>& head, const Actor& actor, bool priority_high = false,
                  const std::string& why = {});
Event evict_event(std::string_view bucket, const SessionEntry& removed, const Actor& actor);
// Paths of an act (`act`: commit, land) that other live slots hold
// exclusively: hold.conflict, with the paths, the holds and what the policy
// made of it (`policy`: warn, refuse; a land's: refuse, or forced).
Event hold_conflict_event(std::string_view bucket, std::string_view slot, std::string_view task_id,
                          std::uint64_t token, std::uint64_t revision, std::string_view act,
                          const std::vector<HeldPath>& held, std::string_view policy, const Actor& actor);
// A session the server ended by its TTL (its marker at `marker_revision`,
// at `at` by the server's clock), as the session was when last seen; `seen_by`
// the host that journals it (any watcher may: the journal keeps one).
Event session_expired_event(std::string_view bucket, const SessionEntry& ended, std::uint64_t marker_revision,
                            TimePoint at, const HostIdentity& seen_by);
// A sync: the onto branch, how it came (fast-forward, merge, conflict), the head after.
Event sync_event(std::string_view bucket, const SessionEntry& entry, const SyncOutcome& sync, const Actor& actor);

}  // namespace swarm
