// The network of a partition run: one namespace per node on a bridge of its
// own, named after the run's number, and the cut (iptables in the node's
// namespace) that isolates a node until it is healed.
#pragma once

#include <string>

namespace partition {

// The names and addresses of one run: short (interface names are at most 15
// characters) and derived from one number, so that the script can find them.
struct Names {
  std::string prefix;  // swp1234
  int subnet = 0;      // the third octet of 10.231.X.0/24

  explicit Names(long number) : prefix("swp" + std::to_string(number % 10000)), subnet(static_cast<int>(number % 250)) {}
  std::string ns(int node) const { return prefix + "n" + std::to_string(node); }
  std::string host_veth(int node) const { return prefix + "v" + std::to_string(node); }
  std::string node_veth(int node) const { return prefix + "e" + std::to_string(node); }
  std::string bridge() const { return prefix + "br"; }
  std::string base() const { return "10.231." + std::to_string(subnet) + "."; }
  std::string ip(int node) const { return base() + std::to_string(node); }
  std::string cidr() const { return base() + "0/24"; }
  std::string url(int node) const { return "nats://" + ip(node) + ":4222"; }
  std::string all_urls() const { return url(1) + "," + url(2) + "," + url(3); }
};

// The bridge, the namespaces and their veths, removed again when it dies
// (iptables rules inside a namespace go with it).
class Network {
 public:
  explicit Network(const Names& names);
  ~Network();
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  // Everything to and from the /24 is dropped inside the node's namespace
  // but loopback, so its own looper still reaches it and nothing else does.
  void cut(int node) const;
  void heal(int node) const;

 private:
  // Another run (or a leftover) with these names or this subnet: not ours to touch.
  void refuse_if_taken() const;
  // The veths go first: a namespace outlives its `ip netns del` while a
  // socket in it still retransmits, and its veth (on our side too) with it.
  void remove() const;
  void add_node(int node);

  Names names_;
};

}  // namespace partition
