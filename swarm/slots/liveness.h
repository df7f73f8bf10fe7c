// How alive a session is, from the age of its record (time since the server
// stored its current revision) against the bucket's TTL.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "swarm/base/clock.h"

namespace swarm {

// dead: a session `swarm run` keeps whose run or agent is gone, as seen on
// the host that ran it (by pid and start time); repaired as a stale one.
enum class State { fresh, late, stale, corrupt, dead };

std::string_view to_string(State state);

// fresh: age < TTL/3; late: age < 2·TTL/3; stale: older (evicted at TTL).
State state_of(std::chrono::milliseconds age, std::chrono::milliseconds ttl);

// now - stored_at, never negative (a server clock ahead of ours reads as 0).
std::chrono::milliseconds age_of(TimePoint stored_at, TimePoint now);

// The state an observer shows (status, serve, doctor, land): state_of the
// age less `margin` (observer_margin), so that a session shown stale is one
// this host's join, which ages it as a waiter does (lease/rules.h), takes
// over without --force.
State observed_state(std::chrono::milliseconds age, std::chrono::milliseconds ttl, std::chrono::milliseconds margin);
// Whether a session of this host kept by `swarm run` has lost its run (the
// leaf, `leaf_pid` started at `leaf_start`) or its agent (`agent_pid` at
// `agent_start`): by /proc, never by pid alone (a zombie is gone). False
// for a session no run keeps (a plain join: no leaf_start, no agent), and
// for another host's (its processes are not here: callers ask for this
// host's sessions only).
bool run_is_gone(std::int64_t leaf_pid, std::uint64_t leaf_start, std::int64_t agent_pid, std::uint64_t agent_start);

// A waiter's expiry margin for a clock read with `uncertainty`, and a little
// more: another process's reading of the clock may be off a little more.
std::chrono::milliseconds observer_margin(std::chrono::milliseconds ttl, std::chrono::nanoseconds uncertainty);

}  // namespace swarm
