// The benchmark's cases, numbered as `--only` takes them, and the run they
// share: one nats-server, one workspace, the rows of the table so far. Each
// case appends its rows; swarm_bench.cc runs them in number order.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_raw.h"
#include "bench/bench_support.h"
#include "support/nats_server.h"
#include "support/temp_dir.h"
#include "swarm/workspace/bootstrap.h"

namespace bench {

// What one run of the benchmark shares between its cases.
struct Bench {
  bool quick = false;
  std::string swarm_bin;
  std::string minimal_get;
  testing::NatsServer& server;
  testing::TempDir& dir;
  swarm::UpResult& up;
  std::string ws_env;  // SWARM_WORKSPACE=... of `up`
  kv::Connection& nats;
  Raw& raw;
  std::vector<Row> rows;
  double raw_handoff_floor = 0;  // case 9's raw hand-off without the spawn, for 10 and 17
};

// bench_sessions.cc
void session_renew(Bench& b);         // 1
void list_sessions(Bench& b);         // 2 (and the buckets 6, 14 and 15 read)
void concurrent_joins(Bench& b);      // 5
void cluster_cas_guard(Bench& b);     // 18

// bench_status.cc
void status_process(Bench& b);        // 3
void status_peak_rss(Bench& b);       // 6
void status_at_10000(Bench& b);       // 14
void verbs_at_100000(Bench& b);       // 15

// bench_files.cc
void commit_small_file(Bench& b);     // 4
void join_big_repository(Bench& b);   // 12
void close_untracked_files(Bench& b); // 13
void long_commit_run(Bench& b);       // 16

// bench_leases.cc
void lease_renewals(Bench& b);        // 7 and 8
void lock_handoff(Bench& b);          // 9 (and the raw hand-off 10 and 17 use)
void lock_queue(Bench& b);            // 10
void elect_failover(Bench& b);        // 11
void cli_contenders(Bench& b);        // 17
void permit_handoff(Bench& b);        // 25
void semaphore_contenders(Bench& b);  // 26
void durable_grants(Bench& b);        // 27
void expiry_seen_elsewhere(Bench& b); // 41

// bench_sessions.cc (the rest above)
void run_agent_life(Bench& b);        // 28
void run_keeps_its_session(Bench& b); // 29

// bench_journal.cc
void log_long_history(Bench& b);      // 19

// bench_land.cc
void land_big_repository(Bench& b);   // 20
void land_ready_queue(Bench& b);      // 21
void land_batches(Bench& b);          // 23
void foresee_conflicts(Bench& b);     // 24

// bench_serve.cc
void serve_ten_thousand(Bench& b);    // 22

// bench_tasks.cc
void task_list_ready(Bench& b);       // 30
void join_next_among_many(Bench& b);  // 31
void claimers_settle(Bench& b);       // 32
void join_next_without_hints(Bench& b);  // 40

// bench_messages.cc
void send_message(Bench& b);          // 33
void inbox_of_many(Bench& b);         // 34
void ask_round_trip(Bench& b);        // 35
void blob_put(Bench& b);              // 36

// bench_holds.cc
void hold_one_pattern(Bench& b);      // 37
void commit_among_holds(Bench& b);    // 38

// bench_mcp.cc
void mcp_tool_call(Bench& b);         // 39

// bench_socket.cc
void socket_verbs(Bench& b);          // 42

}  // namespace bench
