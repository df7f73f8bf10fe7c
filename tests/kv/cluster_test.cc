// A 3-node cluster with an R3 bucket: losing a node loses no acknowledged write.
#include <doctest/doctest.h>

#include <atomic>
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
  // kill the R3 stream's leader while a writer thread is writing: every acknowledged write is still there.
  testing::NatsCluster cluster;
  auto connection = kv::Connection::connect({.urls = cluster.url_list(), .request_timeout = 2s});
  auto bucket = ensure_when_ready(connection, {.name = "replicated", .replicas = 3});
  CHECK(bucket.config().replicas == 3);

  // A writer keeps writing on its own thread, so the node dies with writes in flight.
  std::map<std::string, std::string> acknowledged;  // the writer's until it is joined
  std::atomic<std::size_t> acked{0};
  std::atomic<int> attempts{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    while (!stop) {
      int n = attempts++;
      std::string key = "k" + std::to_string(n);
      std::string value = "value-" + std::to_string(n);
      try {
        bucket.create(key, value);
        acknowledged[key] = value;
        ++acked;
      } catch (const kv::Error&) {
        // Not acknowledged: it may or may not be stored, and it promises nothing.
        std::this_thread::sleep_for(20ms);
      }
    }
  });
  auto wait_for_acks = [&](std::size_t count) {
    auto deadline = std::chrono::steady_clock::now() + 60s;
    while (acked < count && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
    return acked >= count;
  };
  bool before_ok = wait_for_acks(150);
  std::string leader = bucket.leader();
  int victim = leader == "n1" ? 0 : leader == "n2" ? 1 : 2;
  cluster.node(victim).kill();
  std::size_t before_kill = acked;
  int attempts_before_kill = attempts;
  bool after_ok = wait_for_acks(before_kill + 150);  // the cluster kept accepting writes
  stop = true;
  writer.join();
  REQUIRE(before_ok);
  REQUIRE(!leader.empty());
  REQUIRE(after_ok);

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
  MESSAGE("attempts before kill " << attempts_before_kill << "; writes attempted " << attempts.load()
                                   << ", acknowledged " << acknowledged.size() << ", stored " << stored.size()
                                   << ", leader killed " << leader);
}
