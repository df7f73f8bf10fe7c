// The servers, the workspace, the lock loops and the cuts of one partition
// run (partition_run.h).
#include "faults/partition_run.h"

#include <signal.h>
#include <stdlib.h>

#include <cstdio>
#include <fstream>
#include <thread>

#include "e2e/swarm_fixture.h"
#include "faults/partition_cluster.h"
#include "faults/partition_process.h"
#include "faults/partition_support.h"
#include "faults/partition_writer.h"

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace partition {

PartitionRun::PartitionRun(const Options& options, long run_number)
    : options_(options), names_(run_number), network_(names_), dir_(make_temp_dir()) {}

PartitionRun::~PartitionRun() {
  for (auto& pid : loopers_) stop_group(pid, SIGKILL, 1s);
  for (auto& pid : servers_) stop_group(pid, SIGKILL, 1s);
}

void PartitionRun::start_servers() {
  for (int node = 1; node <= kNodes; ++node) servers_.push_back(spawn(server_args(node), dir_ / log_name(node)));
  for (int node = 1; node <= kNodes; ++node) wait_until_listening(node);
}

void PartitionRun::up_workspace() {
  fs::create_directories(workspace());
  must({"git", "-C", workspace().string(), "init", "-q"});
  must({"git", "-C", workspace().string(), "-c", "user.name=partition", "-c", "user.email=p@p", "commit", "-q",
        "--allow-empty", "-m", "empty"});
  RunResult r;
  auto until = std::chrono::steady_clock::now() + 40s;
  do {
    // 2.9 is measured too: it needs saying so.
    r = run(swarm_command({"up", "--nats-url", names_.all_urls(), "--name", kWorkspaceName, "--replicas", "3",
                               "--accept-unsafe-server"},
                              "up"),
            60s);
    if (r.exit == 0) return;
    pause_for(500ms);
  } while (std::chrono::steady_clock::now() < until);
  throw SetupFailed("swarm up on the cluster failed (" + std::to_string(r.exit) + "): " + trimmed(r.err));
}

void PartitionRun::start_loopers() {
  write_file(mark_script(), mark_script_text());
  for (const char* side : {"root-a", "root-b"}) {
    auto c = swarm_command({}, side);
    loopers_.push_back(spawn({"bash", "-c", loop_text(side, "--workspace " + quoted(workspace().string()))},
                             dir_ / (std::string(side) + ".log"), c.env, workspace()));
  }
  for (int node = 1; node <= kNodes; ++node) {
    const std::string side = "n" + std::to_string(node);
    auto c = swarm_command({}, side);
    c.env["SWARM_WORKSPACE"] = "";  // nothing but its own node's URL
    loopers_.push_back(spawn({"ip", "netns", "exec", names_.ns(node), "bash", "-c",
                              loop_text(side, "--nats-url " + names_.url(node))},
                             dir_ / (side + ".log"), c.env, dir_));
  }
}

void PartitionRun::start_writers() {
  const fs::path self = fs::read_symlink("/proc/self/exe");
  const std::string stop = (dir_ / "stop").string();
  auto writer = [&](const std::string& side, const std::string& urls, const std::vector<std::string>& prefix) {
    std::vector<std::string> args = prefix;
    args.insert(args.end(), {self.string(), "writer", urls, "_acked." + side, (dir_ / ("acked-" + side)).string(), stop});
    loopers_.push_back(spawn(args, dir_ / ("writer-" + side + ".log")));
    writer_sides_.push_back(side);
  };
  writer("root", names_.all_urls(), {});
  for (int node = 1; node <= kNodes; ++node)
    writer("n" + std::to_string(node), names_.url(node), {"ip", "netns", "exec", names_.ns(node)});
}

int PartitionRun::target_of(int i, const char** what) const {
  const bool meta = options_.target == "meta" || (options_.target == "alternate" && i % 2 == 1);
  *what = meta ? "the metadata leader" : "the lease stream's leader";
  return meta ? meta_leader(names_) : lease_leader(names_);
}

void PartitionRun::run_cuts() {
  started_ = std::chrono::steady_clock::now();
  const auto one_cut = std::chrono::seconds(options_.cut_seconds + options_.heal_seconds);
  for (int i = 0; i < options_.cuts; ++i) {
    if (std::chrono::steady_clock::now() + one_cut > started_ + std::chrono::seconds(options_.max_seconds)) {
      notes_.push_back("stopped after " + std::to_string(i) + " cuts: --max-seconds " +
                       std::to_string(options_.max_seconds) + " reached");
      break;
    }
    const char* what = "";
    int node = target_of(i, &what);
    if (node == 0) {
      notes_.push_back("cut " + std::to_string(i + 1) + ": no leader (" + what + ") within 30 s; skipped");
      continue;
    }
    cut_once(node, what);
  }
}

long long PartitionRun::stop_loopers() {
  write_file(dir_ / "stop", "");
  auto until = std::chrono::steady_clock::now() + 60s;
  for (auto& pid : loopers_) {
    bool exited = false;
    while (!(exited = reaped(pid)) && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(50ms);
    if (exited) {
      kill(-pid, SIGKILL);  // whatever it left in its group
      pid = -1;
      continue;
    }
    notes_.push_back("looper " + std::to_string(pid) + " did not stop within 60 s of the stop file: SIGTERM");
    stop_group(pid, SIGTERM, 5s);
  }
  return wall_ns();
}

void PartitionRun::stop_servers() {
  for (auto& pid : servers_) stop_group(pid, SIGTERM, 10s);
}

Verdict PartitionRun::check(long long run_end_ns) const {
  Verdict v;
  v.runs = runs_from_marks(marks(), run_end_ns, v);
  const long long origin = v.runs.empty() ? 0 : v.runs.front().start_ns;
  check_tokens_grow(v, origin);
  check_overlaps(v, cuts_, origin);
  check_nothing_lost(v, names_);
  check_acked_writes(v);
  for (const auto& c : cuts_) v.cuts_of_meta += c.meta ? 1 : 0;
  v.notes.insert(v.notes.begin(), notes_.begin(), notes_.end());
  return v;
}

void PartitionRun::check_acked_writes(Verdict& v) const {
  for (const auto& side : writer_sides_) {
    const AckedWrites log = acked_writes(dir_ / ("acked-" + side));
    v.acked_writes += log.acked;
    if (log.regressions > 0) {
      v.lost_writes += log.regressions;
      v.notes.push_back("writer " + side + ": " + std::to_string(log.regressions) +
                        " rereads found less than it had been acknowledged");
    }
    if (log.acked == 0) continue;
    const auto value = lease_bucket_value(names_, "_acked." + side);
    const unsigned long long now = value ? std::strtoull(value->c_str(), nullptr, 10) : 0;
    if (!value || now < log.last) {
      const unsigned long long missing = log.last - now;
      v.lost_writes += static_cast<int>(missing);
      v.notes.push_back("writer " + side + ": acknowledged up to " + std::to_string(log.last) + ", the key holds " +
                        (value ? std::to_string(now) : "nothing readable") + " (" + std::to_string(missing) +
                        " acknowledged writes lost)");
    }
  }
}

fs::path PartitionRun::make_temp_dir() {
  std::string pattern = (fs::temp_directory_path() / "swarm-partition-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw SetupFailed("mkdtemp failed");
  return pattern;
}

std::vector<std::string> PartitionRun::server_args(int node) const {
  std::string routes;
  for (int other = 1; other <= kNodes; ++other)
    if (other != node) routes += (routes.empty() ? "" : ",") + ("nats://" + names_.ip(other) + ":6222");
  const std::string name = "n" + std::to_string(node);
  return {"ip", "netns", "exec", names_.ns(node), on_path("nats-server"), "-js", "-a", names_.ip(node), "-p", "4222",
          "-m", std::to_string(kMonitorPort),
          "-sd", (dir_ / name).string(), "--server_name", name, "--cluster_name", "swp", "--cluster",
          "nats://" + names_.ip(node) + ":6222", "--routes", routes};
}

void PartitionRun::wait_until_listening(int node) {
  auto until = std::chrono::steady_clock::now() + 15s;
  pid_t& pid = servers_[static_cast<std::size_t>(node - 1)];
  while (!accepts(names_.ip(node), 4222)) {
    const bool exited = reaped(pid);
    if (exited) pid = -1;  // else the destructor stops it
    if (exited || std::chrono::steady_clock::now() > until)
      throw SetupFailed("nats-server n" + std::to_string(node) + " did not listen on " + names_.ip(node) +
                        ":4222; see " + (dir_ / log_name(node)).string());
    pause_for(100ms);
  }
}

Command PartitionRun::swarm_command(const std::vector<std::string>& args, const std::string& host) const {
  Command c;
  c.args = {SWARM_BINARY};
  c.args.insert(c.args.end(), args.begin(), args.end());
  const fs::path home = dir_ / "home" / host;
  fs::create_directories(home);
  c.env = {{"HOME", home.string()},
           {"XDG_CONFIG_HOME", (home / "config").string()},
           {"SWARM_HOST", "part-" + host},
           {"SWARM_HOST_ID", names_.prefix + "-" + host},
           {"NATS_URL", ""},
           {"SWARM_WORKSPACE", workspace().string()}};
  c.cwd = workspace();
  return c;
}

std::string PartitionRun::mark_script_text() const {
  const std::string m = quoted(marks().string());
  return "side=$1\n"
         "echo \"start $SWARM_FENCING_TOKEN $(date +%s%N) $side $$\" >> " + m + "\n"
         "trap 'echo \"end $SWARM_FENCING_TOKEN $(date +%s%N) $side $$ term\" >> " + m + "; exit 143' TERM\n"
         "sleep 0.2 & wait $!\n"
         "echo \"end $SWARM_FENCING_TOKEN $(date +%s%N) $side $$ done\" >> " + m + "\n";
}

std::string PartitionRun::loop_text(const std::string& side, const std::string& connect_flags) const {
  return "while [ ! -e " + quoted((dir_ / "stop").string()) + " ]; do " + quoted(SWARM_BINARY) + " --timeout 10s " +
         connect_flags + " lock " + kLease + " --ttl " + quoted(options_.ttl) + " --wait 30s -- /bin/sh " +
         quoted(mark_script().string()) + " " + side + " || sleep 0.2; done";
}

void PartitionRun::cut_once(int node, const char* what) {
  CutWindow window{node, wall_ns(), 0, std::string(what) == "the metadata leader"};
  std::printf("  cut %zu: n%d (%s) cut off for %d s\n", cuts_.size() + 1, node, what, options_.cut_seconds);
  std::fflush(stdout);
  try {
    network_.cut(node);
    pause_for(std::chrono::seconds(options_.cut_seconds));
  } catch (...) {
    network_.heal(node);
    throw;
  }
  network_.heal(node);
  window.heal_ns = wall_ns();
  cuts_.push_back(window);
  // Beside the marks, for whoever reads a kept run's timeline.
  std::ofstream(dir_ / "cuts", std::ios::app) << "n" << node << " cut " << window.cut_ns << " healed "
                                               << window.heal_ns << "\n";
  pause_for(std::chrono::seconds(options_.heal_seconds));
}

}  // namespace partition
