// Ports: the range a workspace hands blocks out of (`up --ports A-B`), and
// a block of consecutive ports one slot holds (`join --ports K`).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace swarm {

// Ports `first` to `last`, both included (1 to 65535).
struct PortRange {
  unsigned first = 0;
  unsigned last = 0;

  unsigned size() const { return last - first + 1; }
  std::string text() const { return std::to_string(first) + "-" + std::to_string(last); }
  bool operator==(const PortRange&) const = default;
};

// "A-B" (two ports of 1 to 5 digits, 1 to 65535, A at most B) as a range;
// nullopt when it is not one.
std::optional<PortRange> port_range_of(std::string_view text);
// The same; bad_input naming `text` (and `what`, "--ports") when it
// is not two port numbers, A at most B.
PortRange parse_port_range(std::string_view text, std::string_view what = "--ports");

// `count` consecutive ports from `base`.
struct PortBlock {
  unsigned base = 0;
  unsigned count = 0;

  unsigned last() const { return base + count - 1; }
  bool overlaps(const PortBlock& other) const { return base <= other.last() && other.base <= last(); }
  std::string text() const { return std::to_string(base) + "-" + std::to_string(last()); }
  bool operator==(const PortBlock&) const = default;
};

// The most ports one block may hold.
inline constexpr unsigned kMaxPortBlock = 1024;

// Whether a program of this host (any user's) has TCP port `port` bound:
// it cannot be bound on 127.0.0.1, on every IPv4 address or on every IPv6
// address (tried with SO_REUSEADDR, so a connection lingering in TIME_WAIT
// does not count). A block with such a port is of no use to a slot.
bool port_in_use(unsigned port);
// The first port of `block` in use on this host; nullopt when none is.
std::optional<unsigned> first_port_in_use(const PortBlock& block);

}  // namespace swarm
