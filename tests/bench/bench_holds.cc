// Holds as whole processes: `swarm hold` of one pattern against `swarm
// lease acquire` of one lease (both take one fenced lease; a hold also
// checks the others and names itself in its session), and `swarm commit`
// with 200 live holds of other slots against the same commit with none.
#include <string>
#include <vector>

#include "bench/bench_cases.h"
#include "kv/bucket.h"
#include "kv/stream.h"

namespace bench {

namespace {

constexpr int kOtherHolds = 200;

// 200 live exclusive holds of other slots, none of the committed paths, as
// another client's records; removed again by purging their subjects (no
// delete marker left for the next listing to read).
void plant_holds(kv::Connection& nats, const std::string& lease_bucket) {
  auto leases = kv::Bucket::open(nats, lease_bucket);
  for (int i = 0; i < kOtherHolds; ++i) {
    const std::string slot = "other" + std::to_string(i);
    const std::string name = "hold." + slot + ".1";
    leases.create(name, "{\"name\":\"" + name + "\",\"holder\":\"" + slot + "\",\"host\":\"bench-other\",\"ttl_ms\":"
                     "3600000,\"slot\":\"" + slot + "\",\"patterns\":[\"area" + std::to_string(i) +
                     "/**\"],\"kind\":\"exclusive\",\"session\":1}");
  }
}

void remove_holds(kv::Connection& nats, const std::string& lease_bucket) {
  kv::Stream::bind(nats, "KV_" + lease_bucket).purge("$KV." + lease_bucket + ".hold.>");
}

}  // namespace

// 37. `swarm hold --slot h 'src/api/**'` against `swarm lease acquire
// bench-hold-<i>`: each taken once per pair, and let go untimed.
void hold_one_pattern(Bench& b) {
  const std::vector<std::string> env = {b.ws_env, "SWARM_HOST=bench-host", "SWARM_HOST_ID=bench-id"};
  if (run_process({b.swarm_bin, "join", "--slot", "h", "--task", "T-hold"}, env).exit != 0) fail("join for hold failed");
  const int n = b.quick ? 10 : 40;
  std::vector<double> swarm_ms, base_ms;
  for (int i = 0; i < n + 2; ++i) {
    auto s = run_process({b.swarm_bin, "hold", "--slot", "h", "src/api/**"}, env);
    const std::string lease = "bench-hold-" + std::to_string(i);
    auto base = run_process({b.swarm_bin, "lease", "acquire", lease, "--ttl", "1m"}, env);
    if (s.exit != 0 || base.exit != 0) fail("hold or lease acquire failed");
    if (run_process({b.swarm_bin, "hold", "--slot", "h", "--release", "--all"}, env).exit != 0) fail("release failed");
    if (i < 2) continue;
    swarm_ms.push_back(s.ms);
    base_ms.push_back(base.ms);
  }
  Row row{.name = "swarm hold, one pattern", .swarm = stats_of(swarm_ms), .baseline = stats_of(base_ms),
          .target = "<= 1.3x"};
  finish(row, 1.3);
  row.note = std::to_string(n) + " each; baseline: swarm lease acquire of a free lease (both a process)";
  b.rows.push_back(row);
}

// 38. `swarm commit` of one small file with 200 live holds of other slots
// (disjoint from it: each path is checked against all of them) against the
// same commit with none, alternately in the same slot.
void commit_among_holds(Bench& b) {
  const std::vector<std::string> env = {b.ws_env, "SWARM_HOST=bench-host", "SWARM_HOST_ID=bench-id"};
  if (run_process({b.swarm_bin, "join", "--slot", "among", "--task", "T-among"}, env).exit != 0)
    fail("join for commit among holds failed");
  const auto wt = b.up.workspace.worktree("among");
  const std::string lease_bucket = b.up.config.lease_bucket;
  const int n = b.quick ? 10 : 40;
  std::vector<double> with_ms, without_ms;
  auto commit = [&](int i) {
    testing::write_file(wt / "src" / "file.txt", "change " + std::to_string(i) + "\n");
    auto s = run_process({b.swarm_bin, "commit", "--slot", "among", "-m", "change " + std::to_string(i)}, env);
    if (s.exit != 0) fail("commit among holds failed");
    return s.ms;
  };
  std::filesystem::create_directories(wt / "src");
  for (int i = 0; i < n + 2; ++i) {
    const double without = commit(2 * i);
    plant_holds(b.nats, lease_bucket);
    const double with = commit(2 * i + 1);
    remove_holds(b.nats, lease_bucket);
    if (i < 2) continue;
    without_ms.push_back(without);
    with_ms.push_back(with);
  }
  Row row{.name = "swarm commit with 200 live holds of other slots", .swarm = stats_of(with_ms),
          .baseline = stats_of(without_ms), .target = "<= 1.1x"};
  finish(row, 1.1);
  row.note = std::to_string(n) + " each, alternately; baseline: the same commit with no hold anywhere";
  b.rows.push_back(row);
}

}  // namespace bench
