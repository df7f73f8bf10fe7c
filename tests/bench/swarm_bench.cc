// swarm against the raw nats.c floor and the git CLI, side by side, in one run.
// Starts its own nats-server; alternates swarm and baseline samples so both
// see the same machine load; prints a table and one JSON document.
// The cases are in bench_*.cc (bench_cases.h numbers them); this is the runner.
//
// Usage: swarm_bench [--quick] [--json FILE]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_cases.h"
#include "bench/bench_report.h"
#include "support/git_module.h"
#include "swarm/slots/session_store.h"

using namespace bench;

namespace {

struct Options {
  bool quick = false;
  std::string json_file;
  std::vector<int> only;  // case numbers; empty: all
  int serve = 0;          // --serve N: a workspace with N sessions to profile by hand
};

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick") o.quick = true;
    else if (arg == "--serve" && i + 1 < argc) o.serve = std::atoi(argv[++i]);
    else if (arg == "--json" && i + 1 < argc) o.json_file = argv[++i];
    else if (arg == "--only" && i + 1 < argc) {
      std::stringstream list(argv[++i]);
      for (std::string n; std::getline(list, n, ',');) {
        char* end = nullptr;
        long v = std::strtol(n.c_str(), &end, 10);
        if (n.empty() || *end != '\0' || v < 1 || v > 42) fail("--only: not a case number (1 to 42): " + n);
        o.only.push_back(static_cast<int>(v));
      }
    } else
      fail("usage: swarm_bench [--quick] [--json FILE] [--only N[,N...]] | --serve N");
  }
  return o;
}

// A case and the numbers that want it run: some make what later cases read
// (case 2 the buckets of 6, 14 and 15; case 9 the raw hand-off of 10 and 17).
struct Case {
  std::vector<int> numbers;
  void (*run)(Bench&);
};

const std::vector<Case>& all_cases() {
  static const std::vector<Case> cases = {
      {{1}, session_renew},         {{2, 6, 14, 15}, list_sessions}, {{3}, status_process},
      {{4}, commit_small_file},     {{5}, concurrent_joins},         {{6}, status_peak_rss},
      {{7, 8}, lease_renewals},     {{9, 10, 17}, lock_handoff},     {{10}, lock_queue},
      {{11}, elect_failover},       {{12}, join_big_repository},     {{13}, close_untracked_files},
      {{14}, status_at_10000},      {{15}, verbs_at_100000},         {{16}, long_commit_run},
      {{17}, cli_contenders},       {{18}, cluster_cas_guard},       {{19}, log_long_history},
      {{20}, land_big_repository},  {{21}, land_ready_queue},      {{22}, serve_ten_thousand},
      {{23}, land_batches},         {{24}, foresee_conflicts},       {{25}, permit_handoff},
      {{26}, semaphore_contenders}, {{27}, durable_grants},    {{28}, run_agent_life},
      {{29}, run_keeps_its_session},  {{30}, task_list_ready},        {{31}, join_next_among_many},
      {{32}, claimers_settle},       {{33}, send_message},            {{34}, inbox_of_many},
      {{35}, ask_round_trip},        {{36}, blob_put},                {{37}, hold_one_pattern},
      {{38}, commit_among_holds},    {{39}, mcp_tool_call},          {{40}, join_next_without_hints},
      {{41}, expiry_seen_elsewhere},  {{42}, socket_verbs},
  };
  return cases;
}

bool wanted(const Case& c, const std::vector<int>& only) {
  if (only.empty()) return true;
  for (int n : c.numbers)
    if (std::find(only.begin(), only.end(), n) != only.end()) return true;
  return false;
}

// A workspace with `sessions` sessions in a bucket of their own, until Enter.
int serve_sessions(Bench& b, int sessions) {
  const std::string bucket = "bench-list-" + std::to_string(sessions);
  swarm::SessionStore::ensure(b.nats, bucket, std::chrono::hours(1), 1);
  fill(b.raw, bucket, sessions);
  std::printf("export %s; swarm status --bucket %s   # Enter ends it\n", b.ws_env.c_str(), bucket.c_str());
  std::fflush(stdout);
  std::getchar();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  testing::use_built_git_module();
  const Options options = parse_options(argc, argv);
  testing::NatsServer server;
  testing::TempDir dir("swarm-bench");
  auto up = swarm::up({.root = dir.path() / "ws", .nats_url = server.url(), .connection = {}});
  auto nats = swarm::connect_nats({.urls = {server.url()}});
  Raw raw(server.url());
  Bench bench{.quick = options.quick, .swarm_bin = SWARM_BINARY, .minimal_get = MINIMAL_GET_BINARY,
              .server = server, .dir = dir, .up = up,
              .ws_env = "SWARM_WORKSPACE=" + up.workspace.root().string(), .nats = nats, .raw = raw};
  if (options.serve > 0) return serve_sessions(bench, options.serve);
  for (const Case& c : all_cases())
    if (wanted(c, options.only)) c.run(bench);

  print_table(bench.rows);
  const swarm::Json doc = json_document(bench.rows, server.url(), options.quick);
  std::printf("\n%s\n", doc.dump().c_str());
  if (!options.json_file.empty()) std::ofstream(options.json_file) << doc.dump_pretty() << "\n";
  bool all_met = std::all_of(bench.rows.begin(), bench.rows.end(), [](const Row& r) { return r.met; });
  return all_met ? 0 : 3;
}
