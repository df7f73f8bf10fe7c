// What the partition runner reads from the cluster itself, from the root
// namespace (which reaches every node): the lease stream's leader, the node
// to cut next, and the lease key's last revision, the proof of no lost grant.
#pragma once

#include <optional>
#include <string>

#include "faults/partition_network.h"

namespace partition {

// n1..n3 of the lease stream's leader, or 0 when none is found in time.
int lease_leader(const Names& names);

// n1..n3 of the JetStream metadata leader (the servers' /jsz on their
// monitoring port), or 0 when none is found in time.
int meta_leader(const Names& names);

// The value of `key` in the lease bucket, or none when it cannot be read in time.
std::optional<std::string> lease_bucket_value(const Names& names, const std::string& key);

// The lease key's last revision, or none when it cannot be read in time.
std::optional<unsigned long long> lease_last_revision(const Names& names);

}  // namespace partition
