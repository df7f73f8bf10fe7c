// The leader watch against a real nats-server: the leader, then each change.
#include "swarm/lease/election.h"

#include <doctest/doctest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "support/expect.h"
#include "support/lease_fixture.h"
#include "support/nats_server.h"
#include "swarm/bootstrap.h"
#include "swarm/error.h"
#include "swarm/lease/election.h"
#include "swarm/lease/lease.h"
#include "swarm/lease/lease_keeper.h"
#include "swarm/lease/mutex.h"

using namespace swarm;
using namespace std::chrono_literals;
using testing::kind_of;

namespace {
using Fixture = testing::LeaseFixture;
LeaseHolder holder(const std::string& name, std::int64_t pid = 4242) { return testing::lease_holder(name, pid); }
}  // namespace

TEST_CASE("LeaderWatch_ReportsTheLeaderThenEachChange") {
  // an observer hears who leads, a new leader, a release and an expiry, but not a renewal.
  Fixture f;
  auto store = f.store();
  LeaderWatch watch(f.other_store(), "scheduler");
  auto first = watch.next(1s);
  REQUIRE(first);
  CHECK(first->change == Leadership::Change::current);
  CHECK_FALSE(first->leader);
  Lease a = store.acquire("scheduler", holder("a"), 1s);
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
  Lease b = store.acquire("scheduler", holder("b"), 1s);
  REQUIRE(watch.next(3s));  // elected b
  auto expired = watch.next(5s);  // b never renews
  REQUIRE(expired);
  CHECK(expired->change == Leadership::Change::expired);
  (void)b;
}
