// A slot's block of ports (join --ports K): K consecutive ports of the
// workspace's range (up --ports A-B) that no live slot on any host holds.
// Each block is a lease, "ports.<first>-<last>", held by the slot: taken at
// join with the session's TTL, renewed with every renewal of the session (in
// the same round trip as the task lease), released at close, free when the
// session expires. Blocks of different sizes have different names, so two
// joins may take overlapping ones at once: each looks again after its grant,
// and the later grant (the higher revision) gives its block back and tries
// again (adr/0030).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "swarm/base/host.h"
#include "swarm/base/port_range.h"
#include "swarm/lease/lease.h"

namespace swarm {

// "ports.20000-20009".
std::string port_block_lease_name(const PortBlock& block);
// The block a lease name stands for; nullopt for any other name.
std::optional<PortBlock> port_block_of(std::string_view lease_name);

class PortBlocks {
 public:
  PortBlocks(LeaseStore store, HostIdentity me, std::chrono::milliseconds ttl)
      : store_(std::move(store)), me_(std::move(me)), ttl_(ttl) {}

  // Takes a block of `count` ports in `range` for `slot`, or keeps the one
  // the slot holds already when it has that size (`kept` says which).
  // Conflict naming the range when no block of that size is free in it.
  PortBlock claim(const std::string& slot, unsigned count, const PortRange& range, std::int64_t pid,
                  bool* kept = nullptr) const;
  // What claim would refuse (no room), found by a read alone.
  void require_room(const std::string& slot, unsigned count, const PortRange& range) const;
  // The lease of `block` as it is now (nullopt: none).
  std::optional<LeaseEntry> read(const PortBlock& block) const;
  static bool held_by(const LeaseEntry& entry, const std::string& slot);
  // Whether the slot may renew `entry` (read at `arrived`): its own, and
  // not past its TTL. One past it may overlap a block granted since (of
  // another size, so another name): it is claimed again instead (reclaim),
  // which checks that.
  bool renewable(const LeaseEntry& entry, Steady::time_point arrived, const std::string& slot) const;
  // The write that renews it, sent with the session's.
  kv::Bucket::Write renewal(const LeaseEntry& held) const;
  // After a renewal whose block lease was refused or gone: takes the same
  // block again when it is free; otherwise what to say.
  std::string reclaim(const std::string& slot, const PortBlock& block, std::int64_t pid) const;
  // Releases `block` when `slot` holds it; a warning when that failed.
  std::string release(const std::string& slot, const PortBlock& block) const;

 private:
  struct Taken;
  Taken taken(const std::string& slot) const;
  // The same, with room for `count` ports in `range` (or the slot's own
  // block of that size); conflict naming the range when there is none.
  Taken taken_with_room(const std::string& slot, unsigned count, const PortRange& range) const;
  // Whether `last` (read at `arrived`) is a block someone may still hold.
  bool holds(const LastWrite& last, Steady::time_point arrived) const;
  bool lost_to_earlier(const std::string& slot, const PortBlock& mine, std::uint64_t revision) const;
  LeaseStore store_;
  HostIdentity me_;
  std::chrono::milliseconds ttl_;
};

}  // namespace swarm
