// A slot's claim on its task: the lease task.<id> (task_lease_name), held
// by the slot, so that two slots never work the same task. It lives with the
// session: taken at join with the session's TTL, renewed with every renewal
// of the session (in the same round trip), released at close. A stale
// takeover or a --force rejoin of the same slot keeps it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "swarm/base/host.h"
#include "swarm/lease/lease.h"

namespace swarm {

class TaskLeases : public SlotLeases<TaskLeases> {
 public:
  using SlotLeases::SlotLeases;

  // Takes the lease of `task` for `slot`, or keeps it when `slot` holds it
  // already (`kept` says which). Conflict naming the slot that holds it otherwise.
  Lease claim(const std::string& slot, const std::string& task, std::int64_t pid, bool* kept = nullptr) const;
  // What claim would refuse, found by a read alone (a join asks this before
  // it writes anything, so that a refused join changes nothing).
  void require_claimable(const std::string& slot, const std::string& task) const;
  // The lease of `task` as it is now (nullopt: none).
  std::optional<LeaseEntry> read(const std::string& task) const;
  // Whether `entry` is the claim of `slot` on `task`.
  static bool held_by(const LeaseEntry& entry, const std::string& slot, const std::string& task);
  // The write that renews it, sent with the session's (kv::Bucket::update_together).
  // With the session's TTL as it is now (`up --ttl` changes it in place).
  kv::Bucket::Write renewal(const LeaseEntry& held, std::chrono::milliseconds ttl) const;
  // After a renewal of the session whose task lease was refused, missing or
  // not this slot's: claims it again when it is free; otherwise what to say.
  std::string reclaim(const std::string& slot, const std::string& task, std::int64_t pid) const;
  // Releases the lease of `task` when `slot` holds it; a warning when that
  // failed, "" otherwise (also when it was not this slot's to release).
  std::string release(const std::string& slot, const std::string& task) const;
};

}  // namespace swarm
