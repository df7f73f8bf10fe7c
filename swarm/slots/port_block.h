// A slot's block of ports (join --ports K): K consecutive ports of the
// workspace's range (up --ports A-B) that no live slot on any host holds
// and no program of the joining host has bound (another user's server on
// one of them makes the block no use: the next is taken).
// Each block is a lease, "ports.<first>-<last>", held by the slot: taken at
// join with the session's TTL, renewed with every renewal of the session (in
// the same round trip as the task lease), released at close, free when the
// session expires. Blocks of different sizes have different names, so two
// joins may take overlapping ones at once: each looks again after its grant,
// and the later grant (the higher token) gives its block back and tries
// again (adr/0030).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "swarm/base/host.h"
#include "swarm/base/port_range.h"
#include "swarm/lease/lease.h"

namespace swarm {

// "ports.20000-20009".
std::string port_block_lease_name(const PortBlock& block);
// The block a lease name stands for; nullopt for any other name.
std::optional<PortBlock> port_block_of(std::string_view lease_name);

class PortBlocks : public SlotLeases<PortBlocks> {
 public:
  using SlotLeases::SlotLeases;

  // Takes a block of `count` ports in `range` for `slot`, or keeps `keep`
  // (the block the session this join replaces names) when it has that size
  // and the slot still holds it (`kept` says which; a kept block is renewed
  // for the new session). Conflict naming the range when no block of that
  // size is free in it.
  PortBlock claim(const std::string& slot, unsigned count, const PortRange& range, std::int64_t pid,
                  std::optional<PortBlock> keep, bool* kept = nullptr) const;
  // What claim would refuse (no room), found by reads alone.
  void require_room(const std::string& slot, unsigned count, const PortRange& range,
                    std::optional<PortBlock> keep) const;
  // The lease of `block` as it is now (nullopt: none).
  std::optional<LeaseEntry> read(const PortBlock& block) const;
  static bool held_by(const LeaseEntry& entry, const std::string& slot);
  // Whether the slot may renew `entry` (read at `arrived`): its own, and
  // not past its TTL. One past it may overlap a block granted since (of
  // another size, so another name): it is claimed again instead (reclaim),
  // which checks that.
  bool renewable(const LeaseEntry& entry, Steady::time_point arrived, const std::string& slot) const;
  // The write that renews it, sent with the session's.
  // With the session's TTL as it is now (`up --ttl` changes it in place).
  kv::Bucket::Write renewal(const LeaseEntry& held, std::chrono::milliseconds ttl) const;
  // After a renewal of `before` that landed as revision `renewed`: when it
  // landed so late that the block may have expired first, it stands only
  // if no overlapping block was granted before it; else it is given up.
  // What to say ("" when all is well).
  std::string confirm_renewal(const std::string& slot, const PortBlock& block, const LeaseEntry& before,
                              std::uint64_t renewed) const;
  // Gives up the grant `renewed` is (its session is gone).
  void give_up(const LeaseEntry& renewed) const;
  // After a renewal whose block lease was refused or gone: takes the same
  // block again when it is free; otherwise what to say.
  std::string reclaim(const std::string& slot, const PortBlock& block, std::int64_t pid) const;
  // Releases `block` when `slot` holds it; a warning when that failed.
  std::string release(const std::string& slot, const PortBlock& block) const;

 private:
  struct Taken;
  // Process `pid` of this host holding a block for `slot`.
  LeaseHolder holder(const std::string& slot, std::int64_t pid) const;
  Taken taken(const std::string& slot, const std::vector<PortBlock>& ours) const;
  // The same, with room for `count` ports in `range` (or `keep` of that
  // size, held); conflict naming the range when there is none.
  Taken taken_with_room(const std::string& slot, unsigned count, const PortRange& range,
                        std::optional<PortBlock> keep) const;
  // Whether `last` (read at `arrived`) is a block someone may still hold.
  bool holds(const LastWrite& last, Steady::time_point arrived) const;
  // Whether a live block (not one of `ours`) overlapping `mine` was granted
  // before `token`.
  bool lost_to_earlier(const std::string& slot, const std::vector<PortBlock>& ours, const PortBlock& mine,
                       std::uint64_t token) const;
  // `own` kept and renewed for the new session, unless an earlier grant overlaps it or it moved.
  std::optional<PortBlock> keep_own(const std::string& slot, const LeaseEntry& own, std::int64_t pid,
                                    const std::vector<PortBlock>& ours) const;
  // Releases the grant of `name` with `token`, tried up to three times.
  void give_back(const std::string& name, std::uint64_t token) const;
};

}  // namespace swarm
