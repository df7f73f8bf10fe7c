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
