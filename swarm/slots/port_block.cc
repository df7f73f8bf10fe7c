#include "swarm/slots/port_block.h"

#include <algorithm>
#include <charconv>
#include <random>
#include <thread>
#include <vector>

#include "swarm/base/error.h"
#include "swarm/base/log.h"

namespace swarm {

namespace {

constexpr std::string_view kPrefix = "ports.";
// Joins racing for overlapping blocks each try again after a lost grant.
constexpr int kMaxClaimAttempts = 24;

std::optional<unsigned> number_of(std::string_view digits) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

// A live block of the listing: held by someone, not certainly expired.
struct LiveBlock {
  PortBlock block;
  std::string slot;
  std::string host;
  std::uint64_t revision = 0;
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
  static thread_local std::mt19937 random{std::random_device{}()};
  return bases[std::uniform_int_distribution<std::size_t>(0, bases.size() - 1)(random)];
}

// A short random pause before another try.
void pause_before_retry(int attempt) {
  static thread_local std::mt19937 random{std::random_device{}()};
  const int most = std::min(5 * attempt, 50);
  std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(1, most)(random)));
}

std::string no_room_message(unsigned count, const PortRange& range, const std::vector<LiveBlock>& others) {
  std::string held;
  int shown = 0;
  for (const auto& b : others) {
    if (b.block.last() < range.first || b.block.base > range.last) continue;
    if (shown++ < 5)
      held += std::string(held.empty() ? "" : ", ") + std::to_string(b.block.base) + "-" +
              std::to_string(b.block.last()) + " (slot " + b.slot + ", host " + b.host + ")";
  }
  if (shown > 5) held += ", and " + std::to_string(shown - 5) + " more";
  return "no free block of " + std::to_string(count) + " ports in the workspace's range " + range.text() +
         (held.empty() ? " (it is smaller than that)" : "; held: " + held) +
         "; close a slot, ask for fewer ports, or widen the range with `swarm up --ports A-B`";
}

}  // namespace

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
  name.remove_prefix(kPrefix.size());
  const auto dash = name.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  auto first = number_of(name.substr(0, dash)), last = number_of(name.substr(dash + 1));
  if (!first || !last || *first < 1 || *last > 65535 || *first > *last) return std::nullopt;
  return PortBlock{*first, *last - *first + 1};
}

// Every live block, and the one `slot` holds (if any) among them.
struct PortBlocks::Taken {
  std::vector<LiveBlock> others;      // live blocks of other slots
  std::optional<LiveBlock> own;       // the slot's own live block
};

PortBlocks::Taken PortBlocks::taken(const std::string& slot) const {
  auto listed = read_arriving([&] { return store_.list(std::string(kPrefix) + ">"); });
  const ServerClock& clock = store_.server_clock();
  Taken out;
  for (const auto& entry : listed.value) {
    auto block = port_block_of(entry.name);
    if (!block) continue;
    // A corrupt record holds its block (nobody can say when it ends) until
    // doctor --fix removes it; a record gone past its TTL holds nothing.
    if (entry.record && certainly_expired(clock, listed.at, entry.stored_at, entry.record->ttl, Steady::now()))
      continue;
    LiveBlock live{*block, entry.record ? entry.record->slot : "?", entry.record ? entry.record->host : "?",
                   entry.revision};
    if (entry.record && entry.record->slot == slot && me_.owns(*entry.record))
      out.own = live;
    else
      out.others.push_back(std::move(live));
  }
  return out;
}

PortBlocks::Taken PortBlocks::taken_with_room(const std::string& slot, unsigned count, const PortRange& range) const {
  // A block another join just took and is about to give back (it lost a
  // race) fills the range for a moment: "no room" is said only when three
  // looks, 50 ms apart, all find none.
  for (int look = 1;; ++look) {
    Taken now = taken(slot);
    if ((now.own && now.own->block.count == count) || !free_bases(now.others, count, range).empty()) return now;
    if (look == 3) throw Error(Errc::conflict, no_room_message(count, range, now.others));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void PortBlocks::require_room(const std::string& slot, unsigned count, const PortRange& range) const {
  taken_with_room(slot, count, range);
}

bool PortBlocks::lost_to_earlier(const std::string& slot, const PortBlock& mine, std::uint64_t revision) const {
  for (const auto& other : taken(slot).others)
    if (other.block.overlaps(mine) && other.revision < revision) return true;
  return false;
}

PortBlock PortBlocks::claim(const std::string& slot, unsigned count, const PortRange& range, std::int64_t pid,
                            bool* kept) const {
  LeaseHolder who = LeaseHolder::process(me_, pid, slot);
  who.slot = slot;
  who.task = "ports";
  for (int attempt = 1; attempt <= kMaxClaimAttempts; ++attempt) {
    if (attempt > 1) pause_before_retry(attempt);
    Taken now = taken_with_room(slot, count, range);
    if (kept != nullptr) *kept = now.own && now.own->block.count == count;
    if (now.own && now.own->block.count == count) return now.own->block;  // renewed with the session from here
    const auto bases = free_bases(now.others, count, range);
    const PortBlock block{pick(bases, attempt), count};
    const std::string name = port_block_lease_name(block);
    Lease granted;
    try {
      auto last = read_arriving([&] { return store_.last(name); });
      if (holds(last.value, last.at)) continue;  // taken since the listing
      granted = store_.grant(name, who, ttl_, last.value);
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict) throw;
      continue;  // another join took that name first
    }
    if (!lost_to_earlier(slot, block, granted.revision)) return block;
    // An overlapping block was granted before ours: ours goes back.
    log::debug("slot {}: port block {} overlaps an earlier grant; trying again", slot, name);
    try {
      store_.release(granted);
    } catch (const Error&) {
      // It expires by itself.
    }
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

kv::Bucket::Write PortBlocks::renewal(const LeaseEntry& held) const { return store_.renewal_of(held); }

std::string PortBlocks::reclaim(const std::string& slot, const PortBlock& block, std::int64_t pid) const {
  const std::string name = port_block_lease_name(block);
  try {
    LeaseHolder who = LeaseHolder::process(me_, pid, slot);
    who.slot = slot;
    auto last = read_arriving([&] { return store_.last(name); });
    if (holds(last.value, last.at))
      return "the port block " + block.text() + " is held by another now; join again for a new one";
    Lease granted = store_.grant(name, who, ttl_, last.value);
    if (lost_to_earlier(slot, block, granted.revision)) {
      store_.release(granted);
      return "the port block " + block.text() + " overlaps a block taken meanwhile; join again for a new one";
    }
    return {};
  } catch (const Error& e) {
    return "the port block " + block.text() + " could not be kept: " + e.what();
  }
}

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
