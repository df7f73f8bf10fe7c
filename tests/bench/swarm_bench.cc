// swarm against the raw nats.c floor and the git CLI, side by side, in one run.
// Starts its own nats-server; alternates swarm and baseline samples so both
// see the same machine load; prints a table and one JSON document.
//
// Usage: swarm_bench [--quick] [--json FILE]
#include <nats/nats.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "support/nats_server.h"
#include "support/process.h"
#include "support/temp_dir.h"
#include "swarm/bootstrap.h"
#include "swarm/json.h"
#include "swarm/session_store.h"
#include "swarm/slot_lifecycle.h"

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Stats {
  double p50 = 0, p99 = 0, max = 0;
  std::size_t n = 0;
};

Stats stats_of(std::vector<double> samples) {
  Stats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  auto at = [&](double q) {
    auto i = static_cast<std::size_t>(q * static_cast<double>(samples.size() - 1) + 0.5);
    return samples[std::min(i, samples.size() - 1)];
  };
  s.p50 = at(0.50);
  s.p99 = at(0.99);
  s.max = samples.back();
  s.n = samples.size();
  return s;
}

struct Row {
  std::string name;
  std::string unit = "ms";
  Stats swarm;
  Stats baseline;
  bool has_baseline = true;
  double ratio_p50 = 0, ratio_p99 = 0;
  std::string target;
  bool met = false;
  std::string note;
};

void fail(const std::string& what) {
  std::cerr << "swarm_bench: " << what << std::endl;
  std::exit(1);
}

void check(natsStatus s, const char* what) {
  if (s != NATS_OK) fail(std::string(what) + ": " + natsStatus_GetText(s) + " " + nats_GetLastError(nullptr));
}

// Raw nats.c handles for the baselines.
struct Raw {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  explicit Raw(const std::string& url) {
    check(natsConnection_ConnectTo(&nc, url.c_str()), "raw connect");
    check(natsConnection_JetStream(&js, nc, nullptr), "raw jetstream");
  }
  ~Raw() {
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
  }
  kvStore* bucket(const char* name) {
    kvStore* kv = nullptr;
    check(js_KeyValue(&kv, js, name), "raw bind");
    return kv;
  }
};

std::string session_json(const std::string& slot, int i) {
  swarm::Session s;
  s.slot = slot;
  s.task_id = "T-" + std::to_string(i);
  s.agent_id = "slot-" + slot;
  s.host = "bench-host";
  s.host_id = "0123456789abcdef0123456789abcdef";
  s.leaf_pid = 40000 + i % 1000;
  s.hub_url = "file:///tmp/bench/.swarm/hub.git";
  s.started_at = std::chrono::system_clock::now();
  s.last_renewed = s.started_at;
  return swarm::to_json(s);
}

// Fills `bucket` with n session records, published asynchronously.
void fill(Raw& raw, const std::string& bucket, int n) {
  jsPubOptions options;
  jsPubOptions_Init(&options);
  for (int i = 0; i < n; ++i) {
    std::string slot = "s" + std::to_string(i);
    std::string subject = "$KV." + bucket + "." + slot;
    std::string value = session_json(slot, i);
    check(js_PublishAsync(raw.js, subject.c_str(), value.data(), static_cast<int>(value.size()), &options),
          "fill publish");
  }
  jsPubOptions complete;
  jsPubOptions_Init(&complete);
  complete.MaxWait = 60000;
  check(js_PublishAsyncComplete(raw.js, &complete), "fill complete");
}

int raw_watch_all(kvStore* kv) {
  kvWatcher* w = nullptr;
  kvWatchOptions options;
  kvWatchOptions_Init(&options);
  options.IgnoreDeletes = true;
  check(kvStore_WatchAll(&w, kv, &options), "raw watch");
  int n = 0;
  while (true) {
    kvEntry* e = nullptr;
    check(kvWatcher_Next(&e, w, 10000), "raw next");
    if (e == nullptr) break;
    ++n;
    kvEntry_Destroy(e);
  }
  kvWatcher_Destroy(w);
  return n;
}

struct ProcessSample {
  double ms;
  long max_rss_kb;
  int exit;
};

// fork/exec/wait4: wall time and the child's peak resident memory.
ProcessSample run_process(const std::vector<std::string>& args, const std::vector<std::string>& env_extra,
                          const std::string& cwd = {}) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) env_strings.push_back(*e);
  for (const auto& e : env_extra) env_strings.push_back(e);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> a = args;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  auto start = Clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  return {ms_since(start), usage.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : 128};
}

// Peak RSS of a command in KiB, read by /usr/bin/time: a child forked from
// this (large) benchmark would count our pages in its ru_maxrss before exec.
long peak_rss_kb(const std::vector<std::string>& args, const std::vector<std::string>& env_extra) {
  testing::TempDir tmp("swarm-rss");
  std::string out = (tmp.path() / "rss").string();
  std::vector<std::string> timed = {"/usr/bin/time", "-f", "%M", "-o", out};
  timed.insert(timed.end(), args.begin(), args.end());
  auto s = run_process(timed, env_extra);
  if (s.exit != 0) fail("measuring " + args[0] + " failed");
  return std::stol(testing::read_file(out));
}

void finish(Row& row, double limit) {
  if (row.has_baseline) {
    row.ratio_p50 = row.swarm.p50 / row.baseline.p50;
    row.ratio_p99 = row.swarm.p99 / row.baseline.p99;
    row.met = row.ratio_p50 <= limit;
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string json_file;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick") quick = true;
    else if (arg == "--json" && i + 1 < argc) json_file = argv[++i];
    else fail("usage: swarm_bench [--quick] [--json FILE]");
  }
  const std::string swarm_bin = SWARM_BINARY;
  const std::string minimal_get = MINIMAL_GET_BINARY;

  testing::NatsServer server;
  testing::TempDir dir("swarm-bench");
  auto up = swarm::up({.root = dir.path() / "ws", .nats_url = server.url(), .connection = {}});
  const std::string ws_env = "SWARM_WORKSPACE=" + up.workspace.root().string();
  auto nats = swarm::connect_nats({.urls = {server.url()}});
  Raw raw(server.url());
  std::vector<Row> rows;

  // 1. Session renew: one CAS update with a known revision, both ways.
  {
    swarm::SlotLifecycle life(up.workspace, up.config, swarm::SessionStore::open(nats),
                              swarm::LeaseStore::open(nats), {"bench-host", "bench-id"});
    life.join("renew", "T-1", false, getpid());
    auto entry = *life.store().get("renew");
    kvStore* kv = raw.bucket("swarm-sessions");
    std::string value = swarm::to_json(*entry.session);
    uint64_t raw_rev = 0;
    check(kvStore_Put(&raw_rev, kv, "raw-renew", value.data(), static_cast<int>(value.size())), "raw put");
    int n = quick ? 500 : 10000;
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
    rows.push_back(row);
  }

  // 2. List sessions: SessionStore::list() against a raw watch-all.
  for (int size : quick ? std::vector<int>{1000, 10000} : std::vector<int>{1000, 10000, 100000}) {
    std::string bucket = "bench-list-" + std::to_string(size);
    swarm::SessionStore::ensure(nats, bucket, std::chrono::hours(1), 1);
    fill(raw, bucket, size);
    auto store = swarm::SessionStore::open(nats, bucket);
    kvStore* kv = raw.bucket(bucket.c_str());
    int reps = size >= 100000 ? (quick ? 2 : 7) : size >= 10000 ? (quick ? 10 : 25) : (quick ? 30 : 60);
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
    rows.push_back(row);
  }

  // 3. `swarm status` as a process, 10 sessions, against connect + bind + one get.
  {
    swarm::SlotLifecycle life(up.workspace, up.config, swarm::SessionStore::open(nats),
                              swarm::LeaseStore::open(nats), {"bench-host", "bench-id"});
    for (int i = 0; i < 9; ++i) life.join("st" + std::to_string(i), "T-1", false, getpid());  // + "renew" = 10
    int n = quick ? 15 : 60;
    std::vector<double> swarm_ms, base_ms;
    for (int i = 0; i < n; ++i) {
      auto s = run_process({swarm_bin, "status"}, {ws_env});
      if (s.exit != 0) fail("swarm status failed");
      swarm_ms.push_back(s.ms);
      auto b = run_process({minimal_get, server.url(), "swarm-sessions", "renew"}, {});
      if (b.exit != 0) fail("minimal_get failed");
      base_ms.push_back(b.ms);
    }
    Row row{.name = "swarm status process (10 sessions)", .swarm = stats_of(swarm_ms), .baseline = stats_of(base_ms),
            .target = "<= 1.3x"};
    finish(row, 1.3);
    row.note = "baseline: connect, bind, one get (nats.c)";
    rows.push_back(row);
  }

  // 4. `swarm commit` of one small file against git add/commit/push with the git CLI.
  {
    swarm::SlotLifecycle life(up.workspace, up.config, swarm::SessionStore::open(nats),
                              swarm::LeaseStore::open(nats), {"bench-host", "bench-id"});
    const std::vector<std::string> as_bench_host = {ws_env, "SWARM_HOST=bench-host", "SWARM_HOST_ID=bench-id"};
    auto join = run_process({swarm_bin, "join", "--slot", "commit", "--task", "T-1"}, as_bench_host);
    if (join.exit != 0) fail("join for commit failed");
    auto wt = up.workspace.worktree("commit");
    auto bare = dir.path() / "bare.git";
    auto clone = dir.path() / "clone";
    run_process({"/usr/bin/git", "init", "-q", "--bare", bare.string()}, {});
    run_process({"/usr/bin/git", "clone", "-q", bare.string(), clone.string()}, {});
    run_process({"/usr/bin/git", "-C", clone.string(), "config", "user.name", "bench"}, {});
    run_process({"/usr/bin/git", "-C", clone.string(), "config", "user.email", "bench@bench"}, {});
    int n = quick ? 10 : 40;
    std::vector<double> swarm_ms, base_ms;
    for (int i = 0; i < n; ++i) {
      testing::write_file(wt / "file.txt", "change " + std::to_string(i) + "\n");
      auto s = run_process({swarm_bin, "commit", "--slot", "commit", "-m", "change " + std::to_string(i)},
                           as_bench_host);
      if (s.exit != 0) fail("swarm commit failed");
      swarm_ms.push_back(s.ms);
      testing::write_file(clone / "file.txt", "change " + std::to_string(i) + "\n");
      auto b = run_process({"/bin/sh", "-c", "git add -A && git commit -q -m 'change " + std::to_string(i) +
                                                 "' && git push -q origin HEAD:refs/heads/work"},
                           {}, clone.string());
      if (b.exit != 0) fail("git CLI commit failed");
      base_ms.push_back(b.ms);
    }
    Row row{.name = "swarm commit (one small file)", .swarm = stats_of(swarm_ms), .baseline = stats_of(base_ms),
            .target = "<= 1.0x"};
    finish(row, 1.0);
    row.note = "baseline: sh -c 'git add -A && git commit && git push' to a bare repo";
    rows.push_back(row);
  }

  // 5. 32 processes join one slot: one winner, all done within 1 s.
  {
    int rounds = quick ? 2 : 5;
    std::vector<double> wall_ms;
    std::string winners_seen;
    bool ok = true;
    for (int r = 0; r < rounds; ++r) {
      std::string slot = "race" + std::to_string(r);
      std::vector<testing::Process> processes;
      auto start = Clock::now();
      for (int i = 0; i < 32; ++i) {
        testing::Command c;
        c.args = {swarm_bin, "join", "--slot", slot, "--task", "T-1"};
        c.env = {{"SWARM_WORKSPACE", up.workspace.root().string()}};
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
    rows.push_back(row);
  }

  // 6. Peak memory of `swarm status` at 10,000 sessions.
  {
    std::vector<double> rss_mb;
    for (int i = 0; i < 3; ++i) {
      for (const char* json : {"", "--json"}) {
        std::vector<std::string> args = {swarm_bin, "status", "--bucket", "bench-list-10000"};
        if (*json) args.push_back(json);
        rss_mb.push_back(static_cast<double>(peak_rss_kb(args, {ws_env})) / 1024.0);
      }
    }
    double minimal = static_cast<double>(peak_rss_kb({minimal_get, server.url(), "swarm-sessions", "renew"}, {})) /
                     1024.0;
    Row row{.name = "swarm status peak RSS (10,000 sessions)", .unit = "MiB", .swarm = stats_of(rss_mb),
            .has_baseline = false, .target = "<= 32 MiB"};
    row.met = row.swarm.max <= 32.0;
    char note[128];
    std::snprintf(note, sizeof note, "table and --json, 3 runs each; a minimal nats.c process: %.1f MiB", minimal);
    row.note = note;
    rows.push_back(row);
  }

  // The table.
  std::printf("\n%-40s %10s %10s %10s %10s %8s %8s  %-28s %s\n", "case", "swarm p50", "swarm p99", "base p50",
              "base p99", "x p50", "x p99", "target", "met");
  for (const auto& r : rows) {
    if (r.has_baseline)
      std::printf("%-40s %8.3f%-2s %8.3f%-2s %8.3f%-2s %8.3f%-2s %7.2fx %7.2fx  %-28s %s\n", r.name.c_str(), r.swarm.p50,
                  r.unit.c_str(), r.swarm.p99, r.unit.c_str(), r.baseline.p50, r.unit.c_str(), r.baseline.p99,
                  r.unit.c_str(), r.ratio_p50, r.ratio_p99, r.target.c_str(), r.met ? "yes" : "NO");
    else
      std::printf("%-40s %8.3f%-3s %8.3f%-3s %10s %10s %8s %8s  %-28s %s\n", r.name.c_str(), r.swarm.p50, r.unit.c_str(),
                  r.swarm.max, r.unit.c_str(), "-", "-", "-", "-", r.target.c_str(), r.met ? "yes" : "NO");
  }
  std::printf("(for the last two rows the second column is the max, not p99)\n");
  for (const auto& r : rows)
    if (!r.note.empty()) std::printf("  %s: %s\n", r.name.c_str(), r.note.c_str());

  // The JSON document.
  swarm::Json cases = swarm::Json::array();
  for (const auto& r : rows) {
    swarm::Json c = swarm::Json::object();
    c.set("case", r.name).set("unit", r.unit);
    swarm::Json s = swarm::Json::object();
    s.set("median", r.swarm.p50).set("p99", r.swarm.p99).set("max", r.swarm.max).set("n", static_cast<int>(r.swarm.n));
    c.set("swarm", std::move(s));
    if (r.has_baseline) {
      swarm::Json b = swarm::Json::object();
      b.set("median", r.baseline.p50).set("p99", r.baseline.p99).set("n", static_cast<int>(r.baseline.n));
      c.set("baseline", std::move(b));
      c.set("ratio_median", r.ratio_p50).set("ratio_p99", r.ratio_p99);
    } else {
      c.set_null("baseline");
    }
    c.set("target", r.target).set("met", r.met).set("note", r.note);
    cases.push(std::move(c));
  }
  swarm::Json doc = swarm::Json::object();
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  doc.set("schema", "swarm.bench.v1")
      .set("host", host)
      .set("cpus", static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)))
      .set("nats_server", server.url())
      .set("quick", quick)
      .set("cases", std::move(cases));
  std::printf("\n%s\n", doc.dump().c_str());
  if (!json_file.empty()) std::ofstream(json_file) << doc.dump_pretty() << "\n";
  bool all_met = std::all_of(rows.begin(), rows.end(), [](const Row& r) { return r.met; });
  return all_met ? 0 : 3;
}
