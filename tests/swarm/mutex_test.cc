// The mutex's line at scale: who wakes for what, against a real nats-server.
#include "swarm/lease/mutex.h"

#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include "support/lease_fixture.h"
#include "swarm/lease/lease_queue.h"

using namespace swarm;
using namespace std::chrono_literals;

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
