// Benchmark cases of `swarm status` (and doctor) as whole processes: time
// against a minimal nats.c process, and peak memory, at 10 to 100,000
// sessions (the buckets case 2 filled).
#include <unistd.h>

#include <cstdio>

#include "bench/bench_cases.h"
#include "swarm/slots/lifecycle.h"
#include "swarm/slots/session_store.h"

namespace bench {

// 3. `swarm status` as a process, 10 sessions, against connect + bind + one get.
void status_process(Bench& b) {
  swarm::SlotLifecycle life(b.up.workspace, b.up.config, swarm::SessionStore::open(b.nats, b.up.config.bucket),
                            swarm::LeaseStore::open(b.nats, b.up.config.names()), {"bench-host", "bench-id"});
  for (int i = 0; i < 9; ++i) life.join("st" + std::to_string(i), "T-st" + std::to_string(i), swarm::Takeover::only_stale, getpid());  // + "renew" = 10
  if (!swarm::SessionStore::open(b.nats, b.up.config.bucket).get("renew")) life.join("renew", "T-renew", swarm::Takeover::only_stale, getpid());  // case 1 skipped (--only)
  int n = b.quick ? 15 : 60;
  std::vector<double> swarm_ms, base_ms;
  for (int i = 0; i < n; ++i) {
    auto s = run_process({b.swarm_bin, "status"}, {b.ws_env});
    if (s.exit != 0) fail("swarm status failed");
    swarm_ms.push_back(s.ms);
    auto base = run_process({b.minimal_get, b.server.url(), b.up.config.bucket, "renew"}, {});
    if (base.exit != 0) fail("minimal_get failed");
    base_ms.push_back(base.ms);
  }
  Row row{.name = "swarm status process (10 sessions)", .swarm = stats_of(swarm_ms), .baseline = stats_of(base_ms),
          .target = "<= 1.2x"};
  finish(row, 1.2);
  row.note = "baseline: connect, bind, one get (nats.c)";
  b.rows.push_back(row);
}

// 6. Peak memory of `swarm status` at 10,000 sessions.
void status_peak_rss(Bench& b) {
  std::vector<double> rss_mb;
  for (int i = 0; i < 3; ++i) {
    for (const char* json : {"", "--json"}) {
      std::vector<std::string> args = {b.swarm_bin, "status", "--bucket", "bench-list-10000"};
      if (*json) args.push_back(json);
      rss_mb.push_back(static_cast<double>(peak_rss_kb(args, {b.ws_env})) / 1024.0);
    }
  }
  double minimal = static_cast<double>(peak_rss_kb({b.minimal_get, b.server.url(), b.up.config.bucket, "renew"}, {})) /
                   1024.0;
  Row row{.name = "swarm status peak RSS (10,000 sessions)", .unit = "MiB", .swarm = stats_of(rss_mb),
          .has_baseline = false, .target = "<= 32 MiB"};
  row.met = row.swarm.max <= 32.0;
  char note[128];
  std::snprintf(note, sizeof note, "table and --json, 3 runs each; a minimal nats.c process: %.1f MiB", minimal);
  row.note = note;
  b.rows.push_back(row);
}

// 14. `swarm status` and `swarm --json status` at 10,000 sessions, whole
// processes, against a nats.c process that watches the whole bucket.
void status_at_10000(Bench& b) {
  const int n = b.quick ? 5 : 15;
  for (const char* json : {"", "--json"}) {
    std::vector<double> swarm_ms, base_ms;
    std::vector<std::string> args = {b.swarm_bin, "status", "--bucket", "bench-list-10000"};
    if (*json) args.push_back(json);
    for (int i = 0; i < n + 2; ++i) {  // the first two of each warm the server's caches up
      auto s = run_process(args, {b.ws_env});
      auto base = run_process({b.minimal_get, b.server.url(), "bench-list-10000", "--all"}, {});
      if (s.exit != 0 || base.exit != 0) fail("status at 10,000 sessions failed");
      if (i < 2) continue;
      swarm_ms.push_back(s.ms);
      base_ms.push_back(base.ms);
    }
    Row row{.name = std::string("swarm ") + (*json ? "--json " : "") + "status (10,000 sessions)",
            .swarm = stats_of(swarm_ms), .baseline = stats_of(base_ms), .target = *json ? "<= 1.3x" : "<= 1.2x"};
    finish(row, *json ? 1.3 : 1.2);
    row.note = std::to_string(n) + " runs each; baseline: a nats.c process watching the whole bucket (minimal_get --all)";
    b.rows.push_back(row);
  }
}

// 15. `swarm status`, `--json status` and `doctor` at 100,000 sessions: time
// and peak memory (not with --quick, which makes no 100,000 bucket).
void verbs_at_100000(Bench& b) {
  if (b.quick) return;
  for (const std::vector<std::string>& verb :
       {std::vector<std::string>{"status"}, std::vector<std::string>{"--json", "status"},
        std::vector<std::string>{"doctor"}}) {
    std::vector<std::string> args = {b.swarm_bin};
    args.insert(args.end(), verb.begin(), verb.end());
    args.insert(args.end(), {"--bucket", "bench-list-100000", "--timeout", "30s"});
    std::vector<double> ms, rss_mb;
    for (int i = 0; i < 3; ++i) {
      auto s = run_process(args, {b.ws_env});
      if (s.exit != 0 && !(verb[0] == "doctor" && s.exit == 8)) fail("a verb at 100,000 sessions failed");
      ms.push_back(s.ms);
      rss_mb.push_back(static_cast<double>(peak_rss_kb(args, {b.ws_env}, 8)) / 1024.0);  // doctor: 8, problems
    }
    std::string name;
    for (const auto& v : verb) name += (name.empty() ? "" : " ") + v;
    Row row{.name = "swarm " + name + " (100,000 sessions)", .swarm = stats_of(ms), .has_baseline = false,
            .target = "< 1000 ms, < 64 MiB"};
    auto mem = stats_of(rss_mb);
    row.met = row.swarm.max < 1000 && mem.max < 64;
    char note[160];
    std::snprintf(note, sizeof note, "3 runs; peak RSS %.1f MiB (max %.1f)", mem.p50, mem.max);
    row.note = note;
    b.rows.push_back(row);
  }
}

}  // namespace bench
