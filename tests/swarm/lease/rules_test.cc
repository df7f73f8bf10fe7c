// The lease safety rules (swarm/lease/rules.h), each on its own, with no
// server: the numbers adr/0011 argues from.
#include <doctest/doctest.h>

#include "support/expect.h"
#include "swarm/error.h"
#include "swarm/host.h"
#include "swarm/lease/rules.h"

using namespace swarm;
using namespace std::chrono_literals;
using std::chrono::milliseconds;

namespace {

// A server clock read at `read_at` as `server_at_read`, `uncertainty` off.
ServerClock clock_read(bool measured, std::chrono::nanoseconds uncertainty = 0ns) {
  ServerClock clock;
  clock.measured = measured;
  clock.uncertainty = uncertainty;
  clock.read_at = std::chrono::steady_clock::time_point(100s);
  clock.server_at_read = TimePoint(std::chrono::seconds(1'700'000'000));
  return clock;
}

}  // namespace

TEST_CASE("LeaseRules_ExpiryMarginIs50msPlusTtlPer1000PlusTheClocksError") {
  CHECK(expiry_margin(10s, 0ns) == 60ms);
  CHECK(expiry_margin(1h, 0ns) == 50ms + 3600ms);
  // The reading's error is rounded up to a whole millisecond, never down.
  CHECK(expiry_margin(1s, 1ns) == 52ms);
  CHECK(expiry_margin(1s, 2ms) == 53ms);
}

TEST_CASE("LeaseRules_CertainlyExpiredOnlyPastTtlAndMarginOnAMeasuredClock") {
  const ServerClock measured = clock_read(true, 3ms);
  const milliseconds margin = expiry_margin(10s, 3ms);
  CHECK_FALSE(certainly_expired(10s, 10s, measured));
  CHECK_FALSE(certainly_expired(10s + margin - 1ms, 10s, measured));
  CHECK(certainly_expired(10s + margin, 10s, measured));
  // A clock that could not be read never lets a record be taken over.
  CHECK_FALSE(certainly_expired(10h, 10s, clock_read(false)));
}

TEST_CASE("LeaseRules_AgeWhenSeenRunsOnTheMonotonicClockAndNeverGoesBelowZero") {
  const ServerClock clock = clock_read(true);
  const auto seen = clock.read_at + 2s;
  CHECK(age_when_seen(clock, seen, clock.server_at_read - 3s) == 5s);
  // A stamp ahead of the server's clock as read (a step, a skew): age 0.
  CHECK(age_when_seen(clock, seen, clock.server_at_read + 1h) == 0ms);
  // Unmeasured: 0, so a watcher only waits longer.
  CHECK(age_when_seen(clock_read(false), seen, clock.server_at_read - 1h) == 0ms);
}

TEST_CASE("LeaseRules_ExpirySeenAtIsTheTtlLeftAfterSeenPlusTheMargin") {
  const auto seen = std::chrono::steady_clock::time_point(50s);
  CHECK(expiry_seen_at(seen, 10s, 4s, 0ns) == seen + 6s + 60ms);
  // Older than its TTL when seen: expires after the margin, not in the past.
  CHECK(expiry_seen_at(seen, 10s, 30s, 0ns) == seen + 60ms);
}

TEST_CASE("LeaseRules_TokenIsTheKeptOneOrElseTheRevision") {
  CHECK(token_of(0, 42) == 42);
  CHECK(token_of(17, 42) == 17);
  static_assert(token_of(5, 9) == 5);
}

TEST_CASE("LeaseRules_TtlIs1sTo1hAndAWrongOneIsNamed") {
  CHECK_NOTHROW(require_lease_ttl(1s));
  CHECK_NOTHROW(require_lease_ttl(1h));
  CHECK(testing::kind_of([] { require_lease_ttl(999ms); }) == Errc::bad_input);
  CHECK(testing::kind_of([] { require_lease_ttl(1h + 1ms); }) == Errc::bad_input);
  try {
    require_lease_ttl(2h, "--ttl 2h");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "--ttl 2h is out of range: a lease TTL is 1s to 1h");
  }
  try {
    require_lease_ttl(500ms);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("500ms") != std::string::npos);
  }
}

TEST_CASE("HostIdentity_OwnsRecordsOfItsHostAndIdOrOfItsHostWithoutId") {
  const HostIdentity me{"build-1", "id-1"};
  CHECK(me.owns("build-1", "id-1"));
  CHECK(me.owns("build-1", ""));  // an older client's record
  CHECK_FALSE(me.owns("build-1", "id-2"));  // a container sharing the name
  CHECK_FALSE(me.owns("build-2", "id-1"));  // sharing the machine id
  CHECK_FALSE(me.owns("build-2", ""));
}
