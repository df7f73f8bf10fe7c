// A 3-node cluster with an R3 bucket: losing a node loses no acknowledged write.
#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <thread>

#include "kv/bucket.h"
#include "support/nats_server.h"

using namespace std::chrono_literals;

namespace {

// A fresh cluster needs a moment to elect its JetStream meta leader.
kv::Bucket ensure_when_ready(const kv::Connection& connection, const kv::BucketConfig& config) {
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (true) {
    try {
      return kv::Bucket::ensure(connection, config);
    } catch (const kv::Error& e) {
      if (std::chrono::steady_clock::now() > deadline) throw;
      std::this_thread::sleep_for(250ms);
    }
  }
}

}  // namespace

TEST_CASE("Cluster_NodeLossLosesNoAcknowledgedWrite") {
  // kill the R3 stream's leader mid-stream of writes: every acknowledged write is still there.
  testing::NatsCluster cluster;
  auto connection = kv::Connection::connect({.urls = cluster.url_list(), .request_timeout = 2s});
  auto bucket = ensure_when_ready(connection, {.name = "replicated", .replicas = 3});
  CHECK(bucket.config().replicas == 3);

  std::map<std::string, std::string> acknowledged;
  int attempts = 0;
  auto write = [&] {
    std::string key = "k" + std::to_string(attempts);
    std::string value = "value-" + std::to_string(attempts);
    ++attempts;
    try {
      bucket.create(key, value);
      acknowledged[key] = value;
    } catch (const kv::Error&) {
      // Not acknowledged: it may or may not be stored, and it promises nothing.
      std::this_thread::sleep_for(20ms);
    }
  };
  while (acknowledged.size() < 150) write();

  std::string leader = bucket.leader();
  REQUIRE(!leader.empty());
  int victim = leader == "n1" ? 0 : leader == "n2" ? 1 : 2;
  cluster.node(victim).kill();

  std::size_t before_kill = acknowledged.size();
  int attempts_before_kill = attempts;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (acknowledged.size() < before_kill + 150 && std::chrono::steady_clock::now() < deadline) write();
  REQUIRE(acknowledged.size() >= before_kill + 150);  // the cluster kept accepting writes

  std::vector<std::string> survivors;
  for (int i = 0; i < 3; ++i)
    if (i != victim) survivors.push_back(cluster.node(i).url());
  auto reader = kv::Connection::connect({.urls = survivors});
  auto check_bucket = kv::Bucket::open(reader, "replicated");
  std::map<std::string, std::string> stored;
  // Reading needs a consumer, and creating one waits for the JetStream meta
  // leader, which may have been on the killed node: allow for its re-election.
  auto read_deadline = std::chrono::steady_clock::now() + 30s;
  while (true) {
    try {
      for (auto& entry : check_bucket.snapshot()) stored[entry.key] = entry.value;
      break;
    } catch (const kv::Error& e) {
      if (std::chrono::steady_clock::now() > read_deadline) throw;
      MESSAGE("snapshot retried: " << std::string(e.what()));
    }
  }
  std::size_t lost = 0;
  for (const auto& [key, value] : acknowledged)
    if (stored.count(key) == 0 || stored[key] != value) ++lost;
  CHECK(lost == 0);
  MESSAGE("attempts before kill " << attempts_before_kill << "; writes attempted " << attempts << ", acknowledged " << acknowledged.size() << ", stored "
                              << stored.size() << ", leader killed " << leader);
}
