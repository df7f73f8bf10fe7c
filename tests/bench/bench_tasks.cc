// The task queue at its scale: `task list --ready` over 10,000 tasks against
// a raw listing of the bucket, `join --next` among them against `join --task`
// of a known id, and 32 claimers at once settling. Whole processes.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include "bench/bench_cases.h"
#include "kv/bucket.h"
#include "kv/stream.h"
#include "support/process.h"
#include "swarm/tasks/task.h"

namespace bench {

namespace {

constexpr int kTasks = 10000;
constexpr int kReady = 100;

std::string two_digits(int n) { return (n < 10 ? "0" : "") + std::to_string(n); }

// A record as `task add` writes it, created `at` ms after a fixed start.
std::string task_record(const std::string& id, const std::string& state, const std::string& after, int at,
                        const std::string& label = "bench") {
  const int s = at / 1000, ms = at % 1000;
  char created[40];
  std::snprintf(created, sizeof created, "2026-11-01T%s:%s:%s.%03dZ", two_digits(s / 3600 % 24).c_str(),
                two_digits(s / 60 % 60).c_str(), two_digits(s % 60).c_str(), ms);
  return std::string(R"({"schema":"swarm.task.v1","id":")") + id + R"(","title":"task )" + id +
         R"( of the benchmark","priority":2,"labels":[")" + label + R"("],"after":[)" + (after.empty() ? "" : "\"" + after + "\"") +
         R"(],"state":")" + state + R"(","attempts":0,"max_attempts":3,"created_at":")" + created +
         R"(","created_by":"bench","updated_at":")" + created + R"("})";
}

// Puts `value` under `key` of the workspace's task bucket (raw nats.c).
void put(Bench& b, const std::string& key, const std::string& value) {
  kvStore* kv = b.raw.bucket(b.up.config.task_bucket.c_str());
  uint64_t rev = 0;
  check(kvStore_Put(&rev, kv, key.c_str(), value.data(), static_cast<int>(value.size())), "raw put of a task");
  kvStore_Destroy(kv);
}

// The workspace's queue: 10,000 tasks, of which 100 ready (open, after
// nothing), 4,950 completed and 4,950 waiting for a task still open.
void fill_queue(Bench& b) {
  auto bucket = kv::Bucket::open(b.nats, b.up.config.task_bucket);
  if (bucket.get("B-0")) return;
  put(b, "B-gate", task_record("B-gate", "cancelled", "", 0));
  for (int i = 0; i < kTasks; ++i) {
    const std::string id = "B-" + std::to_string(i);
    const bool ready = i % (kTasks / kReady) == 0;
    const std::string state = ready ? "open" : i % 2 == 0 ? "completed" : "open";
    put(b, id, task_record(id, state, ready || state == "completed" ? "" : "B-gate", i));
  }
}

// `join --next` against `join --task` of a known ready id, `n` samples
// after two untimed, each slot closed (fork: its task open again) between
// samples, `before` run untimed before each.
void time_join_next(Bench& b, int n, const std::string& prefix, const std::function<void()>& before,
                    std::vector<double>& swarm_ms, std::vector<double>& base_ms) {
  for (int i = 0; i < n + 2; ++i) {
    before();
    const std::string next_slot = prefix + std::to_string(i), task_slot = prefix + "known-" + std::to_string(i);
    auto s = run_process({b.swarm_bin, "join", "--slot", next_slot, "--next"}, {b.ws_env});
    auto base = run_process({b.swarm_bin, "join", "--slot", task_slot, "--task", "B-" + std::to_string(kTasks / kReady)},
                            {b.ws_env});
    if (s.exit != 0 || base.exit != 0) fail("join --next (" + prefix + ") or join --task among 10,000 tasks failed");
    for (const auto& slot : {next_slot, task_slot})
      if (run_process({b.swarm_bin, "close", "--slot", slot, "--result", "fork"}, {b.ws_env}).exit != 0)
        fail("close --result fork failed");
    if (i < 2) continue;
    swarm_ms.push_back(s.ms);
    base_ms.push_back(base.ms);
  }
}

}  // namespace

// 30. `swarm task list --ready` over 10,000 tasks (100 ready), against a
// nats.c process that reads the whole bucket.
void task_list_ready(Bench& b) {
  fill_queue(b);
  const int n = b.quick ? 5 : 15;
  for (const char* json : {"", "--json"}) {
    std::vector<double> swarm_ms, base_ms;
    std::vector<std::string> args = {b.swarm_bin, "task", "list", "--ready"};
    if (*json) args.push_back(json);
    for (int i = 0; i < n + 2; ++i) {
      auto s = run_process(args, {b.ws_env});
      auto base = run_process({b.minimal_get, b.server.url(), b.up.config.task_bucket, "--all"}, {});
      if (s.exit != 0 || base.exit != 0) fail("task list --ready at 10,000 tasks failed");
      if (i < 2) continue;
      swarm_ms.push_back(s.ms);
      base_ms.push_back(base.ms);
    }
    Row row{.name = std::string("swarm task list --ready ") + (*json ? "--json " : "") + "(10,000 tasks)",
            .swarm = stats_of(swarm_ms), .baseline = stats_of(base_ms), .target = "<= 1.3x"};
    finish(row, 1.3);
    row.note = std::to_string(n) + " runs each; baseline: a nats.c process reading the whole bucket (minimal_get --all)";
    b.rows.push_back(row);
  }
}

// 31. `swarm join --next` among 10,000 tasks (100 ready) against `join
// --task` of a known ready id; each slot closed (fork: its task open again)
// between samples, untimed.
void join_next_among_many(Bench& b) {
  fill_queue(b);
  const int n = b.quick ? 8 : 30;
  std::vector<double> swarm_ms, base_ms;
  time_join_next(b, n, "next-", [] {}, swarm_ms, base_ms);
  Row row{.name = "swarm join --next (10,000 tasks, 100 ready)", .swarm = stats_of(swarm_ms),
          .baseline = stats_of(base_ms), .target = "<= 1.5x"};
  finish(row, 1.5);
  row.note = std::to_string(n) + " joins each; baseline: join --task of a known ready id";
  b.rows.push_back(row);
}

// 40. `swarm join --next` among the same 10,000 tasks with every
// `_ready.*`/`_working.*` hint deleted before each (as a client deleting
// them in a loop would leave it: adr/0051), against `join --task` of a known
// id: the whole listing's price.
void join_next_without_hints(Bench& b) {
  fill_queue(b);
  const int n = b.quick ? 8 : 30;
  const std::string bucket = b.up.config.task_bucket;
  const kv::Stream stream = kv::Stream::bind(b.nats, "KV_" + bucket);
  std::vector<double> swarm_ms, base_ms;
  time_join_next(
      b, n, "bare-",
      [&] {
        for (const char* hints : {"._ready.>", "._working.>"}) stream.purge("$KV." + bucket + hints);
      },
      swarm_ms, base_ms);
  Row row{.name = "swarm join --next, every hint deleted (10,000 tasks)", .swarm = stats_of(swarm_ms),
          .baseline = stats_of(base_ms), .target = "<= 3x"};
  finish(row, 3.0);
  row.note = std::to_string(n) + " joins each, the hints purged before each; baseline: join --task of a known ready id";
  b.rows.push_back(row);
}

// 32. 32 `join --next` processes at once among 20 ready tasks (of the 10,000):
// until the last has its answer.
void claimers_settle(Bench& b) {
  fill_queue(b);
  const int rounds = b.quick ? 2 : 5;
  std::vector<double> settle_ms;
  const std::string env_name = b.ws_env.substr(0, b.ws_env.find('=')), env_value = b.ws_env.substr(b.ws_env.find('=') + 1);
  for (int r = 0; r < rounds; ++r) {
    // Added as swarm adds them (an import: each in the ready index).
    std::vector<std::string> ids;
    const auto file = b.dir.path() / ("round-" + std::to_string(r) + ".jsonl");
    {
      std::ofstream out(file);
      for (int i = 0; i < 20; ++i) {
        ids.push_back("C" + std::to_string(r) + "-" + std::to_string(i));
        out << task_record(ids.back(), "open", "", i, "round-" + std::to_string(r)) << "\n";
      }
    }
    if (run_process({b.swarm_bin, "task", "import", file.string()}, {b.ws_env}).exit != 0) fail("task import failed");
    std::vector<std::unique_ptr<testing::Process>> claimers;
    const auto start = Clock::now();
    for (int i = 0; i < 32; ++i)
      claimers.push_back(std::make_unique<testing::Process>(testing::Command{
          {b.swarm_bin, "join", "--slot", "c" + std::to_string(r) + "-" + std::to_string(i), "--next", "--label",
           "round-" + std::to_string(r)},
          {{env_name, env_value}},
          {}}));
    int won = 0;
    for (auto& c : claimers) won += c->wait().exit == 0 ? 1 : 0;
    settle_ms.push_back(ms_since(start));
    if (won != 20) fail("32 claimers of 20 tasks: " + std::to_string(won) + " won (20 expected, each once)");
    for (int i = 0; i < 32; ++i)
      run_process({b.swarm_bin, "close", "--slot", "c" + std::to_string(r) + "-" + std::to_string(i), "--result", "fail",
                   "--no-artifact"},
                  {b.ws_env});
    for (const auto& id : ids) put(b, id, task_record(id, "cancelled", "", 0));
  }
  Row row{.name = "32 join --next at once, 20 ready (settled)", .swarm = stats_of(settle_ms), .has_baseline = false,
          .target = "< 1000 ms"};
  row.met = row.swarm.max < 1000;
  row.note = std::to_string(rounds) + " rounds; each: 32 processes started together until the last exits; 20 won, "
             "12 exit 4 after a whole listing";
  b.rows.push_back(row);
}

}  // namespace bench
