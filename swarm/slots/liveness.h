// How alive a session is, from the age of its record (time since the server
// stored its current revision) against the bucket's TTL.
#pragma once

#include <chrono>
#include <string_view>

#include "swarm/base/clock.h"

namespace swarm {

enum class State { fresh, late, stale, corrupt };

std::string_view to_string(State state);

// fresh: age < TTL/3; late: age < 2·TTL/3; stale: older (evicted at TTL).
State state_of(std::chrono::milliseconds age, std::chrono::milliseconds ttl);

// now - stored_at, never negative (a server clock ahead of ours reads as 0).
std::chrono::milliseconds age_of(TimePoint stored_at, TimePoint now);

}  // namespace swarm
