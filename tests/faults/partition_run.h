// One partition run: the cluster started in its namespaces, a workspace on
// it, the `swarm lock` loops on both sides, the cuts of the lease stream's
// leader; whatever it started is stopped when it dies, also when it failed.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "faults/partition_checker.h"
#include "faults/partition_network.h"
#include "support/process.h"

namespace partition {

struct Options {
  // Cuts long enough for an election (a stream's leader is replaced within
  // seconds, the metadata leader's may take longer), healed long enough for
  // the cut-off node to catch up.
  int cuts = 5;
  int cut_seconds = 20;
  int heal_seconds = 15;
  std::string ttl = "3s";
  int max_seconds = 420;  // of cuts: stopping and checking take up to 3 minutes more
  // Which node each cut isolates: the lease stream's leader ("stream"), the
  // JetStream metadata leader ("meta"), or each in turn ("alternate").
  std::string target = "stream";
};

class PartitionRun {
 public:
  PartitionRun(const Options& options, long run_number);
  ~PartitionRun();
  PartitionRun(const PartitionRun&) = delete;
  PartitionRun& operator=(const PartitionRun&) = delete;

  const std::filesystem::path& dir() const { return dir_; }

  void start_servers();
  void up_workspace();
  void start_loopers();
  // The acknowledged-write counters, one per side (partition_writer.h).
  void start_writers();
  void run_cuts();
  // Loopers end their current lock and stop, writers stop; then the servers
  // stay up for the check.
  long long stop_loopers();
  void stop_servers();
  Verdict check(long long run_end_ns) const;

  const std::vector<CutWindow>& cuts() const { return cuts_; }
  std::chrono::steady_clock::time_point started() const { return started_; }

 private:
  static std::filesystem::path make_temp_dir();
  static std::string log_name(int node) { return "nats-n" + std::to_string(node) + ".log"; }
  std::filesystem::path workspace() const { return dir_ / "ws"; }
  std::filesystem::path marks() const { return dir_ / "marks"; }
  std::filesystem::path mark_script() const { return dir_ / "mark.sh"; }

  std::vector<std::string> server_args(int node) const;
  void wait_until_listening(int node);
  // `swarm ARGS` as a host of its own, with a home in the temp folder.
  testing::Command swarm_command(const std::vector<std::string>& args, const std::string& host) const;
  // The command run under the lease: start mark, 0.2 s of work, end mark (or
  // an end mark by SIGTERM when swarm stops it after losing the lease).
  std::string mark_script_text() const;
  // A lock loop until the stop file shows; a failed lock waits a little
  // before the next, so that a refused connection does not spin.
  std::string loop_text(const std::string& side, const std::string& connect_flags) const;
  void cut_once(int node, const char* what);
  // The node cut `i` isolates, or 0 when its leader is not found in time.
  int target_of(int i, const char** what) const;
  // Each writer's key holds at least the last count acknowledged.
  void check_acked_writes(Verdict& v) const;

  Options options_;
  Names names_;
  Network network_;  // before dir_: a network that cannot be built leaves no folder behind
  std::filesystem::path dir_;
  std::vector<pid_t> servers_;
  std::vector<pid_t> loopers_;  // and writers
  std::vector<std::string> writer_sides_;
  std::vector<CutWindow> cuts_;
  std::vector<std::string> notes_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace partition
