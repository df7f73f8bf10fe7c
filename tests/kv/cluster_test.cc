// A 3-node cluster with an R3 bucket: losing a node loses no acknowledged write.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "kv/bucket.h"
#include "support/nats_proxy.h"
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

// CAS renewals of one key per writer, and listings of the bucket, each on a
// thread of its own until stopped; a request that fails is noted and ends
// its thread. What a failover must only slow down.
class RenewalLoad {
 public:
  struct Writer {
    std::string key, last_acked;
    std::uint64_t revision = 0;
    std::atomic<int> acked{0};
  };

  RenewalLoad(kv::Bucket& bucket, int writers) : bucket_(bucket), writers_(static_cast<std::size_t>(writers)) {
    for (int i = 0; i < writers; ++i) {
      writers_[i].key = "k" + std::to_string(i);
      writers_[i].last_acked = "start";
      writers_[i].revision = bucket_.create(writers_[i].key, "start");
    }
  }
  ~RenewalLoad() { stop(); }
  RenewalLoad(const RenewalLoad&) = delete;
  RenewalLoad& operator=(const RenewalLoad&) = delete;

  void start() {
    for (auto& w : writers_) threads_.emplace_back([this, &w] { renew(w); });
    threads_.emplace_back([this] { list(); });
  }

  // Whether every writer has `at_least` renewals acknowledged and `listed`
  // listings were made, within 90 s.
  bool progressed(int at_least, int listed) {
    auto deadline = std::chrono::steady_clock::now() + 90s;
    while (std::chrono::steady_clock::now() < deadline) {
      bool all = listings_ >= listed;
      for (auto& w : writers_) all = all && w.acked >= at_least;
      if (all) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  void stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  std::vector<Writer>& writers() { return writers_; }
  int listings() const { return listings_; }
  const std::vector<std::string>& failures() const { return failures_; }

 private:
  void failed(const std::string& what, const kv::Error& e) {
    std::lock_guard lock(failures_mu_);
    failures_.push_back(what + ": " + e.what());
  }

  void renew(Writer& w) {
    for (int n = 0; !stop_; ++n) {
      std::string value = w.key + "-" + std::to_string(n);
      try {
        w.revision = bucket_.update(w.key, value, w.revision);
        w.last_acked = value;
        ++w.acked;
      } catch (const kv::Error& e) {
        failed("update " + w.key, e);
        return;
      }
    }
  }

  void list() {
    while (!stop_) {
      try {
        bucket_.snapshot();
        ++listings_;
      } catch (const kv::Error& e) {
        failed("snapshot", e);
        return;
      }
    }
  }

  kv::Bucket& bucket_;
  std::vector<Writer> writers_;
  std::atomic<bool> stop_{false};
  std::atomic<int> listings_{0};
  std::mutex failures_mu_;
  std::vector<std::string> failures_;
  std::vector<std::thread> threads_;
};

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

TEST_CASE("Cluster_FailoverIsOnlyLatencyWithinTheTimeout") {
  // the stream leader is killed under CAS renewals and listings: with a timeout longer than the election, no request
  // fails, and every acknowledged renewal is what the bucket holds afterwards.
  testing::NatsCluster cluster;
  auto connection = kv::Connection::connect({.urls = cluster.url_list(), .request_timeout = 20s});
  auto bucket = ensure_when_ready(connection, {.name = "failover", .replicas = 3});
  constexpr int kWriters = 3;
  RenewalLoad load(bucket, kWriters);
  auto& writers = load.writers();
  load.start();
  bool before = load.progressed(50, 5);
  std::string leader = bucket.leader();
  int victim = leader == "n1" ? 0 : leader == "n2" ? 1 : 2;
  auto killed_at = std::chrono::steady_clock::now();
  cluster.node(victim).kill();
  int acked_at_kill = writers[0].acked;
  bool after = load.progressed(acked_at_kill + 100, load.listings() + 10);
  auto recovered = std::chrono::steady_clock::now() - killed_at;
  load.stop();
  const auto& failures = load.failures();
  CHECK(before);
  CHECK(after);
  CHECK_MESSAGE(failures.empty(), (failures.empty() ? std::string() : failures.front()));
  for (auto& w : writers) {
    auto entry = bucket.get(w.key);
    REQUIRE(entry);
    CHECK(entry->value == w.last_acked);
    CHECK(entry->revision == w.revision);
  }
  MESSAGE("leader " << leader << " killed; writers and listings went on within "
                    << std::chrono::duration_cast<std::chrono::milliseconds>(recovered).count() << " ms");
}

TEST_CASE("Cluster_TwoCasWritesOnOneRevisionNeverBothLand") {
  // nats-server 2.9 checks a clustered stream's per-key CAS only before it proposes a write, so two
  // writers that update one revision at the same moment could both succeed (nats-server issue 4320):
  // two lease holders. Two processes' worth of writers race on one revision, round after round, with
  // a third writing other keys of the bucket meanwhile: exactly one of each pair lands.
  testing::NatsCluster cluster;
  auto first = kv::Connection::connect({.urls = cluster.url_list(), .request_timeout = 5s});
  auto second = kv::Connection::connect({.urls = cluster.url_list(), .request_timeout = 5s});
  auto noise = kv::Connection::connect({.urls = cluster.url_list(), .request_timeout = 5s});
  auto bucket_a = ensure_when_ready(first, {.name = "race", .replicas = 3});
  auto bucket_b = kv::Bucket::open(second, "race");
  auto bucket_noise = kv::Bucket::open(noise, "race");
  std::uint64_t revision = bucket_a.create("lease", "nobody");

  constexpr int kRounds = 150;
  std::atomic<int> round{-1};
  std::atomic<int> ready{0};
  std::atomic<bool> stop{false};
  std::vector<int> wins(kRounds, 0);
  std::vector<std::uint64_t> won_at(kRounds, 0);
  std::mutex mu;
  auto racer = [&](kv::Bucket& bucket, const std::string& who) {
    for (int r = 0; r < kRounds; ++r) {
      while (round.load() < r) std::this_thread::yield();
      std::uint64_t expect = revision;  // set before the round opened
      try {
        auto at = bucket.update("lease", who + "-" + std::to_string(r), expect);
        std::lock_guard lock(mu);
        ++wins[static_cast<std::size_t>(r)];
        won_at[static_cast<std::size_t>(r)] = at;
      } catch (const kv::Error& e) {
        if (e.kind() != kv::Errc::conflict) MESSAGE("round " << r << " " << who << ": " << e.what());
      }
      ++ready;
    }
  };
  std::thread a([&] { racer(bucket_a, "a"); });
  std::thread b([&] { racer(bucket_b, "b"); });
  std::thread other([&] {  // other keys of the bucket keep changing
    for (int n = 0; !stop; ++n) {
      try {
        bucket_noise.create("other" + std::to_string(n), "x");
      } catch (const kv::Error&) {
      }
      std::this_thread::sleep_for(3ms);
    }
  });
  int doubles = 0, none = 0;
  for (int r = 0; r < kRounds; ++r) {
    ready = 0;
    round = r;
    while (ready.load() < 2) std::this_thread::yield();
    std::lock_guard lock(mu);
    if (wins[static_cast<std::size_t>(r)] > 1) ++doubles;
    if (wins[static_cast<std::size_t>(r)] == 0) ++none;
    bool deleted = false;
    revision = bucket_a.last("lease", &deleted)->revision;  // the next round races on what is there now
    if (wins[static_cast<std::size_t>(r)] == 1) CHECK(revision == won_at[static_cast<std::size_t>(r)]);
  }
  stop = true;
  a.join();
  b.join();
  other.join();
  CHECK_MESSAGE(doubles == 0, doubles << " of " << kRounds << " rounds had both CAS writes on one revision land");
  CHECK_MESSAGE(none < kRounds / 10, none << " of " << kRounds << " rounds landed neither write");
  MESSAGE(kRounds << " rounds: " << doubles << " double wins, " << none << " with no winner");
}

TEST_CASE("Cluster_GetTogetherAsksTheLeader") {
  // In a cluster a follower may lag, so reads together go to the stream's
  // leader (STREAM.MSG.GET), never as direct gets any replica may answer;
  // each says what get() says, the writes just acknowledged included.
  testing::NatsCluster cluster;
  auto connection = kv::Connection::connect({.urls = cluster.url_list(), .request_timeout = 2s});
  auto bucket = ensure_when_ready(connection, {.name = "together", .replicas = 3});
  testing::NatsProxy proxy(cluster.node(0).port());
  auto through = kv::Connection::connect({.urls = {proxy.url()}, .request_timeout = 2s});
  auto b = kv::Bucket::open(through, "together");
  for (int round = 0; round < 20; ++round) {
    const std::string value = "v" + std::to_string(round);
    if (round == 0) b.create("a", value);
    else b.update("a", value, b.get("a")->revision);
    const auto got = b.get_together({"a", "absent"});
    REQUIRE(got.size() == 2);
    REQUIRE(got[0]);
    CHECK(got[0]->value == value);
    CHECK_FALSE(got[1]);
  }
  int direct = 0, leader = 0;
  for (const auto& m : proxy.seen()) {
    direct += m.find("$JS.API.DIRECT.GET.") != std::string::npos;
    leader += m.rfind("PUB $JS.API.STREAM.MSG.GET.KV_together", 0) == 0;
  }
  CHECK(direct == 0);
  CHECK(leader >= 40);
}
