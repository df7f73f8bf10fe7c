// The events of each act, built in this one place from what the act
// returned (see the contract's Journal section for each kind's fields).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "swarm/journal.h"
#include "swarm/landing.h"
#include "swarm/lease/lease.h"
#include "swarm/liveness.h"
#include "swarm/slot_lifecycle.h"

namespace swarm {

// A join: `replaced_state` is how the record it replaced stood (stale, or
// live and taken over by --force).
Event join_event(std::string_view bucket, const JoinResult& join, std::optional<State> replaced_state);
Event commit_event(std::string_view bucket, const SessionEntry& entry, const CommitResult& commit,
                   const Actor& actor);
// A close that released `result.released` (or found no record: revision 0).
Event close_event(std::string_view bucket, const std::string& slot, const CloseResult& result, Outcome outcome,
                  const std::optional<std::string>& head, const Actor& actor);
Event evict_event(std::string_view bucket, const SessionEntry& removed, const Actor& actor);
// A sync: the onto branch, how it came (fast-forward, merge, conflict), the head after.
Event sync_event(std::string_view bucket, const SessionEntry& entry, const SyncOutcome& sync, const Actor& actor);

// Lease events: the actor is the holder, as its record says.
Event lease_grant_event(std::string_view bucket, const Lease& lease, const LastWrite& over);
Event lease_release_event(std::string_view bucket, const Lease& lease);
Event lease_lost_event(std::string_view bucket, const Lease& lease, const std::string& why);
Event elect_resign_event(std::string_view bucket, const Lease& lease);

// A land (`land`) or its refusal (`land.refused`), on the slot's subject,
// with the land lease's fencing token.
Event land_event(std::string_view bucket, const LandResult& result, std::string_view task_id, const Actor& actor);

// What `doctor --fix` did to a slot or a lease (`check`: the finding's kind).
Event fix_event(Thing thing, std::string_view bucket, std::string_view name, std::string_view check,
                const std::string& note, std::uint64_t revision, const Actor& actor);

}  // namespace swarm
