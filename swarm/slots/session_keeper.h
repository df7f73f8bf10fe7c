// Keeps a session alive while its agent works, however long it thinks
// (`swarm run`): renews the record, its task lease and its port block every
// TTL/3 on a thread of its own (SlotLifecycle::renew: the leases read, then
// one round trip for the writes), and says as soon as the session is lost:
// taken over or evicted (a renewal refused), or not renewed before its
// deadline (NATS out of reach; a watchdog thread says so even while a
// renewal hangs). The deadline is the session's TTL after the last renewal that
// succeeded was sent, on CLOCK_BOOTTIME: whatever works under the session
// must be gone by then, as a lease holder's work (adr/0011, adr/0036).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "swarm/base/boot_clock.h"
#include "kv/bucket.h"
#include "swarm/slots/lifecycle.h"

namespace swarm {

class SessionKeeper {
 public:
  // How a session was lost.
  enum class Loss {
    taken,        // another session holds the slot now (a --force join, a takeover)
    evicted,      // the record is gone (evicted, closed, or expired)
    unreachable,  // no renewal got through before its deadline (NATS away)
  };
  // Why (one sentence), and the deadline the work must be gone by.
  using OnLost = std::function<void(Loss loss, const std::string& why, BootTime deadline)>;

  // Starts renewing `entry` (this host's session, as last written: its
  // revision), whose last write was sent at `sent`. `on_lost` runs once, on
  // one of the keeper's threads. `pending`: what the renewals write until
  // one of them gets through (the agent's pid, when the first write of it
  // failed).
  SessionKeeper(const SlotLifecycle& lifecycle, SessionEntry entry, BootTime sent, OnLost on_lost,
                Presence pending = {});
  ~SessionKeeper();
  SessionKeeper(const SessionKeeper&) = delete;
  SessionKeeper& operator=(const SessionKeeper&) = delete;

  // Stops renewing; idempotent. Waits at most for one renewal under way.
  void stop();
  bool lost() const { return lost_; }
  // The deadline now: the TTL after the last renewal that succeeded was sent.
  BootTime deadline() const;
  // The record as the last renewal left it.
  SessionEntry entry() const;

 private:
  void run();
  // Declares the loss, once (from either thread).
  void lose(Loss loss, const std::string& why);
  // The watchdog: a renewal that hangs (a server that takes requests and
  // never answers) must not carry the work past its deadline.
  void watch();

  const SlotLifecycle& lifecycle_;
  OnLost on_lost_;
  // The bucket's; read again when its config changes (written by the
  // renewing thread under mu_, read by the watchdog under it).
  std::chrono::milliseconds ttl_;
  // A change of the bucket's config (`up --ttl` lowering it) renews at once.
  std::optional<kv::Bucket::ConfigChanges> changes_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  SessionEntry entry_;
  Presence pending_;
  // The task lease as the last renewal left it (renewed without a read
  // first); nullopt: read it.
  std::optional<LeaseEntry> task_;
  BootTime deadline_;
  bool stopping_ = false;
  std::atomic<bool> lost_{false};
  std::thread thread_;
  std::thread watchdog_;
};

std::string_view to_string(SessionKeeper::Loss loss);

}  // namespace swarm
