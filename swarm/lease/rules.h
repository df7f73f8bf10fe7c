// The rules a lease's safety rests on, each written once (adr/0011): how old
// a record was when it was seen, when it expires for whoever watches it, when
// it is certainly expired, which number is its fencing token, which TTLs are
// allowed. The store, the queue, the mutex, the election, task leases and
// doctor all ask these: a rule written twice drifts.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "swarm/clock.h"
#include "swarm/server_clock.h"

namespace swarm {

using Steady = std::chrono::steady_clock;

// A watcher takes a record as expired only this long after its TTL ran out
// by the server's clock: the clock's reading may be off by `uncertainty`, and
// the holder's and the watcher's clocks may run at rates a little apart:
// 50 ms + TTL/1000 + the uncertainty (rounded up to a millisecond).
std::chrono::milliseconds expiry_margin(std::chrono::milliseconds ttl, std::chrono::nanoseconds uncertainty);

// How old a record stored at `stored_at` (the server's stamp) was at `seen`,
// by the server's clock run on the monotonic one (a wall clock stepped since
// does not move it). 0 when the clock could not be read, or the stamp lies
// ahead: a watcher then only waits longer.
std::chrono::milliseconds age_when_seen(const ServerClock& clock, Steady::time_point seen, TimePoint stored_at);

// When a record seen at `seen`, `age` old then, expires for its watcher: its
// TTL minus that age after `seen`, plus the margin.
Steady::time_point expiry_seen_at(Steady::time_point seen, std::chrono::milliseconds ttl,
                                  std::chrono::milliseconds age, std::chrono::nanoseconds uncertainty);

// Whether a record `age` old by `clock` (read now) with `ttl` may be taken
// over: its TTL and the margin have passed. Never when the clock could not be
// read: then the holder's own deadline is the only judge.
bool certainly_expired(std::chrono::milliseconds age, std::chrono::milliseconds ttl, const ServerClock& clock);

// The fencing token of a grant: the revision of the write that granted it.
// A grant cannot write its own revision; its renewals keep it in the record
// (`kept`). While none has, the record's revision is the token. Sessions
// keep their token the same way.
constexpr std::uint64_t token_of(std::uint64_t kept, std::uint64_t revision) { return kept != 0 ? kept : revision; }

// A lease's TTL is 1s to 1h (the contract): else bad_input, naming the value
// as the user gave it (`given`, e.g. "--ttl 2h"), or as a duration.
void require_lease_ttl(std::chrono::milliseconds ttl, std::string_view given = {});

}  // namespace swarm
