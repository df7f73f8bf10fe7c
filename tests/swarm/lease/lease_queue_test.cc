// A lease's line against a real nats-server: the order of arrival, the place
// just ahead, leaving, and a place whose waiter stopped beating removed by
// the one behind it.
#include "swarm/lease/lease_queue.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <thread>

#include "support/lease_fixture.h"

using namespace swarm;
using namespace std::chrono_literals;
using testing::lease_holder;
using Fixture = testing::LeaseFixture;

TEST_CASE("LeaseQueue_EachWaiterSeesOnlyThePlaceJustAhead") {
  Fixture f;
  // Live processes of this host (this test's pid): a place of a gone one would be dead at once.
  LeaseQueue first(f.store(), "merge"), second(f.store(), "merge"), third(f.store(), "merge");
  first.join(lease_holder("first", getpid()), 5s);
  second.join(lease_holder("second", getpid()), 5s);
  third.join(lease_holder("third", getpid()), 5s);
  CHECK(first.order() < second.order());
  CHECK(second.order() < third.order());
  CHECK_FALSE(first.look_ahead(first.clock()));  // first in line
  REQUIRE(second.look_ahead(second.clock()));
  CHECK(second.ahead() == 1);
  REQUIRE(third.look_ahead(third.clock()));
  CHECK(third.ahead() == 2);
  CHECK(f.store().waiting("merge")["merge"] == 3);
  // The one ahead of third leaves: third looks again and sees only first.
  second.leave();
  CHECK_FALSE(second.joined());
  REQUIRE(third.look_ahead(third.clock()));
  CHECK(third.ahead() == 1);
  first.leave();
  CHECK_FALSE(third.look_ahead(third.clock()));  // first now
  third.leave();
  CHECK(f.store().waiting("merge")["merge"] == 0);
}

TEST_CASE("LeaseQueue_APlaceThatStoppedBeatingIsRemovedByTheOneBehind") {
  Fixture f;
  LeaseQueue silent(f.store(), "job"), behind(f.store(), "job");
  // A waiter of another host (not judged by its pid) with a 1 s TTL that never beats.
  LeaseHolder elsewhere = lease_holder("silent");
  elsewhere.host = "host-b";
  elsewhere.host_id = "id-b";
  silent.join(elsewhere, 1s);
  behind.join(lease_holder("behind", getpid()), 5s);
  REQUIRE(behind.look_ahead(behind.clock()));
  CHECK_FALSE(behind.ahead_dead(std::chrono::steady_clock::now(), behind.clock()));  // fresh yet
  // Past its TTL and the margin, with no heartbeat: dead, and its place is removed.
  std::this_thread::sleep_until(behind.ahead_expires() + 50ms);
  CHECK(behind.ahead_dead(std::chrono::steady_clock::now(), behind.clock()));
  CHECK_FALSE(behind.look_ahead(behind.clock()));
  CHECK(f.store().waiting("job")["job"] == 1);  // only `behind` is left in line
  behind.leave();
}
