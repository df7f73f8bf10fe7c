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
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// The semaphore whose limit key ("_limit.<NAME>") `key` is; nullopt for another key.
std::optional<std::string> limit_key_of(std::string_view key);
// The limit a stored limit's value names; nullopt when it names none (corrupt).
std::optional<int> limit_in(const std::string& value);
// Every semaphore's stored limit, by name (corrupt ones left out).
std::map<std::string, int> semaphore_limits(const LeaseStore& store);

// A semaphore as listings show it: its limit, its permits held now, and its
// line (the one at the gate and those behind it).
struct SemaphoreSummary {
  std::string name;
  int limit = 0;
  int held = 0;
  int waiters = 0;
};
// One per semaphore of `limits`, counted from `leases` (its permits and its
// gate, as listed), `waiting` (live places in each lease's line) at `now`
// (the server's clock); in name order.
std::vector<SemaphoreSummary> summarize_semaphores(const std::map<std::string, int>& limits,
                                                   const std::vector<LeaseEntry>& leases,
                                                   const std::map<std::string, int>& waiting, TimePoint now);

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
