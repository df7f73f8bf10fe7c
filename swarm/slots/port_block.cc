#include "swarm/slots/port_block.h"

#include <algorithm>
#include <random>
#include <thread>
#include <vector>

#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/random.h"
#include "swarm/base/test_seam.h"

namespace swarm {

namespace {

constexpr std::string_view kPrefix = "ports.";
// Joins racing for overlapping blocks each try again after a lost grant.
constexpr int kMaxClaimAttempts = 24;
// What the record of a block names as its task.
constexpr const char* kPortsTask = "ports";

// A live block of the listing: held by someone, not certainly expired.
struct LiveBlock {
  PortBlock block;
  std::string slot;
  std::string host;
  std::uint64_t token = 0;  // of its grant: orders overlapping grants
};

// Where a block of `count` ports in `range` can start without meeting any of
// `others`: at the start or at the end of each free gap it fits in (a block
// placed there leaves the rest of the gap in one piece), lowest first.
std::vector<unsigned> free_bases(const std::vector<LiveBlock>& others, unsigned count, const PortRange& range) {
  std::vector<PortBlock> sorted;
  for (const auto& b : others) sorted.push_back(b.block);
  std::sort(sorted.begin(), sorted.end(), [](const PortBlock& a, const PortBlock& b) { return a.base < b.base; });
  std::vector<unsigned> bases;
  auto gap = [&](unsigned from, unsigned to) {  // free ports from..to, both included
    if (to < from || to - from + 1 < count) return;
    bases.push_back(from);
    if (to - count + 1 != from) bases.push_back(to - count + 1);
  };
  unsigned from = range.first;
  for (const auto& b : sorted) {
    if (b.last() < from) continue;
    if (b.base > range.last) break;
    if (b.base > from) gap(from, b.base - 1);
    if (b.last() >= range.last) return bases;
    from = b.last() + 1;
  }
  gap(from, range.last);
  return bases;
}

// The first try takes the lowest place; one after a lost race takes any of
// them, so that joins racing for the same place spread out.
unsigned pick(const std::vector<unsigned>& bases, int attempt) {
  if (attempt == 1 || bases.size() == 1) return bases.front();
  return bases[std::uniform_int_distribution<std::size_t>(0, bases.size() - 1)(thread_random())];
}

// A short random pause before another try.
void pause_before_retry(int attempt) {
  const int most = std::min(5 * attempt, 50);
  std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(1, most)(thread_random())));
}

// A place for `count` ports in `range` that meets none of `others` and no
// port a program of this host has bound (each one found is added to
// `in_use`, and counts as a block of one port); nullopt when there is none.
std::optional<PortBlock> place_block(std::vector<LiveBlock> others, unsigned count, const PortRange& range, int attempt,
                                     std::vector<unsigned>& in_use) {
  for (auto bases = free_bases(others, count, range); !bases.empty(); bases = free_bases(others, count, range)) {
    const PortBlock block{pick(bases, attempt), count};
    const auto bound = first_port_in_use(block);
    if (!bound) return block;
    in_use.push_back(*bound);
    others.push_back({PortBlock{*bound, 1}, {}, {}, 0});
  }
  return std::nullopt;
}

std::string no_room_message(unsigned count, const PortRange& range, const std::vector<LiveBlock>& others,
                            std::vector<unsigned> in_use = {}) {
  std::string held;
  int shown = 0;
  for (const auto& b : others) {
    if (b.block.last() < range.first || b.block.base > range.last) continue;
    if (shown++ < 5)
      held += std::string(held.empty() ? "" : ", ") + std::to_string(b.block.base) + "-" +
              std::to_string(b.block.last()) + " (slot " + b.slot + ", host " + b.host + ")";
  }
  if (shown > 5) held += ", and " + std::to_string(shown - 5) + " more";
  std::sort(in_use.begin(), in_use.end());
  std::string bound;
  for (std::size_t i = 0; i < in_use.size() && i < 5; ++i) bound += (i == 0 ? "" : ", ") + std::to_string(in_use[i]);
  if (in_use.size() > 5) bound += ", and " + std::to_string(in_use.size() - 5) + " more";
  return "no free block of " + std::to_string(count) + " ports in the workspace's range " + range.text() +
         (held.empty() && bound.empty() ? " (it is smaller than that)" : "") + (held.empty() ? "" : "; held: " + held) +
         (bound.empty() ? "" : "; in use on this host (bound by a program outside swarm): " + bound) +
         "; close a slot, ask for fewer ports, or widen the range with `swarm up --ports A-B`";
}

}  // namespace

LeaseHolder PortBlocks::holder(const std::string& slot, std::int64_t pid) const {
  LeaseHolder who = LeaseHolder::process(me_, pid, slot);
  who.slot = slot;
  who.task = kPortsTask;
  return who;
}

bool PortBlocks::holds(const LastWrite& last, Steady::time_point arrived) const {
  if (last.revision == 0 || last.released) return false;
  return !last.record ||
         !certainly_expired(store_.server_clock(), arrived, last.stored_at, last.record->ttl, Steady::now());
}

std::string port_block_lease_name(const PortBlock& block) {
  return std::string(kPrefix) + std::to_string(block.base) + "-" + std::to_string(block.last());
}

std::optional<PortBlock> port_block_of(std::string_view name) {
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  // The ports it names, written as a range is.
  const auto range = port_range_of(name.substr(kPrefix.size()));
  if (!range) return std::nullopt;
  return PortBlock{range->first, range->size()};
}

// Every live block: those of `ours` the slot holds on this host (by block),
// and the others (any other slot's, and any other of this slot's: a block a
// killed join left is no one's to use, but holds its ports until it expires).
struct PortBlocks::Taken {
  std::vector<LiveBlock> others;
  std::vector<LeaseEntry> ours;
  const LeaseEntry* our(const PortBlock& block) const {
    for (const auto& e : ours)
      if (port_block_of(e.name) == block) return &e;
    return nullptr;
  }
};

PortBlocks::Taken PortBlocks::taken(const std::string& slot, const std::vector<PortBlock>& ours) const {
  auto listed = read_arriving([&] { return store_.current(std::string(kPrefix) + ">"); });
  const ServerClock& clock = store_.server_clock();
  Taken out;
  for (auto& entry : listed.value) {
    auto block = port_block_of(entry.name);
    if (!block) continue;
    // A corrupt record holds its block (nobody can say when it ends) until
    // doctor --fix removes it; a record gone past its TTL holds nothing.
    if (entry.record && certainly_expired(clock, listed.at, entry.stored_at, entry.record->ttl, Steady::now()))
      continue;
    if (entry.record && entry.record->slot == slot && me_.owns(*entry.record) &&
        std::find(ours.begin(), ours.end(), *block) != ours.end()) {
      out.ours.push_back(std::move(entry));
      continue;
    }
    // The grant's token orders overlapping grants (a renewal keeps it).
    out.others.push_back({*block, entry.record ? entry.record->slot : "?", entry.record ? entry.record->host : "?",
                          entry.token()});
  }
  return out;
}

PortBlocks::Taken PortBlocks::taken_with_room(const std::string& slot, unsigned count, const PortRange& range,
                                              std::optional<PortBlock> keep) const {
  // A block another join just took and is about to give back (it lost a
  // race) fills the range for a moment: "no room" is said only when three
  // looks, 50 ms apart, all find none.
  std::vector<PortBlock> ours;
  if (keep) ours.push_back(*keep);
  for (int look = 1;; ++look) {
    Taken now = taken(slot, ours);
    if (keep && keep->count == count && now.our(*keep)) return now;
    std::vector<unsigned> in_use;
    if (place_block(now.others, count, range, 1, in_use)) return now;
    if (look == 3) throw Error(Errc::conflict, no_room_message(count, range, now.others, in_use));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void PortBlocks::require_room(const std::string& slot, unsigned count, const PortRange& range,
                              std::optional<PortBlock> keep) const {
  taken_with_room(slot, count, range, keep);
}

bool PortBlocks::lost_to_earlier(const std::string& slot, const std::vector<PortBlock>& ours, const PortBlock& mine,
                                 std::uint64_t token) const {
  for (const auto& other : taken(slot, ours).others)
    if (other.block.overlaps(mine) && other.token < token) return true;
  return false;
}

void PortBlocks::give_back(const std::string& name, std::uint64_t token) const {
  for (int attempt = 1; attempt <= 3; ++attempt) {
    try {
      store_.release(name, token);
      return;
    } catch (const Error& e) {
      if (e.kind() == Errc::conflict || e.kind() == Errc::not_found) return;  // not that grant's any more
      if (attempt == 3) log::debug("port block {}: not given back ({}); it expires by itself", name, e.what());
    }
  }
}

std::optional<PortBlock> PortBlocks::keep_own(const std::string& slot, const LeaseEntry& own, std::int64_t pid,
                                              const std::vector<PortBlock>& ours) const {
  const PortBlock block = *port_block_of(own.name);
  if (lost_to_earlier(slot, ours, block, own.token())) return std::nullopt;
  // Renewed for the new session now (with its process), as a kept task lease is.
  try {
    store_.renew(kept_grant(own.name, *own.record, own.revision, holder(slot, pid), ttl_));
    return block;
  } catch (const Error& e) {
    if (e.kind() != Errc::conflict) throw;
    return std::nullopt;  // it moved since the listing: a new block instead
  }
}

PortBlock PortBlocks::claim(const std::string& slot, unsigned count, const PortRange& range, std::int64_t pid,
                            std::optional<PortBlock> keep, bool* kept) const {
  const LeaseHolder who = holder(slot, pid);
  if (kept != nullptr) *kept = false;
  for (int attempt = 1; attempt <= kMaxClaimAttempts; ++attempt) {
    if (attempt > 1) pause_before_retry(attempt);
    Taken now = taken_with_room(slot, count, range, keep);
    std::vector<PortBlock> ours;
    if (keep) ours.push_back(*keep);
    if (keep && keep->count == count)
      if (const LeaseEntry* own = now.our(*keep))
        if (auto block = keep_own(slot, *own, pid, ours)) {
          if (kept != nullptr) *kept = true;
          return *block;
        }
    if (free_bases(now.others, count, range).empty()) continue;  // the kept block was lost meanwhile: look again
    // Never a block with a port some program of this host has bound.
    std::vector<unsigned> in_use;
    const auto placed = place_block(now.others, count, range, attempt, in_use);
    if (!placed) throw Error(Errc::conflict, no_room_message(count, range, now.others, in_use));
    const PortBlock block = *placed;
    const std::string name = port_block_lease_name(block);
    stop_here_for_test(kJoinStop, "ports-listed");
    Lease granted;
    try {
      auto last = read_arriving([&] { return store_.last(name); });
      if (holds(last.value, last.at)) continue;  // taken since the listing
      granted = store_.grant(name, who, ttl_, last.value);
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict) throw;
      continue;  // another join took that name first
    }
    ours.push_back(block);
    stop_here_for_test(kJoinStop, "ports-granted");
    try {
      if (!lost_to_earlier(slot, ours, block, granted.token)) return block;
    } catch (...) {
      give_back(name, granted.token);  // never left held unchecked
      throw;
    }
    // An overlapping block was granted before ours: ours goes back.
    log::debug("slot {}: port block {} overlaps an earlier grant; trying again", slot, name);
    give_back(name, granted.token);
  }
  throw Error(Errc::conflict, "could not take a block of " + std::to_string(count) + " ports in " + range.text() +
                                  " after " + std::to_string(kMaxClaimAttempts) +
                                  " tries: other joins kept taking them first; try again");
}

std::optional<LeaseEntry> PortBlocks::read(const PortBlock& block) const {
  return store_.get(port_block_lease_name(block));
}

bool PortBlocks::held_by(const LeaseEntry& entry, const std::string& slot) {
  return !entry.corrupt() && entry.record->slot == slot;
}

bool PortBlocks::renewable(const LeaseEntry& entry, Steady::time_point arrived, const std::string& slot) const {
  return held_by(entry, slot) &&
         !certainly_expired(store_.server_clock(), arrived, entry.stored_at, entry.record->ttl, Steady::now());
}

kv::Bucket::Write PortBlocks::renewal(const LeaseEntry& held, std::chrono::milliseconds ttl) const {
  return store_.renewal_of(held, ttl);
}

std::string PortBlocks::reclaim(const std::string& slot, const PortBlock& block, std::int64_t pid) const {
  const std::string name = port_block_lease_name(block);
  try {
    const LeaseHolder who = holder(slot, pid);
    auto last = read_arriving([&] { return store_.last(name); });
    if (holds(last.value, last.at)) {
      // Renewed by another verb of this session meanwhile (a commit beside a renew): still ours.
      if (last.value.record && last.value.record->slot == slot && me_.owns(*last.value.record)) return {};
      return "the port block " + block.text() + " is held by another now; join again for a new one";
    }
    Lease granted = store_.grant(name, who, ttl_, last.value);
    if (lost_to_earlier(slot, {block}, block, granted.token)) {
      give_back(name, granted.token);
      return "the port block " + block.text() + " overlaps a block taken meanwhile; join again for a new one";
    }
    return {};
  } catch (const Error& e) {
    return "the port block " + block.text() + " could not be kept: " + e.what();
  }
}

std::string PortBlocks::confirm_renewal(const std::string& slot, const PortBlock& block, const LeaseEntry& before,
                                        std::uint64_t renewed) const {
  try {
    auto after = read(block);
    if (!after || after->revision != renewed || before.corrupt()) return {};  // moved on: the next renewal judges it
    // Both times are the server's: a renewal that landed a TTL (less a
    // margin for a change of leader) after the one before may have landed
    // on an expired block, which a block granted meanwhile may overlap. It
    // stands only as a new grant would: no overlapping grant before it.
    if (after->stored_at - before.stored_at < before.record->ttl * 2 / 3) return {};
    if (!lost_to_earlier(slot, {block}, block, renewed)) return {};
    give_back(after->name, after->token());
    return "the port block " + block.text() + " expired before its renewal landed, and a block taken meanwhile "
           "overlaps it: it was given up; join again for a new one";
  } catch (const Error& e) {
    return "the port block " + block.text() + " could not be checked after its renewal: " + e.what();
  }
}

void PortBlocks::give_up(const LeaseEntry& renewed) const { give_back(renewed.name, renewed.token()); }

std::string PortBlocks::release(const std::string& slot, const PortBlock& block) const {
  try {
    auto entry = read(block);
    if (!entry || !held_by(*entry, slot)) return {};
    store_.release(entry->name, entry->token());
    return {};
  } catch (const Error& e) {
    return "the port block " + block.text() + " was not released (it expires by itself): " + e.what();
  }
}

}  // namespace swarm
