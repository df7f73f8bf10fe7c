// A semaphore on leases: at most `limit` holders of NAME at once, each
// holding one permit, lease "<NAME>.permit.<k>" (k below the limit), with its
// own fencing token and TTL, kept and stopped as any lease is. The limit is
// the semaphore's, stored at "_limit.<NAME>" and changed only by CAS.
// Waiters take turns at the gate, a Mutex on "<NAME>.gate" (arrival order,
// no herd); the one at the gate watches the permits and the limit until a
// permit under the limit is free, takes it by CAS, and leaves the gate to
// the next (adr/0029).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "swarm/lease/lease.h"

namespace swarm {

inline constexpr int kMaxPermits = 1000;

// "<name>.permit.<k>", and the gate "<name>.gate".
std::string permit_lease(const std::string& name, int k);
std::string gate_lease(const std::string& name);
// The permit number of a permit's lease name (and its semaphore); nullopt for another name.
std::optional<int> permit_of(const std::string& lease, std::string* semaphore = nullptr);
// A limit of 1 to kMaxPermits; bad_input naming it otherwise.
void require_limit(int limit);

class Semaphore {
 public:
  Semaphore(LeaseStore store, std::string name);

  // The stored limit (nullopt: none: no semaphore by that name).
  std::optional<int> limit() const;
  // Stores `limit` when none is; bad_input naming the stored one when it is another.
  void require(int limit) const;
  // `swarm lease limit`: the stored limit changed to `limit` by CAS (retried
  // on a race); not_found when there is none. Returns the one it replaced.
  int change(int limit) const;

  // At the gate: waits for a permit under the limit and takes it for `who`
  // (`ttl`). Conflict when `until` passes first (a message naming the
  // holders); Cancelled when `stop()` says so (asked at least every 250 ms).
  Lease take_permit(const LeaseHolder& who, std::chrono::milliseconds ttl, std::chrono::steady_clock::time_point until,
                    const std::function<bool()>& stop) const;
  // One try, no gate: a free permit under the limit now, else conflict.
  Lease try_permit(const LeaseHolder& who, std::chrono::milliseconds ttl) const;

 private:
  struct Look;  // the permits and the limit as one read saw them
  Look look() const;
  std::optional<Lease> grant_free(const Look& seen, const LeaseHolder& who, std::chrono::milliseconds ttl) const;
  std::string busy_text(const Look& seen) const;

  LeaseStore store_;
  std::string name_;
};

}  // namespace swarm
