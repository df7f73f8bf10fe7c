// The mutex's line against a real nats-server: FIFO waiters, dead places,
// cancelling; who wakes for what at scale.
#include "swarm/lease/mutex.h"

#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "support/expect.h"
#include "support/lease_fixture.h"
#include "swarm/base/error.h"
#include "swarm/lease/lease.h"

using namespace swarm;
using namespace std::chrono_literals;
using testing::kind_of;
using testing::lease_holder;
using Fixture = testing::LeaseFixture;

TEST_CASE("Mutex_WaitersAreGrantedInArrivalOrder") {
  // five waiters, each asking once the one before it is in line, are granted the lease one at a time, in that
  // order, each with a higher token, and none while another holds it.
  Fixture f;
  Lease first = f.store().acquire("merge", lease_holder("first"), 5s);
  constexpr int kWaiters = 5;
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::uint64_t> tokens;
  std::atomic<int> holding{0};
  std::atomic<bool> overlap{false};
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] {
      auto store = f.other_store();
      Mutex m(store, "merge", lease_holder("w" + std::to_string(i), getpid()), 5s);  // a live process: a place of a gone one is dead
      Lease l = m.lock(30s);
      if (holding++ != 0) overlap = true;
      {
        std::lock_guard lock(mu);
        order.push_back(i);
        tokens.push_back(l.token);
      }
      std::this_thread::sleep_for(50ms);
      --holding;
      store.release(l);
    });
    // Arrival by the line itself, not by a sleep: the next asks once this one's place is there.
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (f.store().waiting("merge")["merge"] < i + 1 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(2ms);
    REQUIRE(f.store().waiting("merge")["merge"] == i + 1);
  }
  f.store().release(first);
  for (auto& w : waiters) w.join();
  CHECK(order == std::vector<int>{0, 1, 2, 3, 4});
  CHECK_FALSE(overlap);
  for (std::size_t i = 1; i < tokens.size(); ++i) CHECK(tokens[i] > tokens[i - 1]);
}

TEST_CASE("Mutex_ADeadWaitersPlaceExpiresAndTheLineGoesOn") {
  // a place whose waiter died (never renewed) stops blocking the line after its TTL; try-once respects a live one.
  Fixture f;
  auto store = f.store();
  LeaseRecord dead;
  dead.name = "merge";
  dead.holder = "dead";
  dead.host = "host-a";
  dead.ttl = 1s;
  f.bucket.create(queue_prefix("merge") + "0000000000000001", to_json(dead));
  // While the dead waiter's place is fresh, the free lease is not handed past it.
  CHECK(kind_of([&] { store.acquire("merge", lease_holder("b"), 5s); }) == Errc::conflict);
  auto start = std::chrono::steady_clock::now();
  std::optional<Mutex> m(std::in_place, f.other_store(), "merge", lease_holder("live"), 5s);
  Lease l = m->lock(10s);
  auto waited = std::chrono::steady_clock::now() - start;
  m.reset();  // a granted waiter leaves the line in the background: done once its mutex is
  CHECK(waited < 3s);   // about the dead place's TTL and margin, not more
  CHECK(waited > 500ms);
  CHECK(l.record.holder == "live");
  CHECK(store.waiting("merge")["merge"] == 0);  // the dead place was cleared, the winner left the line
}

TEST_CASE("Mutex_CancelLeavesTheLineAtOnce") {
  // a waiter told to stop (a signal) leaves its place at once, and lock() throws Cancelled.
  Fixture f;
  Lease held = f.store().acquire("merge", lease_holder("holder"), 10s);
  Mutex m(f.other_store(), "merge", lease_holder("waiter"), 10s);
  std::atomic<bool> cancelled{false};
  std::thread waiter([&] {
    try {
      m.lock(std::nullopt);
    } catch (const Cancelled&) {
      cancelled = true;
    }
  });
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (f.store().waiting("merge")["merge"] == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  REQUIRE(f.store().waiting("merge")["merge"] == 1);
  m.cancel();
  waiter.join();
  CHECK(cancelled);
  CHECK(f.store().waiting("merge")["merge"] == 0);
  CHECK(f.store().get("merge")->token() == held.token);  // the holder is untouched
}

TEST_CASE("Mutex_AWaiterWakesOnlyForThePlaceAheadAndTheLease") {
  // twelve waiters in line while the holder and every waiter renew for several periods: no renewal wakes any
  // waiter but the first (who watches the lease); after the release each is granted in order, waking a bounded
  // number of times however long the line.
  testing::LeaseFixture f;
  auto store = f.store();
  Lease held = store.acquire("busy", testing::lease_holder("holder"), 3s);
  constexpr int kWaiters = 12;
  std::vector<std::unique_ptr<Mutex>> mutexes;
  std::vector<std::thread> threads;
  std::mutex mu;
  std::vector<int> order;
  std::vector<int> wakeups(kWaiters, 0);
  for (int i = 0; i < kWaiters; ++i) {
    mutexes.push_back(std::make_unique<Mutex>(f.other_store(), "busy",
                                              testing::lease_holder("w" + std::to_string(i), getpid()), 3s));
    threads.emplace_back([&, i] {
      Lease l = mutexes[static_cast<std::size_t>(i)]->lock(60s);
      {
        std::lock_guard lock(mu);
        order.push_back(i);
        wakeups[static_cast<std::size_t>(i)] = mutexes[static_cast<std::size_t>(i)]->wakeups();
      }
      std::this_thread::sleep_for(10ms);
      f.store().release(l);
    });
    // Arrival order made by the line itself: the next joins once this one has its place.
    while (store.waiting("busy")["busy"] < i + 1) std::this_thread::sleep_for(2ms);
  }
  // Every watch has replayed what it watches.
  std::this_thread::sleep_for(300ms);
  std::vector<int> before;
  for (auto& m : mutexes) before.push_back(m->wakeups());
  // Three and a half renewal periods of the holder (TTL/3 = 1 s) and of every waiter's place.
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(1s);
    held = store.renew(held);
  }
  std::this_thread::sleep_for(500ms);
  for (int i = 1; i < kWaiters; ++i)
    CHECK_MESSAGE(mutexes[static_cast<std::size_t>(i)]->wakeups() == before[static_cast<std::size_t>(i)],
                  "waiter " << i << " woke for a renewal");
  CHECK(mutexes[0]->wakeups() >= before[0] + 3);  // the first hears the holder's renewals, and only it
  store.release(held);
  for (auto& t : threads) t.join();
  std::vector<int> expected(kWaiters);
  for (int i = 0; i < kWaiters; ++i) expected[static_cast<std::size_t>(i)] = i;
  CHECK(order == expected);
  for (int i = 1; i < kWaiters; ++i) CHECK_MESSAGE(wakeups[static_cast<std::size_t>(i)] <= 8, "waiter " << i);
}
