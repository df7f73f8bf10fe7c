// Leases, the mutex's line and the keeper against a real nats-server: CAS on
// revisions, fencing tokens, expiry without per-key TTL, FIFO waiters.
#include "swarm/lease/lease.h"

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
#include "swarm/lease/lease_keeper.h"
#include "swarm/lease/mutex.h"

using namespace swarm;
using namespace std::chrono_literals;
using testing::kind_of;

namespace {
using Fixture = testing::LeaseFixture;
LeaseHolder holder(const std::string& name, std::int64_t pid = 4242) { return testing::lease_holder(name, pid); }
}  // namespace

TEST_CASE("Lease_TokenIsTheGrantingRevisionAndOnlyItsHolderRenewsOrReleases") {
  // the token is the revision that granted the lease and survives renewals; a token that is no longer the lease's
  // is a conflict that changes nothing; a release lets the next grant count a transition.
  Fixture f;
  auto store = f.store();
  Lease a = store.acquire("task.T-42", holder("a"), 10s);
  CHECK(a.token == a.revision);
  CHECK(store.get("task.T-42")->token() == a.token);
  Lease renewed = store.renew(a);
  CHECK(renewed.token == a.token);
  CHECK(renewed.revision > a.revision);
  CHECK(store.get("task.T-42")->token() == a.token);  // written into the record by the renewal
  CHECK(kind_of([&] { store.acquire("task.T-42", holder("b"), 10s); }) == Errc::conflict);

  auto before = f.bucket.get("task.T-42")->revision;
  CHECK(kind_of([&] { store.renew("task.T-42", a.token + 1000); }) == Errc::conflict);
  CHECK(kind_of([&] { store.release("task.T-42", a.token + 1000); }) == Errc::conflict);
  CHECK(f.bucket.get("task.T-42")->revision == before);  // nothing changed
  CHECK(kind_of([&] { store.renew("no-such-lease", 1); }) == Errc::not_found);

  store.release("task.T-42", a.token);
  CHECK_FALSE(store.get("task.T-42"));
  Lease b = store.acquire("task.T-42", holder("b"), 10s);
  CHECK(b.token > a.token);
  CHECK(b.record.transitions == 1);  // counted across the release
  CHECK(kind_of([&] { store.release(renewed); }) == Errc::conflict);  // an old grant cannot release the new one
  CHECK(store.get("task.T-42")->record->holder == "b");
}

TEST_CASE("Lease_ExpiredOnlyAfterItsTtlAndNeverRenewedAfter") {
  // a lease not renewed is taken only once its TTL (by the server's clock, plus the margin) has passed; its old
  // holder can then neither renew it by token nor act on it.
  Fixture f;
  auto store = f.store();
  Lease a = store.acquire("job", holder("a"), 1s);
  CHECK(kind_of([&] { f.other_store().acquire("job", holder("b"), 1s); }) == Errc::conflict);
  std::this_thread::sleep_for(600ms);
  CHECK(kind_of([&] { f.other_store().acquire("job", holder("b"), 1s); }) == Errc::conflict);
  std::this_thread::sleep_for(700ms);  // 1.3 s: past the TTL and the margin
  CHECK(kind_of([&] { store.renew("job", a.token); }) == Errc::conflict);  // expired: not renewed by token
  Lease b = f.other_store().acquire("job", holder("b"), 1s);
  CHECK(b.token > a.token);
  CHECK(b.record.transitions == 1);
  CHECK(kind_of([&] { store.renew(a); }) == Errc::conflict);  // the old grant is gone
}

TEST_CASE("Lease_TaskLeaseNamesAndKeysThatAreNoLease") {
  // a task id that is a lease name keeps it; any other gets a stable hash; queue and resign keys are no leases.
  CHECK(task_lease_name("T-42") == "task.T-42");
  CHECK(task_lease_name("a.b") == "task.a.b");
  auto hashed = task_lease_name("gh#17");
  CHECK(hashed.rfind("task.h", 0) == 0);
  CHECK(hashed.size() == 22);
  CHECK(task_lease_name("gh#17") == hashed);
  CHECK(task_lease_name("gh#18") != hashed);
  CHECK(task_lease_name("acme/api#9") != hashed);
  CHECK(is_lease_key("task.T-42"));
  CHECK_FALSE(is_lease_key(queue_prefix("x") + "abc"));
  CHECK_FALSE(is_lease_key(resign_key("x")));
}

TEST_CASE("Mutex_WaitersAreGrantedInArrivalOrder") {
  // five waiters that asked 100 ms apart are granted the lease one at a time, in that order, each with a higher
  // token, and none while another holds it.
  Fixture f;
  Lease first = f.store().acquire("merge", holder("first"), 5s);
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
      Mutex m(store, "merge", holder("w" + std::to_string(i), getpid()), 5s);  // a live process: a place of a gone one is dead
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
    std::this_thread::sleep_for(100ms);
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
  CHECK(kind_of([&] { store.acquire("merge", holder("b"), 5s); }) == Errc::conflict);
  auto start = std::chrono::steady_clock::now();
  Mutex m(f.other_store(), "merge", holder("live"), 5s);
  Lease l = m.lock(10s);
  auto waited = std::chrono::steady_clock::now() - start;
  CHECK(waited < 3s);   // about the dead place's TTL and margin, not more
  CHECK(waited > 500ms);
  CHECK(l.record.holder == "live");
  CHECK(store.waiting("merge")["merge"] == 0);  // the dead place was cleared, the winner left the line
}

TEST_CASE("Mutex_CancelLeavesTheLineAtOnce") {
  // a waiter told to stop (a signal) leaves its place at once, and lock() throws Cancelled.
  Fixture f;
  Lease held = f.store().acquire("merge", holder("holder"), 10s);
  Mutex m(f.other_store(), "merge", holder("waiter"), 10s);
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

TEST_CASE("LeaseKeeper_RenewsAndReportsALossAtOnce") {
  // the keeper renews every TTL/3 (the lease outlives its TTL), and reports at once when the lease was taken from
  // it, with a deadline still ahead.
  Fixture f;
  auto store = f.store();
  Lease l = store.acquire("job", holder("a"), 1s);
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
  Lease l = store.acquire("late", holder("a"), 1s);
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
