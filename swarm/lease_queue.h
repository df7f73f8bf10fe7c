// The line of waiters of one lease, kept in the bucket like etcd's mutex keeps
// its waiters: each waiter writes a place, "_wait.<lease>.<id>", and the line
// is ordered by the revision that made each place (its "order"). A waiter
// renews its place every TTL/3; a place not renewed within its TTL is a
// waiter that died, and the line goes on without it. Only the waiter first
// in line tries for the lease, so a release wakes one CAS, not a herd.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "kv/watch.h"
#include "swarm/lease.h"

namespace swarm {

class LeaseQueue {
 public:
  using Steady = std::chrono::steady_clock;

  LeaseQueue(LeaseStore store, std::string lease);

  // This waiter's place: joined (a CAS create), renewed (CAS), left (a CAS
  // delete; quietly, whatever happened to it meanwhile).
  void join(const LeaseHolder& who, std::chrono::milliseconds ttl);
  void renew();
  void leave() noexcept;
  bool joined() const { return !key_.empty(); }
  std::uint64_t order() const { return order_; }

  // The line as the watch of its places tells it.
  kv::Watch watch() const;
  // Applies a watch event seen at `seen`; `server_now` is the server's clock
  // then, for the age of a place that was there before the watch began
  // (`aged`); a place written while we watch is taken as new.
  void apply(const kv::WatchEvent& event, Steady::time_point seen, TimePoint server_now, bool aged,
             std::chrono::nanoseconds uncertainty);
  // Whether this waiter is first among the live places at `now`.
  bool first(Steady::time_point now) const;
  // When the next place ahead of this one expires (to look again then).
  std::optional<Steady::time_point> next_expiry_ahead(Steady::time_point now) const;
  // Removes places ahead that expired (their waiters died): by CAS, quietly.
  void clear_dead_ahead(Steady::time_point now);
  // Live places ahead of this one.
  int ahead(Steady::time_point now) const;

 private:
  struct Place {
    std::uint64_t order = 0;
    std::uint64_t revision = 0;
    Steady::time_point expires;
    LeaseRecord waiter;  // who waits there
  };
  // A place is dead when its TTL ran out, or at once when its waiter was a
  // process of this host that is gone (killed: it never left the line).
  bool dead(const Place& place, Steady::time_point now) const;
  LeaseStore store_;
  std::string lease_;
  std::string key_;  // this waiter's place ("" before join)
  LeaseRecord record_;
  std::uint64_t order_ = 0;
  std::uint64_t revision_ = 0;
  std::map<std::string, Place> places_;  // by key, this waiter's own included
};

// When a record seen at `seen`, `age` old then by the server's clock, expires
// for a waiter: its TTL minus that age after `seen`, plus the margin
// (adr/0011). A clock that could not be read counts the age as 0.
std::chrono::steady_clock::time_point expiry_seen_at(std::chrono::steady_clock::time_point seen,
                                                     std::chrono::milliseconds ttl, std::chrono::milliseconds age,
                                                     std::chrono::nanoseconds uncertainty);

}  // namespace swarm
