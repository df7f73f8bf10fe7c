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
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "support/git_module.h"
#include "support/nats_server.h"
#include "support/process.h"
#include "support/temp_dir.h"
#include "swarm/bootstrap.h"
#include "swarm/child_process.h"
#include "swarm/json.h"
#include "swarm/lease/mutex.h"
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

// Two CAS updates the raw way, sent together and both answers awaited: the
// floor of any pipelined pair (the server still stores two messages).
struct RawPair {
  natsConnection* nc;
  natsSubscription* replies = nullptr;
  std::string inbox;
  explicit RawPair(natsConnection* c) : nc(c) {
    char* raw_inbox = nullptr;
    check(natsInbox_Create(&raw_inbox), "raw inbox");
    inbox = raw_inbox;
    natsInbox_Destroy(raw_inbox);
    check(natsConnection_SubscribeSync(&replies, nc, (inbox + ".*").c_str()), "raw subscribe");
  }
  ~RawPair() { natsSubscription_Destroy(replies); }
  // Updates both subjects at their revisions; returns the new revisions.
  void update(const std::string (&subjects)[2], const std::string& value, uint64_t (&revisions)[2]) {
    for (int i = 0; i < 2; ++i) {
      natsMsg* m = nullptr;
      check(natsMsg_Create(&m, subjects[i].c_str(), (inbox + "." + std::to_string(i)).c_str(), value.data(),
                           static_cast<int>(value.size())),
            "raw msg");
      check(natsMsgHeader_Set(m, "Nats-Expected-Last-Subject-Sequence", std::to_string(revisions[i]).c_str()),
            "raw header");
      check(natsConnection_PublishMsg(nc, m), "raw publish");
      natsMsg_Destroy(m);
    }
    check(natsConnection_Flush(nc), "raw flush");
    for (int got = 0; got < 2; ++got) {
      natsMsg* reply = nullptr;
      check(natsSubscription_NextMsg(&reply, replies, 5000), "raw answer");
      std::string subject = natsMsg_GetSubject(reply);
      std::string data(natsMsg_GetData(reply), static_cast<std::size_t>(natsMsg_GetDataLength(reply)));
      natsMsg_Destroy(reply);
      auto at = data.find("\"seq\":");
      if (at == std::string::npos) fail("raw pair refused: " + data);
      revisions[subject.back() - '0'] = std::strtoull(data.c_str() + at + 6, nullptr, 10);
    }
  }
};

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
long peak_rss_kb(const std::vector<std::string>& args, const std::vector<std::string>& env_extra, int also_ok = 0) {
  testing::TempDir tmp("swarm-rss");
  std::string out = (tmp.path() / "rss").string();
  std::vector<std::string> timed = {"/usr/bin/time", "-f", "%M", "-o", out};
  timed.insert(timed.end(), args.begin(), args.end());
  auto s = run_process(timed, env_extra);
  if (s.exit != 0 && s.exit != also_ok) fail("measuring " + args[0] + " failed");
  // GNU time puts "Command exited with non-zero status N" before the format's line.
  std::string text = testing::read_file(out);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return std::stol(text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1));
}

// A folder on tmpfs (/dev/shm) for the file-heavy cases: the disk's noise
// would hide the CPU and syscall work. Removed when it goes.
struct ShmDir {
  std::filesystem::path path;
  ShmDir() {
    std::string templ = "/dev/shm/swarm-bench-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) fail("cannot make a folder in /dev/shm");
    path = templ;
  }
  ~ShmDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// Writes `files` text files of about `bytes` each under `root`, 100 to a
// folder, two levels deep, with varied words (compresses like source code).
void write_tree(const std::filesystem::path& root, int files, int bytes) {
  static const char* words[] = {"alpha", "render", "tile", "queue", "lease", "token", "commit", "branch",
                                "session", "worker", "buffer", "stream", "index", "value", "return", "struct"};
  std::uint64_t seed = 88172645463325252ULL;
  auto next = [&] {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
  };
  for (int i = 0; i < files; ++i) {
    auto dir = root / ("mod" + std::to_string(i / 1000)) / ("pkg" + std::to_string((i / 100) % 10));
    if (i % 100 == 0) std::filesystem::create_directories(dir);
    std::string text;
    text.reserve(static_cast<size_t>(bytes) + 64);
    while (static_cast<int>(text.size()) < bytes) {
      text += words[next() % 16];
      text += (next() % 8 == 0) ? "\n" : " ";
      if (next() % 5 == 0) text += std::to_string(next() % 100000);
    }
    std::ofstream(dir / ("file" + std::to_string(i) + ".txt"), std::ios::binary) << text << "\n";
  }
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
  testing::use_built_git_module();
  bool quick = false;
  std::string json_file;
  std::vector<int> only;  // case numbers; empty: all
  int serve = 0;          // --serve N: a workspace with N sessions to profile by hand
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick") quick = true;
    else if (arg == "--serve" && i + 1 < argc) serve = std::atoi(argv[++i]);
    else if (arg == "--json" && i + 1 < argc) json_file = argv[++i];
    else if (arg == "--only" && i + 1 < argc) {
      std::stringstream list(argv[++i]);
      for (std::string n; std::getline(list, n, ',');) {
        char* end = nullptr;
        long v = std::strtol(n.c_str(), &end, 10);
        if (n.empty() || *end != '\0' || v < 1 || v > 18) fail("--only: not a case number (1 to 18): " + n);
        only.push_back(static_cast<int>(v));
      }
    } else
      fail("usage: swarm_bench [--quick] [--json FILE] [--only N[,N...]] | --serve N");
  }
  auto want = [&](std::initializer_list<int> cases) {
    if (only.empty()) return true;
    for (int c : cases)
      if (std::find(only.begin(), only.end(), c) != only.end()) return true;
    return false;
  };
  const std::string swarm_bin = SWARM_BINARY;
  const std::string minimal_get = MINIMAL_GET_BINARY;

  testing::NatsServer server;
  testing::TempDir dir("swarm-bench");
  auto up = swarm::up({.root = dir.path() / "ws", .nats_url = server.url(), .connection = {}});
  const std::string ws_env = "SWARM_WORKSPACE=" + up.workspace.root().string();
  auto nats = swarm::connect_nats({.urls = {server.url()}});
  Raw raw(server.url());
  std::vector<Row> rows;

  if (serve > 0) {
    const std::string bucket = "bench-list-" + std::to_string(serve);
    swarm::SessionStore::ensure(nats, bucket, std::chrono::hours(1), 1);
    fill(raw, bucket, serve);
    std::printf("export %s; swarm status --bucket %s   # Enter ends it\n", ws_env.c_str(), bucket.c_str());
    std::fflush(stdout);
    std::getchar();
    return 0;
  }

  // 1. Session renew: one CAS update with a known revision, both ways.
  if (want({1})) {
    swarm::SlotLifecycle life(up.workspace, up.config, swarm::SessionStore::open(nats),
                              swarm::LeaseStore::open(nats), {"bench-host", "bench-id"});
    life.join("renew", "T-renew", swarm::Takeover::only_stale, getpid());
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

  // 2. List sessions: SessionStore::list() against a raw watch-all (case 6
  // reads the 10,000 bucket made here).
  if (want({2, 6, 14, 15}))
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
  if (want({3})) {
    swarm::SlotLifecycle life(up.workspace, up.config, swarm::SessionStore::open(nats),
                              swarm::LeaseStore::open(nats), {"bench-host", "bench-id"});
    for (int i = 0; i < 9; ++i) life.join("st" + std::to_string(i), "T-st" + std::to_string(i), swarm::Takeover::only_stale, getpid());  // + "renew" = 10
    if (!life.store().get("renew")) life.join("renew", "T-renew", swarm::Takeover::only_stale, getpid());  // case 1 skipped (--only)
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
  if (want({4})) {
    swarm::SlotLifecycle life(up.workspace, up.config, swarm::SessionStore::open(nats),
                              swarm::LeaseStore::open(nats), {"bench-host", "bench-id"});
    const std::vector<std::string> as_bench_host = {ws_env, "SWARM_HOST=bench-host", "SWARM_HOST_ID=bench-id"};
    auto join = run_process({swarm_bin, "join", "--slot", "commit", "--task", "T-commit"}, as_bench_host);
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
  if (want({5})) {
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
        c.args = {swarm_bin, "join", "--slot", slot, "--task", "T-" + slot};
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
  if (want({6})) {
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

  // 7. Lease renew: LeaseStore::renew against one CAS update.
  // 8. A session renewed with its task lease, in one round trip, against one CAS update.
  if (want({7, 8})) {
    auto store = swarm::LeaseStore::open(nats);
    swarm::LeaseHolder who;
    who.holder = "bench";
    who.host = "bench-host";
    who.host_id = "bench-id";
    who.pid = getpid();
    auto lease = store.acquire("bench-renew", who, 60s);
    swarm::SlotLifecycle life(up.workspace, up.config, swarm::SessionStore::open(nats), store,
                              {"bench-host", "bench-id"});
    life.join("with-task", "T-bench", swarm::Takeover::only_stale, getpid());
    auto entry = *life.store().get("with-task");
    auto task_lease = *life.tasks().read("T-bench");
    kvStore* kv = raw.bucket("swarm-sessions");
    std::string value = swarm::to_json(*entry.session);
    uint64_t raw_rev = 0;
    check(kvStore_Put(&raw_rev, kv, "raw-lease", value.data(), static_cast<int>(value.size())), "raw put");
    RawPair raw_pair(raw.nc);
    const std::string pair_subjects[2] = {"$KV.swarm-sessions.raw-pair-a", "$KV.swarm-sessions.raw-pair-b"};
    uint64_t pair_revisions[2] = {0, 0};
    check(kvStore_Put(&pair_revisions[0], kv, "raw-pair-a", value.data(), static_cast<int>(value.size())), "raw put");
    check(kvStore_Put(&pair_revisions[1], kv, "raw-pair-b", value.data(), static_cast<int>(value.size())), "raw put");
    int n = quick ? 500 : 5000;
    std::vector<double> lease_ms, pair_ms, base_ms, raw_pair_ms;
    std::vector<std::string> warnings;
    for (int i = 0; i < n + 100; ++i) {
      auto t = Clock::now();
      lease = store.renew(lease);
      double lease_sample = ms_since(t);
      t = Clock::now();
      entry.revision = life.renew(entry, task_lease, &warnings);
      double pair_sample = ms_since(t);
      task_lease = *life.tasks().read("T-bench");  // its new revision, outside the timing
      t = Clock::now();
      check(kvStore_Update(&raw_rev, kv, "raw-lease", value.data(), static_cast<int>(value.size()), raw_rev),
            "raw update");
      double base_sample = ms_since(t);
      t = Clock::now();
      raw_pair.update(pair_subjects, value, pair_revisions);
      double raw_pair_sample = ms_since(t);
      if (i < 100) continue;  // warming up
      raw_pair_ms.push_back(raw_pair_sample);
      lease_ms.push_back(lease_sample);
      pair_ms.push_back(pair_sample);
      base_ms.push_back(base_sample);
    }
    kvStore_Destroy(kv);
    if (!warnings.empty()) fail("renewal with the task lease warned: " + warnings.front());
    Row lease_row{.name = "lease renew", .swarm = stats_of(lease_ms), .baseline = stats_of(base_ms),
                  .target = "<= 1.1x"};
    finish(lease_row, 1.1);
    lease_row.note = std::to_string(n) + " renewals each; baseline: one kvStore_Update";
    rows.push_back(lease_row);
    Row pair_row{.name = "session renew with its task lease", .swarm = stats_of(pair_ms), .baseline = stats_of(base_ms),
                 .target = "<= 1.15x"};
    finish(pair_row, 1.15);
    const Stats floor = stats_of(raw_pair_ms);
    char pair_note[256];
    std::snprintf(pair_note, sizeof pair_note,
                  "both CAS writes sent together (one round trip); baseline: one kvStore_Update; "
                  "raw nats.c sending the same two CAS writes together: p50 %.3f ms (%.2fx), p99 %.3f ms",
                  floor.p50, floor.p50 / pair_row.baseline.p50, floor.p99);
    pair_row.note = pair_note;
    rows.push_back(pair_row);
  }

  // 9. Lock hand-off: from the holder's release to the next waiter's command
  // started, against a raw watch-then-create hand-off and the same spawn.
  double raw_handoff_floor = 0;  // without the spawn, for row 10
  if (want({9, 10, 17})) {
    auto store = swarm::LeaseStore::open(nats);
    kvStore* kv = raw.bucket("swarm-leases");
    int n = quick ? 10 : 30;
    std::vector<double> swarm_ms, base_ms, floor_ms;
    swarm::LeaseHolder who;
    who.holder = "bench";
    who.host = "bench-host";
    who.host_id = "bench-id";
    who.pid = getpid();
    for (int i = 0; i < n; ++i) {
      // swarm: a Mutex waits in line; the holder releases.
      auto held = store.acquire("handoff", who, 30s);
      std::atomic<bool> started{false};
      Clock::time_point granted_and_spawned;
      std::thread waiter([&] {
        auto own = swarm::LeaseStore::open(swarm::connect_nats({.urls = {server.url()}}));
        swarm::Mutex m(own, "handoff", who, 30s);
        auto lease = m.lock(std::nullopt);
        auto child = swarm::ChildProcess::start({"/bin/true"}, {});
        granted_and_spawned = Clock::now();
        child->wait();
        own.release(lease);
        started = true;
      });
      while (store.waiting("handoff")["handoff"] == 0) std::this_thread::sleep_for(1ms);
      std::this_thread::sleep_for(20ms);
      auto t0 = Clock::now();
      store.release(held);
      waiter.join();
      swarm_ms.push_back(std::chrono::duration<double, std::milli>(granted_and_spawned - t0).count());

      // raw: a watcher waits for the key's delete, then creates it, then spawns.
      uint64_t rev = 0;
      check(kvStore_Create(&rev, kv, "raw-handoff", "x", 1), "raw create");
      std::atomic<bool> watching{false};
      Clock::time_point raw_granted, raw_spawned;
      std::thread raw_waiter([&] {
        kvWatcher* w = nullptr;
        check(kvStore_Watch(&w, kv, "raw-handoff", nullptr), "raw watch");
        kvEntry* e = nullptr;
        check(kvWatcher_Next(&e, w, 5000), "raw first");  // the current value
        kvEntry_Destroy(e);
        watching = true;
        while (true) {
          e = nullptr;
          check(kvWatcher_Next(&e, w, 5000), "raw next");
          bool deleted = e != nullptr && kvEntry_Operation(e) == kvOp_Delete;
          kvEntry_Destroy(e);
          if (deleted) break;
        }
        uint64_t r2 = 0;
        check(kvStore_Create(&r2, kv, "raw-handoff", "y", 1), "raw take");
        raw_granted = Clock::now();
        auto child = swarm::ChildProcess::start({"/bin/true"}, {});
        raw_spawned = Clock::now();
        child->wait();
        kvWatcher_Destroy(w);
        check(kvStore_Delete(kv, "raw-handoff"), "raw clean");
      });
      while (!watching) std::this_thread::sleep_for(1ms);
      std::this_thread::sleep_for(20ms);
      auto r0 = Clock::now();
      check(kvStore_Delete(kv, "raw-handoff"), "raw release");
      raw_waiter.join();
      base_ms.push_back(std::chrono::duration<double, std::milli>(raw_spawned - r0).count());
      floor_ms.push_back(std::chrono::duration<double, std::milli>(raw_granted - r0).count());
    }
    kvStore_Destroy(kv);
    Row row{.name = "lock hand-off (release to CMD started)", .swarm = stats_of(swarm_ms),
            .baseline = stats_of(base_ms), .target = "<= 1.3x"};
    finish(row, 1.3);
    raw_handoff_floor = stats_of(floor_ms).p50;
    char note[160];
    std::snprintf(note, sizeof note, "%d hand-offs each; baseline: raw watch, create, the same spawn (raw hand-off "
                  "alone: %.3f ms)", n, raw_handoff_floor);
    row.note = note;
    rows.push_back(row);
  }

  // 10. 32 waiters on one lock, each holding it 10 ms: granted in arrival
  // order, all done within 1.3 x 32 x (hold + raw hand-off).
  if (want({10})) {
    auto store = swarm::LeaseStore::open(nats);
    constexpr int kWaiters = 32;
    constexpr double kHoldMs = 10;
    swarm::LeaseHolder who;
    who.holder = "bench";
    who.host = "bench-host";
    who.host_id = "bench-id";
    who.pid = getpid();
    auto held = store.acquire("queue32", who, 30s);
    std::mutex mu;
    std::vector<int> order;
    std::vector<std::thread> waiters;
    for (int i = 0; i < kWaiters; ++i) {
      waiters.emplace_back([&, i] {
        auto own = swarm::LeaseStore::open(swarm::connect_nats({.urls = {server.url()}}));
        swarm::Mutex m(own, "queue32", who, 30s);
        auto lease = m.lock(std::nullopt);
        {
          std::lock_guard lock(mu);
          order.push_back(i);
        }
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(kHoldMs));
        own.release(lease);
      });
      while (store.waiting("queue32")["queue32"] < i + 1) std::this_thread::sleep_for(1ms);
    }
    auto t0 = Clock::now();
    store.release(held);
    for (auto& w : waiters) w.join();
    double total = ms_since(t0);
    bool in_order = true;
    for (int i = 0; i < kWaiters; ++i) in_order = in_order && order[static_cast<std::size_t>(i)] == i;
    double limit = 1.3 * kWaiters * (kHoldMs + raw_handoff_floor);
    Row row{.name = "32 waiters, each holding 10 ms", .swarm = stats_of({total}), .has_baseline = false};
    char target[96];
    std::snprintf(target, sizeof target, "in order, <= %.0f ms", limit);
    row.target = target;
    row.met = in_order && total <= limit;
    row.note = std::string("grants in arrival order: ") + (in_order ? "yes" : "NO") +
               "; limit = 1.3 x 32 x (10 ms + the raw hand-off of row 9)";
    rows.push_back(row);
  }

  // 11. Elect failover: the leader SIGKILLed, the next candidate's command
  // started, with a TTL of 2 s: within TTL + TTL/3.
  if (want({11})) {
    int n = quick ? 2 : 5;
    std::vector<double> failover_ms;
    const std::vector<std::string> env = {ws_env, "SWARM_HOST=bench-host", "SWARM_HOST_ID=bench-id"};
    for (int i = 0; i < n; ++i) {
      auto mark = dir.path() / ("elected-" + std::to_string(i));
      auto candidate = [&](const std::string& who) {
        testing::Command c;
        c.args = {swarm_bin, "elect", "failover-" + std::to_string(i), "--ttl", "2s", "--", "/bin/sh", "-c",
                  "echo " + who + " >> " + mark.string() + "; exec sleep 30"};
        c.env = {{"SWARM_WORKSPACE", up.workspace.root().string()}};
        return testing::Process(c);
      };
      testing::Process leader = candidate("a");
      while (testing::read_file(mark) != "a\n") std::this_thread::sleep_for(5ms);
      testing::Process follower = candidate("b");
      std::this_thread::sleep_for(300ms);  // in line
      auto t0 = Clock::now();
      leader.signal(SIGKILL);
      while (testing::read_file(mark) != "a\nb\n") std::this_thread::sleep_for(2ms);
      failover_ms.push_back(ms_since(t0));
      follower.signal(SIGTERM);
      follower.wait();
      leader.wait();
    }
    Row row{.name = "elect failover after SIGKILL (TTL 2s)", .swarm = stats_of(failover_ms), .has_baseline = false,
            .target = "<= 2667 ms (TTL + TTL/3)"};
    row.met = row.swarm.max <= 2667;
    row.note = std::to_string(n) + " failovers: from the leader's SIGKILL to the next candidate's command";
    rows.push_back(row);
  }

  // A workspace in `root` on the bench's server, and the environment its
  // swarm processes run with (this host as the bench's).
  auto workspace_at = [&](const std::filesystem::path& root, const std::string& bucket) {
    std::filesystem::create_directories(root);
    auto made = swarm::up({.root = root, .nats_url = server.url(), .bucket = bucket, .connection = {}});
    std::vector<std::string> env = {"SWARM_WORKSPACE=" + root.string(), "SWARM_HOST=bench-host",
                                    "SWARM_HOST_ID=bench-id"};
    return std::make_pair(std::move(made), std::move(env));
  };

  // 12. join of a slot in a repository of 20,200 files (about 88 MB) on
  // tmpfs, against `git clone` of the hub; and at 100,000 files (reported).
  if (want({12})) {
    for (int files : quick ? std::vector<int>{20200} : std::vector<int>{20200, 100000}) {
      ShmDir shm;
      const auto root = shm.path / "ws";
      write_tree(root, files, 4400);
      if (run_process({"/bin/sh", "-c", "git init -q -b main && git add -A && git -c user.name=b -c user.email=b@b "
                                        "commit -q -m tree"},
                      {}, root.string())
              .exit != 0)
        fail("making the big repository failed");
      const auto [big, env] = workspace_at(root, "bench-big");
      const int n = files > 20200 ? 3 : quick ? 4 : 10;
      std::vector<double> swarm_ms, base_ms;
      for (int i = 0; i < n; ++i) {
        const std::string slot = "big" + std::to_string(i);
        auto s = run_process({swarm_bin, "join", "--slot", slot, "--task", "T-" + slot}, env);
        if (s.exit != 0) fail("swarm join of the big repository failed");
        swarm_ms.push_back(s.ms);
        run_process({swarm_bin, "close", "--slot", slot, "--result", "fail"}, env);
        const auto clone = shm.path / ("clone" + std::to_string(i));
        auto b = run_process({"/usr/bin/git", "clone", "-q", big.workspace.hub_dir().string(), clone.string()}, {});
        if (b.exit != 0) fail("git clone of the big hub failed");
        base_ms.push_back(b.ms);
        std::filesystem::remove_all(clone);
      }
      Row row{.name = "join, " + std::to_string(files) + " files (tmpfs)", .swarm = stats_of(swarm_ms),
              .baseline = stats_of(base_ms), .target = files > 20200 ? "report" : "<= 1.2x git clone"};
      finish(row, files > 20200 ? 1e9 : 1.2);
      row.note = std::to_string(n) + " joins, each a new slot; baseline: git clone -q of the hub; whole processes";
      rows.push_back(row);
    }
  }

  // 13. close --result fail of a slot with 10,000 untracked files (tmpfs),
  // against `cp -a` of the same files and `rm -rf` of them; and 100,000 (reported).
  if (want({13})) {
    for (int files : quick ? std::vector<int>{10000} : std::vector<int>{10000, 100000}) {
      ShmDir shm;
      const auto root = shm.path / "ws";
      const auto [small, env] = workspace_at(root, "bench-close");
      const int n = files > 10000 ? 3 : quick ? 4 : 10;
      std::vector<double> swarm_ms, base_ms;
      for (int i = 0; i < n; ++i) {
        if (run_process({swarm_bin, "join", "--slot", "c", "--task", "T-c"}, env).exit != 0) fail("join failed");
        write_tree(small.workspace.worktree("c") / "untracked", files, 500);
        auto s = run_process({swarm_bin, "close", "--slot", "c", "--result", "fail"}, env);
        if (s.exit != 0) fail("swarm close failed");
        swarm_ms.push_back(s.ms);
        std::filesystem::remove_all(small.workspace.recovery_dir());
        const auto from = shm.path / "from";
        write_tree(from, files, 500);
        auto b = run_process({"/bin/sh", "-c", "cp -a from kept && rm -rf from"}, {}, shm.path.string());
        if (b.exit != 0) fail("cp -a + rm -rf failed");
        base_ms.push_back(b.ms);
        std::filesystem::remove_all(shm.path / "kept");
      }
      Row row{.name = "close --result fail, " + std::to_string(files) + " files", .swarm = stats_of(swarm_ms),
              .baseline = stats_of(base_ms), .target = files > 10000 ? "report" : "<= 1.0x cp -a + rm -rf"};
      finish(row, files > 10000 ? 1e9 : 1.0);
      row.note = std::to_string(n) + " closes of untracked files (tmpfs); baseline: sh -c 'cp -a from kept && rm -rf "
                 "from' on the same number of files";
      rows.push_back(row);
    }
  }

  // 14. `swarm status` and `swarm --json status` at 10,000 sessions, whole
  // processes, against a nats.c process that watches the whole bucket.
  if (want({14})) {
    const int n = quick ? 5 : 15;
    for (const char* json : {"", "--json"}) {
      std::vector<double> swarm_ms, base_ms;
      std::vector<std::string> args = {swarm_bin, "status", "--bucket", "bench-list-10000"};
      if (*json) args.push_back(json);
      for (int i = 0; i < n + 2; ++i) {  // the first two of each warm the server's caches up
        auto s = run_process(args, {ws_env});
        auto b = run_process({minimal_get, server.url(), "bench-list-10000", "--all"}, {});
        if (s.exit != 0 || b.exit != 0) fail("status at 10,000 sessions failed");
        if (i < 2) continue;
        swarm_ms.push_back(s.ms);
        base_ms.push_back(b.ms);
      }
      Row row{.name = std::string("swarm ") + (*json ? "--json " : "") + "status (10,000 sessions)",
              .swarm = stats_of(swarm_ms), .baseline = stats_of(base_ms), .target = "<= 1.3x"};
      finish(row, 1.3);
      row.note = std::to_string(n) + " runs each; baseline: a nats.c process watching the whole bucket (minimal_get --all)";
      rows.push_back(row);
    }
  }

  // 15. `swarm status`, `--json status` and `doctor` at 100,000 sessions: time and peak memory.
  if (want({15}) && !quick) {
    for (const std::vector<std::string>& verb :
         {std::vector<std::string>{"status"}, std::vector<std::string>{"--json", "status"},
          std::vector<std::string>{"doctor"}}) {
      std::vector<std::string> args = {swarm_bin};
      args.insert(args.end(), verb.begin(), verb.end());
      args.insert(args.end(), {"--bucket", "bench-list-100000", "--timeout", "30s"});
      std::vector<double> ms, rss_mb;
      for (int i = 0; i < 3; ++i) {
        auto s = run_process(args, {ws_env});
        if (s.exit != 0 && !(verb[0] == "doctor" && s.exit == 8)) fail("a verb at 100,000 sessions failed");
        ms.push_back(s.ms);
        rss_mb.push_back(static_cast<double>(peak_rss_kb(args, {ws_env}, 8)) / 1024.0);  // doctor: 8, problems
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
      rows.push_back(row);
    }
  }

  // 16. A long run of commits to a local hub (tmpfs): the commits around the
  // last one against those around the 10th, and the hub's packs at the end.
  if (want({16})) {
    ShmDir shm;
    const auto root = shm.path / "ws";
    const auto [ws16, env] = workspace_at(root, "bench-commits");
    if (run_process({swarm_bin, "join", "--slot", "long", "--task", "T-long"}, env).exit != 0) fail("join failed");
    const int n = quick ? 200 : 1000;
    std::vector<double> all;
    for (int i = 0; i < n; ++i) {
      testing::write_file(ws16.workspace.worktree("long") / ("f" + std::to_string(i % 50) + ".txt"),
                          "change " + std::to_string(i) + "\n");
      auto s = run_process({swarm_bin, "commit", "--slot", "long", "-m", "change " + std::to_string(i)}, env);
      if (s.exit != 0) fail("commit failed");
      all.push_back(s.ms);
    }
    std::this_thread::sleep_for(2s);  // a repack started by the last commits
    int packs = 0;
    for (const auto& e : std::filesystem::directory_iterator(ws16.workspace.hub_dir() / "objects" / "pack"))
      packs += e.path().extension() == ".pack" ? 1 : 0;
    std::vector<double> early(all.begin(), all.begin() + 20), late(all.end() - 20, all.end());
    Row row{.name = "commit #" + std::to_string(n) + " vs #10", .swarm = stats_of(late), .baseline = stats_of(early),
            .target = "<= 1.1x, <= 50 packs"};
    finish(row, 1.1);
    row.met = row.met && packs <= 50;
    row.note = std::to_string(n) + " commits to one local hub: the last 20 against commits 1-20; hub packs at the end: " +
               std::to_string(packs);
    rows.push_back(row);
  }

  // 17. The queue at scale: N `swarm lock` processes (30, then 100), each in a
  // loop of `swarm lock Q -- sleep 0.02`, for a window after a warm-up;
  // grants per second against the floor 1 / (CMD + the raw hand-off of row
  // 9), and the longest wait against what a place at the end of the line explains.
  if (want({17})) {
    if (raw_handoff_floor <= 0) fail("case 17 needs case 9's raw hand-off: run it with --only 9,17");
    constexpr double kCmdMs = 20;
    const double floor_per_s = 1000.0 / (kCmdMs + raw_handoff_floor);
    for (int contenders : {30, 100}) {
      const auto warm = std::chrono::seconds(3);
      const auto window = quick ? std::chrono::seconds(6) : std::chrono::seconds(15);
      const std::string lease = "contend" + std::to_string(contenders);
      std::atomic<int> granted{0}, failed{0};
      std::mutex waits_mu;
      std::vector<double> waits;
      const auto start = Clock::now();
      const auto measure_from = start + warm, end = measure_from + window;
      std::vector<std::thread> loops;
      for (int i = 0; i < contenders; ++i)
        loops.emplace_back([&] {
          while (Clock::now() < end) {
            const auto t0 = Clock::now();
            auto r = run_process({swarm_bin, "lock", lease, "--ttl", "15s", "--", "/bin/sleep", "0.02"}, {ws_env});
            const auto t1 = Clock::now();
            if (r.exit != 0) {
              ++failed;
              continue;
            }
            if (t1 < measure_from || t1 > end) continue;
            ++granted;
            std::lock_guard lock(waits_mu);
            waits.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count() - kCmdMs);
          }
        });
      for (auto& t : loops) t.join();
      const double rate = granted / std::chrono::duration<double>(window).count();
      const double share = rate / floor_per_s;
      const double target = contenders <= 30 ? 0.8 : 0.6;
      // A waiter that joins the end of the line waits for everyone ahead: at
      // the floor's pace, (contenders - 1) periods; twice that is the bound.
      const double explained = 2.0 * (contenders - 1) * (kCmdMs + raw_handoff_floor) / share;
      Stats w = stats_of(waits);
      Row row{.name = std::to_string(contenders) + " CLI contenders, 20 ms CMD", .unit = "/s", .has_baseline = false};
      row.swarm = {rate, rate, rate, static_cast<std::size_t>(granted.load())};
      char text[96];
      std::snprintf(text, sizeof text, ">= %.0f%% of %.1f/s", target * 100, floor_per_s);
      row.target = text;
      row.met = share >= target && failed == 0 && w.max <= explained;
      char note[256];
      std::snprintf(note, sizeof note,
                    "%.0f%% of the floor 1/(20 ms + %.2f ms raw hand-off); waits p50 %.0f ms, max %.0f ms (bound %.0f "
                    "ms); %d runs failed",
                    share * 100, raw_handoff_floor, w.p50, w.max, explained, failed.load());
      row.note = note;
      rows.push_back(row);
    }
  }

  // 18. A CAS write on a 3-node cluster (a session renewal) with the guard of
  // adr/0014, which nats-server before 2.10 needs, against the same write
  // without it (2.10 and later check a clustered CAS as they apply it).
  if (want({18})) {
    testing::NatsCluster cluster;
    auto c = swarm::connect_nats({.urls = cluster.url_list(), .request_timeout = 20s});
    std::optional<kv::Bucket> b;
    for (auto until = Clock::now() + 40s; !b && Clock::now() < until;) {
      try {
        b = kv::Bucket::ensure(c, {.name = "bench-cas", .ttl = 300s, .replicas = 3});
      } catch (const kv::Error&) {
        std::this_thread::sleep_for(500ms);  // a fresh cluster elects its JetStream leader first
      }
    }
    if (!b) fail("case 18: the cluster never made the bucket");
    std::uint64_t revision = b->create("renew", session_json("renew", 0));
    int n = quick ? 40 : 200;
    std::vector<double> guarded, bare;
    for (int i = 0; i < n; ++i) {
      for (const char* mode : {"always", "never"}) {
        setenv("SWARM_CAS_GUARD", mode, 1);
        auto t0 = Clock::now();
        revision = b->update("renew", session_json("renew", i), revision);
        (std::string(mode) == "always" ? guarded : bare).push_back(ms_since(t0));
      }
    }
    unsetenv("SWARM_CAS_GUARD");
    Row row{.name = "cluster CAS write, 2.9 guard vs none", .swarm = stats_of(guarded), .baseline = stats_of(bare),
            .target = "info"};
    finish(row, 100);
    row.note = "3-node cluster of nats-server " + c.server_version() +
               ": the guard (one stream-info round trip more) is used only before 2.10";
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
  std::printf("(for rows without a baseline the second column is the max, not p99)\n");
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
