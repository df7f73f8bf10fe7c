// A distributed lock on top of a lease: waiters queue in the bucket
// (LeaseQueue) and are granted the lease one at a time, in the order they
// asked. Each waiter watches only the place just ahead of its own, and only
// the first in line watches the lease: no polling, no herd at a release, and
// no waiter woken by another's renewal. What the holder does with the lease
// (keep it alive, stop its work when it is lost) is LeaseKeeper's.
#pragma once

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

#include "swarm/lease/lease.h"
#include "swarm/lease/watch_pump.h"

namespace swarm {

// lock() gave up because cancel() was called (a signal, say).
struct Cancelled : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Mutex {
 public:
  // `hear_handover` (an election's candidate): while in line it also hears
  // requests to its leader to hand over to it (elect --resign --to), and
  // then takes the lease as soon as the leader releases it to it.
  Mutex(LeaseStore store, std::string name, LeaseHolder who, std::chrono::milliseconds ttl,
        bool hear_handover = false);
  // Waits until a granted lock() has left the line.
  ~Mutex();

  // Takes the lease. `wait` 0: at once when it is free and nobody waits in
  // line, else conflict naming the holder (etcd's TryLock). Otherwise in
  // line, for up to `wait` (nullopt: for ever): conflict when it runs out.
  // Leaves the line whatever happens: at once when it fails; when it is
  // granted, in the background while the caller starts its work (leaving
  // takes round trips; the next in line cannot go before a release anyway).
  // Throws Cancelled after cancel().
  Lease lock(std::optional<std::chrono::milliseconds> wait);

  // Makes a waiting lock() leave the line and throw Cancelled; from any
  // thread (not a signal handler).
  void cancel();

  const std::string& name() const { return name_; }
  // Watch events the last lock() woke for while it waited in line (for
  // tests: a waiter hears of the place ahead and, once first, of the lease).
  int wakeups() const { return wakeups_; }
  // The order of this waiter's place in the line while lock() waits (0
  // before it joined): LeaseStore::place_in_line tells its place from it.
  std::uint64_t place_order() const { return order_; }

 private:
  class InLine;
  Lease wait_in_line(std::optional<std::chrono::milliseconds> wait);

  LeaseStore store_;
  std::string name_;
  LeaseHolder who_;
  bool hear_handover_ = false;
  std::chrono::milliseconds ttl_;
  std::atomic<bool> cancelled_{false};
  std::mutex pump_mu_;
  WatchPump* pump_ = nullptr;  // while lock() waits
  std::atomic<int> wakeups_{0};
  std::atomic<std::uint64_t> order_{0};
  // A granted lock() leaving the line; destroyed first, as it uses the above.
  std::future<void> leaving_;
};

}  // namespace swarm
