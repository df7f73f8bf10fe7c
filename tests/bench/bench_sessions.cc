// Benchmark cases of the session records: a renewal, a list of up to 100,000
// sessions, 32 processes joining one slot, and a renewal on a 3-node cluster
// with and without the CAS guard of adr/0014.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <set>
#include <thread>

#include "bench/bench_cases.h"
#include "kv/bucket.h"
#include "support/process.h"
#include "swarm/slots/lifecycle.h"
#include "swarm/slots/liveness.h"
#include "swarm/slots/session_store.h"

using namespace std::chrono_literals;

namespace bench {

// 1. Session renew: one CAS update with a known revision, both ways.
void session_renew(Bench& b) {
  swarm::SlotLifecycle life(b.up.workspace, b.up.config, swarm::SessionStore::open(b.nats, b.up.config.bucket),
                            swarm::LeaseStore::open(b.nats, b.up.config.names()), {"bench-host", "bench-id"});
  life.join("renew", "T-renew", swarm::Takeover::only_stale, getpid());
  auto entry = *swarm::SessionStore::open(b.nats, b.up.config.bucket).get("renew");
  kvStore* kv = b.raw.bucket(b.up.config.bucket.c_str());
  std::string value = swarm::to_json(*entry.session);
  uint64_t raw_rev = 0;
  check(kvStore_Put(&raw_rev, kv, "raw-renew", value.data(), static_cast<int>(value.size())), "raw put");
  int n = b.quick ? 500 : 10000;
  // Warm both paths up (connections, allocator, caches) before measuring.
  for (int i = 0; i < 200; ++i) {
    entry.revision = life.renew(entry);
    check(kvStore_Update(&raw_rev, kv, "raw-renew", value.data(), static_cast<int>(value.size()), raw_rev),
          "raw update");
  }
  std::vector<double> swarm_ms, base_ms;
  for (int i = 0; i < n; ++i) {
    auto t = Clock::now();
    entry.revision = life.renew(entry);
    swarm_ms.push_back(ms_since(t));
    t = Clock::now();
    check(kvStore_Update(&raw_rev, kv, "raw-renew", value.data(), static_cast<int>(value.size()), raw_rev),
          "raw update");
    base_ms.push_back(ms_since(t));
  }
  kvStore_Destroy(kv);
  Row row{.name = "session renew", .swarm = stats_of(swarm_ms), .baseline = stats_of(base_ms),
          .target = "<= 1.1x (p50 and p99)"};
  finish(row, 1.1);
  row.met = row.ratio_p50 <= 1.1 && row.ratio_p99 <= 1.1;
  row.note = std::to_string(n) + " renewals each";
  b.rows.push_back(row);
}

// 2. List sessions: SessionStore::list() against a raw watch-all (case 6
// reads the 10,000 bucket made here).
void list_sessions(Bench& b) {
  for (int size : b.quick ? std::vector<int>{1000, 10000} : std::vector<int>{1000, 10000, 100000}) {
    std::string bucket = "bench-list-" + std::to_string(size);
    swarm::SessionStore::ensure(b.nats, bucket, std::chrono::hours(1), 1);
    fill(b.raw, bucket, size);
    auto store = swarm::SessionStore::open(b.nats, bucket);
    kvStore* kv = b.raw.bucket(bucket.c_str());
    int reps = size >= 100000 ? (b.quick ? 2 : 7) : size >= 10000 ? (b.quick ? 10 : 25) : (b.quick ? 30 : 60);
    std::vector<double> swarm_ms, base_ms;
    for (int i = 0; i < reps; ++i) {
      auto t = Clock::now();
      auto list = store.list();
      swarm_ms.push_back(ms_since(t));
      if (static_cast<int>(list.size()) != size) fail("list returned " + std::to_string(list.size()));
      t = Clock::now();
      int got = raw_watch_all(kv);
      base_ms.push_back(ms_since(t));
      if (got != size) fail("raw watch returned " + std::to_string(got));
    }
    kvStore_Destroy(kv);
    Row row{.name = "list " + std::to_string(size) + " sessions", .swarm = stats_of(swarm_ms),
            .baseline = stats_of(base_ms), .target = "<= 1.5x"};
    finish(row, 1.5);
    row.note = std::to_string(reps) + " lists each";
    b.rows.push_back(row);
  }
}

// 5. 32 processes join one slot: one winner, all done within 1 s.
void concurrent_joins(Bench& b) {
  int rounds = b.quick ? 2 : 5;
  std::vector<double> wall_ms;
  std::string winners_seen;
  bool ok = true;
  for (int r = 0; r < rounds; ++r) {
    std::string slot = "race" + std::to_string(r);
    std::vector<testing::Process> processes;
    auto start = Clock::now();
    for (int i = 0; i < 32; ++i) {
      testing::Command c;
      c.args = {b.swarm_bin, "join", "--slot", slot, "--task", "T-" + slot};
      c.env = {{"SWARM_WORKSPACE", b.up.workspace.root().string()}};
      processes.emplace_back(c);
    }
    int winners = 0, conflicts = 0;
    for (auto& p : processes) {
      auto result = p.wait();
      winners += result.exit == 0;
      conflicts += result.exit == 3;
    }
    wall_ms.push_back(ms_since(start));
    ok = ok && winners == 1 && conflicts == 31;
    winners_seen += (winners_seen.empty() ? "" : ",") + std::to_string(winners);
  }
  Row row{.name = "32 concurrent joins of one slot", .swarm = stats_of(wall_ms), .has_baseline = false,
          .target = "1 winner, all done < 1000 ms"};
  row.met = ok && row.swarm.max < 1000;
  row.note = "winners per round: " + winners_seen;
  b.rows.push_back(row);
}

// 18. A CAS write on a 3-node cluster (a session renewal) with the guard of
// adr/0014, which nats-server before 2.10 needs, against the same write
// without it (2.10 and later check a clustered CAS as they apply it).
void cluster_cas_guard(Bench& b) {
  testing::NatsCluster cluster;
  auto c = swarm::connect_nats({.urls = cluster.url_list(), .request_timeout = 20s});
  std::optional<kv::Bucket> bucket;
  for (auto until = Clock::now() + 40s; !bucket && Clock::now() < until;) {
    try {
      bucket = kv::Bucket::ensure(c, {.name = "bench-cas", .ttl = 300s, .replicas = 3});
    } catch (const kv::Error&) {
      std::this_thread::sleep_for(500ms);  // a fresh cluster elects its JetStream leader first
    }
  }
  if (!bucket) fail("case 18: the cluster never made the bucket");
  std::uint64_t revision = bucket->create("renew", session_json("renew", 0));
  int n = b.quick ? 40 : 200;
  std::vector<double> guarded, bare;
  for (int i = 0; i < n; ++i) {
    for (const char* mode : {"always", "never"}) {
      setenv("SWARM_CAS_GUARD", mode, 1);
      auto t0 = Clock::now();
      revision = bucket->update("renew", session_json("renew", i), revision);
      (std::string(mode) == "always" ? guarded : bare).push_back(ms_since(t0));
    }
  }
  unsetenv("SWARM_CAS_GUARD");
  Row row{.name = "cluster CAS write, 2.9 guard vs none", .swarm = stats_of(guarded), .baseline = stats_of(bare),
          .target = "info"};
  finish(row, 100);
  row.note = "3-node cluster of nats-server " + c.server_version() +
             ": the guard (one stream-info round trip more) is used only before 2.10";
  b.rows.push_back(row);
}

}  // namespace bench

namespace bench {

// 28. An agent's whole life as one process: `swarm run --no-artifact -- true` (join, the
// agent named in the record, its keeper and TTL listener started, close)
// against what it replaces, `swarm join` then `swarm close` (two processes).
void run_agent_life(Bench& b) {
  const int n = b.quick ? 8 : 30;
  std::vector<double> swarm_ms, base_ms;
  for (int i = 0; i < n; ++i) {
    const std::string task = "T-life-" + std::to_string(i);
    auto r = run_process({b.swarm_bin, "run", "--slot", "life", "--task", task, "--no-artifact", "--", "true"}, {b.ws_env});
    if (r.exit != 0) fail("swarm run failed");
    swarm_ms.push_back(r.ms);
    auto j = run_process({b.swarm_bin, "join", "--slot", "hand", "--task", task}, {b.ws_env});
    auto c = run_process({b.swarm_bin, "close", "--slot", "hand", "--result", "success", "--no-artifact"}, {b.ws_env});
    if (j.exit != 0 || c.exit != 0) fail("swarm join or close failed");
    base_ms.push_back(j.ms + c.ms);
  }
  Row row{.name = "swarm run -- true (a whole life)", .swarm = stats_of(swarm_ms), .baseline = stats_of(base_ms),
          .target = "<= 1.1x"};
  finish(row, 1.1);
  row.note = "baseline: swarm join + swarm close --no-artifact, two processes";
  b.rows.push_back(row);
}

}  // namespace bench

namespace bench {

// 29. What `swarm run` keeps up: (a) one keeper renewal (the record with its
// task lease, under a budget, as SessionKeeper sends it) against one raw CAS
// update; (b) `swarm run -- sleep 10` under a TTL of 1 s, its session read
// every 100 ms: never late, one session token all along.
void run_keeps_its_session(Bench& b) {
  {
    swarm::SlotLifecycle life(b.up.workspace, b.up.config, swarm::SessionStore::open(b.nats, b.up.config.bucket),
                              swarm::LeaseStore::open(b.nats, b.up.config.names()), {"bench-host", "bench-id"});
    life.join("keeper", "T-keeper", swarm::Takeover::only_stale, getpid());
    auto entry = *swarm::SessionStore::open(b.nats, b.up.config.bucket).get("keeper");
    kvStore* kv = b.raw.bucket(b.up.config.bucket.c_str());
    std::string value = swarm::to_json(*entry.session);
    uint64_t raw_rev = 0;
    check(kvStore_Put(&raw_rev, kv, "raw-keeper", value.data(), static_cast<int>(value.size())), "raw put");
    // The floor keeps the same two records alive by hand: one raw CAS update
    // of each, the task lease's value as swarm wrote it.
    kvStore* leases = b.raw.bucket(b.up.config.lease_bucket.c_str());
    auto task = swarm::LeaseStore::open(b.nats, b.up.config.names()).get(swarm::task_lease_name("T-keeper"));
    if (!task) throw std::runtime_error("the keeper's task lease is missing");
    const std::string lease_value = swarm::to_json(*task->record);
    uint64_t raw_lease_rev = 0;
    check(kvStore_Put(&raw_lease_rev, leases, "raw-keeper-lease", lease_value.data(),
                      static_cast<int>(lease_value.size())),
          "raw put");
    std::optional<swarm::LeaseEntry> task_lease;  // as SessionKeeper keeps it between renewals
    const int n = b.quick ? 500 : 5000;
    std::vector<double> swarm_ms, base_ms;
    for (int i = 0; i < n + 200; ++i) {  // the first 200 of each warm up
      auto t = Clock::now();
      swarm::SessionEntry written;
      std::optional<swarm::LeaseEntry> renewed;
      life.with_budget(std::chrono::milliseconds(5000)).renew(entry, task_lease, nullptr, {}, &written, &renewed);
      entry = std::move(written);
      task_lease = std::move(renewed);
      if (i >= 200) swarm_ms.push_back(ms_since(t));
      t = Clock::now();
      check(kvStore_Update(&raw_rev, kv, "raw-keeper", value.data(), static_cast<int>(value.size()), raw_rev),
            "raw update");
      check(kvStore_Update(&raw_lease_rev, leases, "raw-keeper-lease", lease_value.data(),
                           static_cast<int>(lease_value.size()), raw_lease_rev),
            "raw update");
      if (i >= 200) base_ms.push_back(ms_since(t));
    }
    kvStore_Destroy(kv);
    kvStore_Destroy(leases);
    Row row{.name = "run's renewal (record + task lease)", .swarm = stats_of(swarm_ms), .baseline = stats_of(base_ms),
            .target = "<= 1.1x (p50)"};
    finish(row, 1.1);
    row.note = std::to_string(n) + " renewals each; baseline: one raw CAS update of the record and one of the task lease";
    b.rows.push_back(row);
  }
  const std::string bucket = "bench-run-1s";
  swarm::SessionStore::ensure(b.nats, bucket, std::chrono::seconds(1), 1);
  testing::Process run(testing::Command{{b.swarm_bin, "--bucket", bucket, "run", "--slot", "ten", "--task", "T-ten",
                                         "--", "sleep", "10"},
                                        {{b.ws_env.substr(0, b.ws_env.find('=')), b.ws_env.substr(b.ws_env.find('=') + 1)}},
                                        {}});
  auto store = swarm::SessionStore::open(b.nats, bucket);
  const auto start = Clock::now();
  int samples = 0, late = 0, missing = 0;
  std::set<std::uint64_t> tokens;
  std::vector<double> ages_ms;
  while (Clock::now() - start < std::chrono::milliseconds(10000)) {
    std::this_thread::sleep_for(100ms);
    if (Clock::now() - start < 500ms) continue;  // joining
    ++samples;
    auto clock = store.server_clock();
    auto entry = store.get("ten");
    if (!entry || entry->corrupt()) {
      ++missing;
      continue;
    }
    tokens.insert(entry->token());
    const auto age = swarm::age_of(entry->stored_at, clock.now());
    ages_ms.push_back(static_cast<double>(age.count()));
    if (swarm::state_of(age, std::chrono::seconds(1)) != swarm::State::fresh) ++late;
  }
  auto r = run.wait(std::chrono::seconds(20));
  Row row{.name = "10 TTLs under run (TTL 1s, sampled every 100 ms)", .swarm = stats_of(ages_ms),
          .has_baseline = false, .target = "never late; one token"};
  row.met = r.exit == 0 && late == 0 && missing == 0 && tokens.size() == 1;
  row.note = std::to_string(samples) + " samples of the record's age: " + std::to_string(late) + " late, " +
             std::to_string(missing) + " missing, " + std::to_string(tokens.size()) + " session token(s); run exit " +
             std::to_string(r.exit);
  b.rows.push_back(row);
}

}  // namespace bench
