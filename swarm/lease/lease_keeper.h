// Keeps a held lease alive while the work it guards runs: renews it every
// TTL/3 on a thread of its own, and says as soon as the lease is lost (a
// renewal refused: it was taken or released) or can no longer be renewed in
// time. The holder's deadline is its TTL after it sent the last renewal that
// succeeded, on CLOCK_BOOTTIME; whatever the lease guards must be stopped
// before it (adr/0011, adr/0012).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "swarm/lease/lease.h"

namespace swarm {

// How long before its deadline a holder that cannot renew gives up and stops
// its work: long enough for a SIGTERM to be heard (a fifth of the TTL, 200 ms
// to 5 s).
std::chrono::milliseconds give_up_lead(std::chrono::milliseconds ttl);
// How long before the deadline the work gets SIGKILL if SIGTERM was not
// enough (a fifteenth of the TTL, 50 ms to 1 s): gone before another holder.
std::chrono::milliseconds kill_lead(std::chrono::milliseconds ttl);

class LeaseKeeper {
 public:
  // Why the lease is lost, and the deadline the work must be gone by.
  using OnLost = std::function<void(const std::string& why, BootTime deadline)>;

  // Starts renewing. `on_lost` runs once, on the keeper's thread.
  LeaseKeeper(LeaseStore store, Lease lease, OnLost on_lost);
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  // Stops renewing (before a release); idempotent.
  void stop();
  // The lease as last renewed (for its release), and whether it was lost.
  Lease lease() const;
  bool lost() const { return lost_; }

 private:
  void run();

  LeaseStore store_;
  OnLost on_lost_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  Lease lease_;
  bool stopping_ = false;
  std::atomic<bool> lost_{false};
  std::thread thread_;
};

}  // namespace swarm
