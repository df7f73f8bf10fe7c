// The line of waiters of one lease, kept in the bucket as etcd's mutex keeps
// its waiters, and watched as etcd's waiters watch: each only the place just
// before its own (adr/0012). A waiter writes its place, "_wait.<lease>.<id>",
// once: the revision that made it is its order in line; it deletes it when it
// leaves. Its heartbeats go to "_beat.<lease>.<id>", a key no one watches, so
// renewing a place wakes no one. A place whose waiter has not beaten for its
// TTL is dead: the waiter behind it removes it and looks again. Only the
// waiter first in line watches the lease itself, so a release wakes one
// waiter, and a hand-off costs the same however long the line is.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "kv/watch.h"
#include "swarm/lease/lease.h"

namespace swarm {

class LeaseQueue {
 public:
  using Steady = std::chrono::steady_clock;

  LeaseQueue(LeaseStore store, std::string lease);

  // This waiter's place: joined (a CAS create), renewed (a heartbeat), left
  // (CAS deletes; quietly, whatever happened to it meanwhile).
  // Joining also reads the place back: the server's stamp on it gives the
  // server's clock (clock()), with no request of its own.
  void join(const LeaseHolder& who, std::chrono::milliseconds ttl);
  const ServerClock& clock() const { return clock_; }
  // A heartbeat; false when it finds its place removed (judged dead while
  // this waiter was stuck): the waiter is out of line and must rejoin.
  bool renew();
  // Whether this waiter is still in line. Certain without a round trip while
  // its last place write (join or heartbeat) is younger than its TTL, timed
  // as a holder times its deadline; past that (its heartbeats were stuck), it
  // beats and reads its place back. A waiter first in line asks this before
  // it takes the lease over: one put out of line while it was stuck must not
  // go before those who waited meanwhile.
  bool still_in_line();
  // Leaves (quietly) and joins again at the end of the line.
  void rejoin(const LeaseHolder& who);
  // `granted`: this waiter leaves because it got the lease, so the one
  // behind it is first now; its place's delete marker says so, and that
  // waiter need not read the line again.
  void leave(bool granted = false) noexcept;
  bool joined() const { return !id_.empty(); }
  const std::string& id() const { return id_; }
  // Whether the place `id` of this line is dead (gone, or its waiter's TTL
  // passed since its last write or heartbeat, or its process of this host is
  // gone), on the server's clock `clock`: two reads.
  bool place_dead(const std::string& id, const ServerClock& clock) const;
  std::uint64_t order() const { return order_; }

  // Reads the line (one listing of its places) and finds the live place just
  // ahead of this one, removing dead places ahead on the way (by CAS).
  // false: none is ahead, this waiter is first. A place is ahead when its
  // priority is higher, or equal and it came first (its order is lower).
  // A place that arrives later with a higher priority goes ahead of one that
  // was first: the first in line looks again before it takes the lease.
  bool look_ahead(const ServerClock& clock);
  // Live places ahead of this one, as the last look_ahead counted them.
  int ahead() const { return ahead_count_; }

  // A watch of the place just ahead: it says when that waiter leaves.
  kv::Watch watch_ahead() const;
  // Applies an event of that watch, arrived at `arrived`: whether the place ahead
  // is still there, gone (left, or holding no place record: the line must be
  // looked at again), or gone because its waiter was granted the lease (this
  // waiter is first now).
  enum class Ahead { there, gone, granted };
  Ahead apply_ahead(const kv::WatchEvent& event, Steady::time_point arrived, const ServerClock& clock);
  // When the place ahead expires, unless its waiter beat since.
  Steady::time_point ahead_expires() const { return ahead_ ? ahead_->expires : Steady::time_point::max(); }
  // Whether the place ahead is dead at `now`: its expiry passed and its
  // heartbeat (read now) is no fresher, or its waiter is a process of this
  // host that is gone. A dead place is removed (by CAS). Moves the expiry on
  // when the waiter beat since.
  bool ahead_dead(Steady::time_point now, const ServerClock& clock);

 private:
  struct Place {
    std::string id;
    std::uint64_t order = 0;
    std::uint64_t revision = 0;  // of the place key
    Steady::time_point expires;
    LeaseRecord waiter;
  };
  std::string place_key(const std::string& id) const { return queue_prefix(lease_) + id; }
  std::string beat_key(const std::string& id) const { return beat_prefix(lease_) + id; }
  // When `place` (stored at `stored_at`) expires for a watcher whose answer
  // with it arrived at `arrived`, taking its waiter's last heartbeat into
  // account. `aged`: it was there before the watch began (else it is new).
  Steady::time_point expiry_of(const Place& place, TimePoint stored_at, Steady::time_point arrived,
                               const ServerClock& clock, bool aged) const;
  // Removes a dead place and its heartbeat (CAS, quietly).
  void remove(const Place& place) noexcept;

  LeaseStore store_;
  std::string lease_;
  std::string id_;  // this waiter's place ("" before join)
  LeaseRecord record_;
  std::uint64_t order_ = 0;
  std::uint64_t beat_revision_ = 0;  // 0: no heartbeat written yet
  BootTime place_deadline_{};        // the place is surely live until then (its last write's TTL)
  bool lapsed_ = false;              // a heartbeat came after that: the place must be read back
  std::optional<Place> ahead_;
  int ahead_count_ = 0;
  ServerClock clock_;
};

}  // namespace swarm
