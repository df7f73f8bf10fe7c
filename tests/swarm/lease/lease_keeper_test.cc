// The keeper against a real nats-server: renewals, a loss reported at once,
// a late grant renewed at once.
#include "swarm/lease/lease_keeper.h"

#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "support/lease_fixture.h"
#include "swarm/lease/lease.h"

using namespace swarm;
using namespace std::chrono_literals;
using testing::lease_holder;
using Fixture = testing::LeaseFixture;

TEST_CASE("LeaseKeeper_RenewsAndReportsALossAtOnce") {
  // the keeper renews every TTL/3 (the lease outlives its TTL), and reports at once when the lease was taken from
  // it, with a deadline still ahead.
  Fixture f;
  auto store = f.store();
  Lease l = store.acquire("job", lease_holder("a"), 1s);
  std::atomic<bool> lost{false};
  std::string why;
  BootTime deadline{};
  {
    LeaseKeeper keeper(store, l, [&](const std::string& w, BootTime d) {
      why = w;
      deadline = d;
      lost = true;
    });
    std::this_thread::sleep_for(2500ms);
    CHECK_FALSE(lost);
    CHECK(store.get("job")->token() == l.token);
    auto lost_at = BootClock::now();
    f.other_store().release("job", l.token);  // an operator releases it
    auto until = std::chrono::steady_clock::now() + 2s;
    while (!lost && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
    CHECK(lost);
    CHECK(why.find("no longer held") != std::string::npos);
    CHECK(deadline > lost_at);
  }
  CHECK_FALSE(store.get("job"));  // nothing was written after the loss
}

TEST_CASE("LeaseKeeper_AGrantThatCameLateIsRenewedAtOnce") {
  // a grant whose answer took long (a failover, a starved host) reaches its keeper with little of its TTL left:
  // the keeper renews on the grant's schedule, at once, instead of a third of the TTL after it started, which
  // would be past the point of giving up.
  Fixture f;
  auto store = f.store();
  Lease l = store.acquire("late", lease_holder("a"), 1s);
  std::this_thread::sleep_for(600ms);  // 400 ms left; giving up at 200 ms left
  std::atomic<bool> lost{false};
  {
    LeaseKeeper keeper(store, l, [&](const std::string&, BootTime) { lost = true; });
    std::this_thread::sleep_for(1500ms);
    CHECK_FALSE(lost);
    CHECK(keeper.lease().revision > l.revision);
  }
  CHECK(store.get("late")->token() == l.token);
}
