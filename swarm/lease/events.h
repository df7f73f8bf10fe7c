// The journal's events of leases (lease.grant, lease.release, lease.lost,
// elect.resign), built from the lease as it stands: the actor is the holder,
// as its record says (see the contract's Journal section for their fields).
#pragma once

#include <string>
#include <string_view>

#include "swarm/journal/journal.h"
#include "swarm/lease/lease.h"

namespace swarm {

Event lease_grant_event(std::string_view bucket, const Lease& lease, const LastWrite& over);
Event lease_release_event(std::string_view bucket, const Lease& lease);
// A lease the server ended by its TTL (its marker at `marker_revision`, at
// `at` by the server's clock): `ended` as the watcher last saw it; `seen_by`
// the host that journals it (any watcher may: the journal keeps one).
Event lease_expired_event(std::string_view bucket, std::string_view name, const LastWrite& ended,
                          std::uint64_t marker_revision, TimePoint at, const HostIdentity& seen_by);
Event lease_lost_event(std::string_view bucket, const Lease& lease, const std::string& why);
// With `to` (elect --resign --to): elect.handover, naming the candidate.
Event elect_resign_event(std::string_view bucket, const Lease& lease, const std::string& to = {});

}  // namespace swarm
