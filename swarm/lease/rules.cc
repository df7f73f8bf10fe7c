#include "swarm/lease/rules.h"

#include <algorithm>
#include <string>

#include "swarm/duration.h"
#include "swarm/error.h"
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

milliseconds age_when_seen(const ServerClock& clock, Steady::time_point seen, TimePoint stored_at) {
  if (!clock.measured) return milliseconds(0);
  return std::max(milliseconds(0), duration_cast<milliseconds>(clock.at(seen) - stored_at));
}

Steady::time_point expiry_seen_at(Steady::time_point seen, milliseconds ttl, milliseconds age,
                                  std::chrono::nanoseconds uncertainty) {
  const auto left = std::max(milliseconds(0), ttl - age);
  return seen + left + expiry_margin(ttl, uncertainty);
}

bool certainly_expired(milliseconds age, milliseconds ttl, const ServerClock& clock) {
  return clock.measured && age >= ttl + expiry_margin(ttl, clock.uncertainty);
}

void require_lease_ttl(milliseconds ttl, std::string_view given) {
  if (ttl >= kMinLeaseTtl && ttl <= kMaxLeaseTtl) return;
  const std::string named = given.empty() ? "a lease TTL of " + format_duration(ttl) : std::string(given);
  throw Error(Errc::bad_input, named + " is out of range: a lease TTL is 1s to 1h");
}

}  // namespace swarm
