// Reads of the lease bucket on all three nodes, retried through elections and
// reconnects (partition_cluster.h).
#include "faults/partition_cluster.h"

#include <chrono>
#include <exception>
#include <string>

#include "faults/partition_support.h"
#include "kv/bucket.h"
#include "swarm/bootstrap.h"

using namespace std::chrono_literals;

namespace partition {
namespace {

kv::ConnectionOptions root_connection(const Names& names) {
  kv::ConnectionOptions o;
  o.urls = kv::split_urls(names.all_urls());
  o.connect_timeout = 2s;
  o.request_timeout = 2s;
  o.name = "partition-runner";
  return o;
}

// Tries `read` on a fresh connection to all three nodes until it gives an
// answer or `limit` passes (an election, a reconnect).
template <class Read>
auto with_cluster(const Names& names, std::chrono::seconds limit, Read read) -> decltype(read(std::declval<kv::Bucket&>())) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    try {
      auto connection = swarm::connect_nats(root_connection(names));
      auto bucket = kv::Bucket::open(connection, kLeaseBucket);
      if (auto answer = read(bucket)) return answer;
    } catch (const std::exception&) {
      // No leader yet, or a node that does not answer: try again.
    }
    pause_for(500ms);
  }
  return std::nullopt;
}

}  // namespace

int lease_leader(const Names& names) {
  auto leader = with_cluster(names, 30s, [](kv::Bucket& b) -> std::optional<std::string> {
    auto name = b.leader();
    return name.empty() ? std::nullopt : std::optional<std::string>(name);
  });
  if (!leader || leader->size() != 2 || (*leader)[0] != 'n') return 0;
  int node = (*leader)[1] - '0';
  return node >= 1 && node <= kNodes ? node : 0;
}

std::optional<unsigned long long> lease_last_revision(const Names& names) {
  return with_cluster(names, 30s, [](kv::Bucket& b) -> std::optional<unsigned long long> {
    bool deleted = false;
    auto last = b.last(kLease, &deleted);
    return last ? std::optional<unsigned long long>(last->revision) : std::nullopt;
  });
}

}  // namespace partition
