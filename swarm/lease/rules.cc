#include "swarm/lease/rules.h"

#include <algorithm>
#include <string>

#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/lease/lease_record.h"

namespace swarm {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

milliseconds expiry_margin(milliseconds ttl, std::chrono::nanoseconds uncertainty) {
  // 50 ms for the time between the server's stamp and its answer, 1 ms per
  // second of TTL for clock rates up to 1000 ppm apart, and the reading's error.
  const auto rounded_up = duration_cast<milliseconds>(uncertainty + milliseconds(1) - std::chrono::nanoseconds(1));
  return milliseconds(50) + ttl / 1000 + rounded_up;
}

BootTime holder_deadline(BootTime sent, milliseconds ttl) { return sent + ttl; }

milliseconds server_expiry_after(milliseconds ttl) {
  // A second more, for a server whose clock steps ahead (or a new stream
  // leader whose clock is ahead of the one that stamped the value): the
  // server times the value's TTL on its wall clock.
  constexpr milliseconds kServerClockSlack{1000};
  return ttl + expiry_margin(ttl, std::chrono::nanoseconds(0)) + kServerClockSlack;
}

milliseconds age_at_arrival(const ServerClock& clock, Steady::time_point arrived, TimePoint stored_at) {
  if (!clock.measured) return milliseconds(0);
  return std::max(milliseconds(0), duration_cast<milliseconds>(clock.at(arrived) - stored_at));
}

namespace {

// `age` old at `arrived`: what is left of its TTL after then, plus the
// margin (in the past for a record that was older than that already).
Steady::time_point expiry_after(Steady::time_point arrived, milliseconds ttl, milliseconds age,
                                std::chrono::nanoseconds uncertainty) {
  return arrived + (ttl - age) + expiry_margin(ttl, uncertainty);
}

}  // namespace

Steady::time_point observed_expiry(const ServerClock& clock, Steady::time_point arrived, TimePoint stored_at,
                                   milliseconds ttl) {
  return expiry_after(arrived, ttl, age_at_arrival(clock, arrived, stored_at), clock.uncertainty);
}

Steady::time_point observed_expiry_of_new(const ServerClock& clock, Steady::time_point arrived, milliseconds ttl) {
  return expiry_after(arrived, ttl, milliseconds(0), clock.uncertainty);
}

bool certainly_expired(const ServerClock& clock, Steady::time_point arrived, TimePoint stored_at, milliseconds ttl,
                       Steady::time_point now) {
  return clock.measured && now >= observed_expiry(clock, arrived, stored_at, ttl);
}

milliseconds certain_age(const ServerClock& clock, Steady::time_point arrived, TimePoint stored_at, milliseconds ttl,
                         Steady::time_point now) {
  const auto since = std::max(milliseconds(0), duration_cast<milliseconds>(now - arrived));
  return std::max(milliseconds(0), age_at_arrival(clock, arrived, stored_at) + since - expiry_margin(ttl, clock.uncertainty));
}

void require_lease_ttl(milliseconds ttl, std::string_view given) {
  if (ttl >= kMinLeaseTtl && ttl <= kMaxLeaseTtl) return;
  const std::string named = given.empty() ? "a lease TTL of " + format_duration(ttl) : std::string(given);
  throw Error(Errc::bad_input, named + " is out of range: a lease TTL is 1s to 1h");
}

}  // namespace swarm
