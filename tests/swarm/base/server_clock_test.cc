// The server's clock as read and run on this host: a wall-clock step does not move it.
#include "swarm/base/server_clock.h"

#include <doctest/doctest.h>

#include <atomic>

#include "support/lease_fixture.h"

using namespace swarm;
using namespace std::chrono_literals;

namespace {
using Fixture = testing::LeaseFixture;
}  // namespace

TEST_CASE("ServerClock_AWallClockStepAfterTheReadingDoesNotMoveIt") {
  // a waiter ages records on the server's clock run from the reading on the monotonic clock: a step of this
  // host's wall clock afterwards (NTP, by hand) moves `now` but never `at`, which is what waiters use, so a
  // jump forward cannot make a live holder's lease look expired.
  Fixture f;
  std::atomic<bool> jumped{false};
  Clock local = [&] { return std::chrono::system_clock::now() + (jumped ? std::chrono::seconds(30) : std::chrono::seconds(0)); };
  ServerClock clock = read_server_clock(f.bucket, local);
  REQUIRE(clock.measured);
  auto before = clock.at(std::chrono::steady_clock::now());
  jumped = true;
  auto after = clock.at(std::chrono::steady_clock::now());
  CHECK(after - before < std::chrono::seconds(1));
  CHECK(clock.now() - after > std::chrono::seconds(29));  // the wall-clock reading did jump
}

TEST_CASE("ServerClock_ASentReadingSaysWhatAReadingAtOnceSays") {
  // A reading sent ahead of other requests and read after them (status's
  // way) runs the same clock as one read at once: here a local clock 40 s
  // slow, which both correct to the server's within a round trip or two.
  Fixture f;
  Clock slow = [] { return std::chrono::system_clock::now() - std::chrono::seconds(40); };
  PendingServerClock pending(f.bucket);
  f.bucket.get("nothing-here");  // another request meanwhile, whose flush takes the reading along
  const ServerClock later = pending.get(slow);
  const ServerClock now = read_server_clock(f.bucket, slow);
  REQUIRE(later.measured);
  REQUIRE(now.measured);
  const auto apart = later.now() - now.now();
  CHECK(std::chrono::abs(apart) < 100ms);
  CHECK(std::chrono::abs(later.now() - std::chrono::system_clock::now()) < 100ms);  // one server, this host's clock
  CHECK(later.uncertainty < 1s);

  // Of a bucket that is not there, no reading comes: it says so the usual
  // way (this host's clock, not measured).
  auto missing = kv::Bucket::bind(f.connection, "never-made");
  PendingServerClock none(missing);
  const ServerClock fallback = none.get(slow);
  CHECK_FALSE(fallback.measured);
}
