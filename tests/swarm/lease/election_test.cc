// The leader watch against a real nats-server: the leader, then each change.
#include "swarm/lease/election.h"

#include <doctest/doctest.h>

#include "support/lease_fixture.h"
#include "swarm/lease/lease.h"

using namespace swarm;
using namespace std::chrono_literals;
using testing::lease_holder;
using Fixture = testing::LeaseFixture;

TEST_CASE("LeaderWatch_ReportsTheLeaderThenEachChange") {
  // an observer hears who leads, a new leader, a release and an expiry, but not a renewal.
  Fixture f;
  auto store = f.store();
  LeaderWatch watch(f.other_store(), "scheduler");
  auto first = watch.next(1s);
  REQUIRE(first);
  CHECK(first->change == Leadership::Change::current);
  CHECK_FALSE(first->leader);
  Lease a = store.acquire("scheduler", lease_holder("a"), 1s);
  auto elected = watch.next(3s);
  REQUIRE(elected);
  CHECK(elected->change == Leadership::Change::elected);
  CHECK(elected->token == a.token);
  Lease renewed = store.renew(a);
  auto released_or_nothing = watch.next(200ms);
  CHECK_FALSE(released_or_nothing);  // a renewal is no change
  store.release(store.renew(renewed));
  auto released = watch.next(3s);
  REQUIRE(released);
  CHECK(released->change == Leadership::Change::released);
  Lease b = store.acquire("scheduler", lease_holder("b"), 1s);
  REQUIRE(watch.next(3s));  // elected b
  auto expired = watch.next(5s);  // b never renews
  REQUIRE(expired);
  CHECK(expired->change == Leadership::Change::expired);
  (void)b;
}
