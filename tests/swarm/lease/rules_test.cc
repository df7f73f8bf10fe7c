// The lease safety rules (swarm/lease/rules.h), each on its own, with no
// server: the numbers adr/0011 argues from.
#include <doctest/doctest.h>

#include "support/expect.h"
#include "swarm/base/error.h"
#include "swarm/base/host.h"
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
  const auto arrived = measured.read_at;
  const TimePoint stored = measured.server_at_read;  // 0 old when its answer arrived
  CHECK_FALSE(certainly_expired(measured, arrived, stored, 10s, arrived + 10s));
  CHECK_FALSE(certainly_expired(measured, arrived, stored, 10s, arrived + 10s + margin - 1ms));
  CHECK(certainly_expired(measured, arrived, stored, 10s, arrived + 10s + margin));
  // A clock that could not be read never lets a record be taken over.
  CHECK_FALSE(certainly_expired(clock_read(false), arrived, stored - 1h, 10s, arrived + 10h));
}

TEST_CASE("LeaseRules_AgeAtArrivalRunsOnTheMonotonicClockAndNeverGoesBelowZero") {
  const ServerClock clock = clock_read(true);
  const auto arrived = clock.read_at + 2s;
  CHECK(age_at_arrival(clock, arrived, clock.server_at_read - 3s) == 5s);
  // A stamp ahead of the server's clock as read (a step, a skew): age 0.
  CHECK(age_at_arrival(clock, arrived, clock.server_at_read + 1h) == 0ms);
  // Unmeasured: 0, so a watcher only waits longer.
  CHECK(age_at_arrival(clock_read(false), arrived, clock.server_at_read - 1h) == 0ms);
}

TEST_CASE("LeaseRules_ObservedExpiryIsTheTtlLeftAfterArrivalPlusTheMargin") {
  const ServerClock clock = clock_read(true);
  const auto arrived = clock.read_at;
  CHECK(observed_expiry(clock, arrived, clock.server_at_read - 4s, 10s) == arrived + 6s + 60ms);
  // Older than its TTL and the margin when it arrived: expired before it arrived.
  CHECK(observed_expiry(clock, arrived, clock.server_at_read - 30s, 10s) == arrived - 20s + 60ms);
  CHECK(certainly_expired(clock, arrived, clock.server_at_read - 30s, 10s, arrived));
  // Delivered live by a watch: new when it arrived, whatever its stamp.
  CHECK(observed_expiry_of_new(clock, arrived + 1s, 10s) == arrived + 1s + 10s + 60ms);
}

TEST_CASE("LeaseRules_AReadSlowerThanTheTtlNeverMakesALiveRecordLookExpired") {
  // The bug of issue 28, on the clock alone: a waiter sends a read at `sent`, and its answer arrives 7 s later
  // (TTL 3 s) with a record the holder renewed 0.5 s before the answer arrived. Timed from the arrival, the record
  // has its TTL ahead of it; timed from the send, it would look expired at once.
  const ServerClock clock = clock_read(true, 1ms);
  const auto sent = clock.read_at;
  const auto arrived = sent + 7s;
  const TimePoint renewed = clock.at(arrived) - 500ms;
  const auto expires = observed_expiry(clock, arrived, renewed, 3s);
  CHECK(expires > arrived + 2s);
  CHECK_FALSE(certainly_expired(clock, arrived, renewed, 3s, arrived));
  CHECK_FALSE(certainly_expired(clock, arrived, renewed, 3s, arrived + 2s));
  CHECK(certainly_expired(clock, arrived, renewed, 3s, arrived + 2500ms + expiry_margin(3s, 1ms)));
  // What the old code did: the record's age taken at the send, where it did not exist yet (0), and its TTL
  // counted from there: expired 3 s after the send, 4 s before the answer even arrived.
  const auto aged_from_send = sent + 3s + expiry_margin(3s, 1ms);
  CHECK(aged_from_send < arrived);
  CHECK(expires > aged_from_send + 3s);
  // The same with a clock that could not be read: age 0 at arrival, the whole TTL ahead.
  CHECK(observed_expiry(clock_read(false), arrived, renewed, 3s) >= arrived + 3s);
}

TEST_CASE("LeaseRules_AHolderTimesItsDeadlineFromBeforeItSent") {
  // The other direction: the holder's deadline is its TTL after the moment before it sent the write, whenever
  // the answer came back; the server stored the write after that moment, so the record outlives the deadline.
  const BootTime sent(std::chrono::seconds(1000));
  CHECK(holder_deadline(sent, 3s) == sent + 3s);
}

TEST_CASE("LeaseRules_CertainAgeIsTheAgeAtArrivalPlusTimeSinceLessTheMargin") {
  const ServerClock clock = clock_read(true, 10ms);
  const auto arrived = clock.read_at;
  const milliseconds margin = expiry_margin(300s, 10ms);
  CHECK(certain_age(clock, arrived, clock.server_at_read - 200s, 300s, arrived) == 200s - margin);
  CHECK(certain_age(clock, arrived, clock.server_at_read - 200s, 300s, arrived + 5s) == 205s - margin);
  // A record written during a slow read: young when it arrived, whenever the read was sent.
  CHECK(certain_age(clock, arrived, clock.server_at_read, 300s, arrived) == 0ms);
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
