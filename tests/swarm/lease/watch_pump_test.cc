// Several KV watches read at once against a real nats-server: each event
// tagged with its watch, a removed watch heard no more, a wake() that ends
// a wait at once, and a timeout that ends it empty-handed.
#include "swarm/lease/watch_pump.h"

#include <doctest/doctest.h>

#include <thread>

#include "support/lease_fixture.h"

using namespace swarm;
using namespace std::chrono_literals;
using Fixture = testing::LeaseFixture;

namespace {

// The next put event, skipping the caught-up markers.
std::optional<WatchPump::Event> next_put(WatchPump& pump, std::chrono::milliseconds within) {
  const auto until = std::chrono::steady_clock::now() + within;
  while (auto event = pump.next(until))
    if (event->event.kind == kv::WatchEvent::Kind::put) return event;
  return std::nullopt;
}

}  // namespace

TEST_CASE("WatchPump_EventsComeTaggedWithTheirWatchUntilItIsRemoved") {
  Fixture f;
  WatchPump pump;
  pump.add(f.bucket.watch("a"), 1);
  pump.add(f.bucket.watch("b"), 2);
  f.bucket.create("b", "x");
  auto first = next_put(pump, 5s);
  REQUIRE(first);
  CHECK(first->source == 2);
  CHECK(first->event.entry.key == "b");
  f.bucket.create("a", "y");
  auto second = next_put(pump, 5s);
  REQUIRE(second);
  CHECK(second->source == 1);
  CHECK(second->arrived >= first->arrived);
  pump.remove(2);
  f.bucket.create("c", "unwatched");
  f.bucket.update("b", "z", f.bucket.get("b")->revision);  // its watch was removed: nothing comes
  CHECK_FALSE(next_put(pump, 300ms));
  pump.stop();
}

TEST_CASE("WatchPump_AWakeEndsAWaitAtOnceAndATimeoutEndsItEmpty") {
  Fixture f;
  WatchPump pump;
  pump.add(f.bucket.watch("quiet"), 1);
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(next_put(pump, 200ms));
  CHECK(std::chrono::steady_clock::now() - start >= 190ms);
  std::thread waker([&] {
    std::this_thread::sleep_for(100ms);
    pump.wake();
  });
  const auto waited_from = std::chrono::steady_clock::now();
  auto event = pump.next(waited_from + 10s);
  while (event && event->event.kind == kv::WatchEvent::Kind::caught_up) event = pump.next(waited_from + 10s);
  waker.join();
  CHECK_FALSE(event);
  CHECK(std::chrono::steady_clock::now() - waited_from < 5s);
  pump.stop();
}
