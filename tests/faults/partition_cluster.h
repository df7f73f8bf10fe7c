// What the partition runner reads from the cluster itself, from the root
// namespace (which reaches every node): the lease stream's leader, the node
// to cut next, and the lease key's last revision, the proof of no lost grant.
#pragma once

#include <optional>

#include "faults/partition_network.h"

namespace partition {

// n1..n3 of the lease stream's leader, or 0 when none is found in time.
int lease_leader(const Names& names);

// The lease key's last revision, or none when it cannot be read in time.
std::optional<unsigned long long> lease_last_revision(const Names& names);

}  // namespace partition
