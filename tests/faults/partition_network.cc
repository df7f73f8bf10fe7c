// The namespaces, veths and bridge of a partition run, and its cuts
// (partition_network.h).
#include "faults/partition_network.h"

#include "faults/partition_support.h"

namespace partition {

Network::Network(const Names& names) : names_(names) {
  refuse_if_taken();
  try {
    must({"ip", "link", "add", names_.bridge(), "type", "bridge"});
    must({"ip", "addr", "add", names_.base() + "254/24", "dev", names_.bridge()});
    must({"ip", "link", "set", names_.bridge(), "up"});
    for (int node = 1; node <= kNodes; ++node) add_node(node);
  } catch (...) {
    remove();  // no destructor runs for a constructor that threw
    throw;
  }
}

Network::~Network() { remove(); }

void Network::cut(int node) const {
  const std::string ns = names_.ns(node);
  must({"ip", "netns", "exec", ns, "iptables", "-A", "INPUT", "-i", "lo", "-j", "ACCEPT"});
  must({"ip", "netns", "exec", ns, "iptables", "-A", "OUTPUT", "-o", "lo", "-j", "ACCEPT"});
  must({"ip", "netns", "exec", ns, "iptables", "-A", "INPUT", "-s", names_.cidr(), "-j", "DROP"});
  must({"ip", "netns", "exec", ns, "iptables", "-A", "OUTPUT", "-d", names_.cidr(), "-j", "DROP"});
}

void Network::heal(int node) const {
  must({"ip", "netns", "exec", names_.ns(node), "iptables", "-F", "INPUT"});
  must({"ip", "netns", "exec", names_.ns(node), "iptables", "-F", "OUTPUT"});
}

void Network::refuse_if_taken() const {
  auto namespaces = run_tool({"ip", "netns", "list"}).out;
  if (namespaces.find(names_.prefix + "n") != std::string::npos)
    throw SetupFailed("namespaces " + names_.prefix + "n* exist already (another run, or a leftover)");
  if (run_tool({"ip", "link", "show", names_.bridge()}).exit == 0)
    throw SetupFailed("bridge " + names_.bridge() + " exists already");
  if (!trimmed(run_tool({"ip", "-o", "addr", "show", "to", names_.cidr()}).out).empty())
    throw SetupFailed("subnet " + names_.cidr() + " is in use here");
}

void Network::remove() const {
  for (int node = 1; node <= kNodes; ++node) run_tool({"ip", "link", "del", names_.host_veth(node)});
  for (int node = 1; node <= kNodes; ++node) run_tool({"ip", "netns", "del", names_.ns(node)});
  run_tool({"ip", "link", "del", names_.bridge()});
}

void Network::add_node(int node) {
  const std::string ns = names_.ns(node);
  must({"ip", "netns", "add", ns});
  must({"ip", "link", "add", names_.host_veth(node), "type", "veth", "peer", "name", names_.node_veth(node), "netns", ns});
  must({"ip", "link", "set", names_.host_veth(node), "master", names_.bridge()});
  must({"ip", "link", "set", names_.host_veth(node), "up"});
  must({"ip", "netns", "exec", ns, "ip", "addr", "add", names_.ip(node) + "/24", "dev", names_.node_veth(node)});
  must({"ip", "netns", "exec", ns, "ip", "link", "set", names_.node_veth(node), "up"});
  must({"ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"});
}

}  // namespace partition
