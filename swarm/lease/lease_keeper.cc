#include "swarm/lease/lease_keeper.h"

#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/test_seam.h"
#include "swarm/base/warnings.h"
#include "swarm/lease/events.h"

namespace swarm {

namespace {

using std::chrono::milliseconds;

// After a renewal that failed but may still succeed, the next try.
constexpr milliseconds kRetryPause{100};
// How long the journal may take to hear that the lease was lost.
constexpr milliseconds kLostEventBudget{1000};

}  // namespace

milliseconds give_up_lead(milliseconds ttl) { return std::clamp(ttl / 5, milliseconds(200), milliseconds(5000)); }
milliseconds kill_lead(milliseconds ttl) { return std::clamp(ttl / 15, milliseconds(50), milliseconds(1000)); }

LeaseKeeper::LeaseKeeper(LeaseStore store, Lease lease, OnLost on_lost)
    : store_(std::move(store)), on_lost_(std::move(on_lost)), lease_(std::move(lease)) {
  thread_ = std::thread([this] { run(); });
}

LeaseKeeper::~LeaseKeeper() { stop(); }

void LeaseKeeper::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

Lease LeaseKeeper::lease() const {
  std::lock_guard lock(mu_);
  return lease_;
}

void LeaseKeeper::run() {
  const milliseconds ttl = lease_.record.ttl;
  // Waits on the boot clock in slices of the steady one (a condition
  // variable knows no CLOCK_BOOTTIME); false when stopped.
  auto sleep_until = [&](BootTime when) {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      auto left = when - BootClock::now();
      if (left <= BootClock::duration::zero()) return true;
      wake_.wait_for(lock, std::min<BootClock::duration>(left, std::chrono::milliseconds(100)));
    }
    return false;
  };
  auto lose = [&](const std::string& why, BootTime deadline) {
    lost_ = true;
    swarm::log::debug("lease {}: lost: {}", lease_.name, why);
    if (on_lost_) on_lost_(why, deadline);
    // After the work is stopped, and briefly: the journal may be as far
    // out of reach as the lease was.
    store_.journal().with_budget(kLostEventBudget).record(lease_lost_event(store_.bucket_name(), lease(), why));
  };

  // A third of the TTL after the grant was sent, as after each renewal: a
  // grant that took long to come (a failover, a busy host) is renewed soon,
  // not a third of the TTL after the command started, which may be too late.
  BootTime next = lease_.deadline - ttl + ttl / 3;
  while (sleep_until(next)) {
    Lease current = lease();
    const BootTime give_up = current.deadline - give_up_lead(ttl);
    auto left = std::chrono::duration_cast<milliseconds>(give_up - BootClock::now());
    if (left.count() <= 0) {
      lose("it could not be renewed before its deadline", current.deadline);
      return;
    }
    try {
      // A renewal may take what is left before giving up, and no more.
      stop_here_for_test(kLeaseStop, "renew");
      Lease renewed = store_.with_budget(left).renew(current);
      stop_here_for_test(kLeaseStop, "renewed");
      {
        std::lock_guard lock(mu_);
        lease_ = renewed;
      }
      next = renewed.deadline - ttl + ttl / 3;  // a third of the TTL after it was sent
    } catch (const Error& e) {
      if (e.kind() == Errc::conflict) {
        lose(e.what(), current.deadline);
        return;
      }
      warn(log::format("lease {}: renewal failed, trying again: {}", current.name, e.what()));
      // Never past the moment to give up: a renewal that used all it had
      // is given up at once, so the work hears it TTL/5 before the deadline.
      next = std::min(BootClock::now() + kRetryPause, give_up);
    }
  }
}

}  // namespace swarm
