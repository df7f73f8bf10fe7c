// The partition test (scripts/partition.sh, as root): a 3-node nats-server
// cluster, one node per network namespace on a bridge of its own, and
// `swarm lock part` loops on both sides of a cut: two in the root namespace
// (which reaches every node) and one beside each node (which reaches only its
// node). Each cut isolates the node that leads the lease stream, then heals.
// Every command run under the lease writes a start and an end mark, with its
// fencing token, to one file; the checker then wants: tokens that only grow,
// no two holders at once unless the older one was cut off and fenced by a
// higher token, and no acknowledged grant lost by the stream.
//   partition_runner [--cuts N] [--cut-seconds S] [--heal-seconds S] [--ttl DUR] [--max-seconds T]
//                    [--target stream|meta|alternate]
// Beside the lock loops, a writer per side raises a counter by CAS and logs
// each acknowledgement; none may be missing at the end (partition_writer.h).
// $SWARM_PARTITION_RUN (default: the pid) names the run: namespaces swp<run%10000>n1..3,
// subnet 10.231.<run%250>.0/24. Exit 0 when all checks hold, 1 when one fails,
// 2 when the setup failed (the temporary folder with the logs is kept then, and
// always with $SWARM_PARTITION_KEEP set).
//
// This file is the runner: options, the run's stages, the summary. The run is
// partition_run.h, its network partition_network.h, the checker partition_checker.h.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "faults/partition_checker.h"
#include "faults/partition_run.h"
#include "faults/partition_support.h"
#include "faults/partition_writer.h"
#include "support/git_module.h"

using namespace partition;
namespace fs = std::filesystem;

namespace {

// A whole positive number, else the option is refused naming it.
int count_of(const std::string& option, const std::string& text) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 1 || value > 100000)
    throw SetupFailed(option + " " + text + ": not a whole number of at least 1");
  return static_cast<int>(value);
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    std::string arg = argv[i];
    // A lone last option is refused: it must never start a full run unasked.
    if (i + 1 >= argc) throw SetupFailed("option " + arg + " needs a value");
    const std::string value = argv[i + 1];
    if (arg == "--cuts") o.cuts = count_of(arg, value);
    else if (arg == "--cut-seconds") o.cut_seconds = count_of(arg, value);
    else if (arg == "--heal-seconds") o.heal_seconds = count_of(arg, value);
    else if (arg == "--ttl") o.ttl = value;
    else if (arg == "--max-seconds") o.max_seconds = count_of(arg, value);
    else if (arg == "--target") {
      if (value != "stream" && value != "meta" && value != "alternate")
        throw SetupFailed("--target " + value + ": use stream, meta or alternate");
      o.target = value;
    } else throw SetupFailed("unknown option " + arg);
  }
  return o;
}

bool print_summary(const Verdict& v, const PartitionRun& partition, const Options& options, const std::string& version) {
  std::map<std::string, int> per_side;
  int by_term = 0;
  for (const auto& r : v.runs) {
    ++per_side[r.side];
    by_term += r.by_term ? 1 : 0;
  }
  std::string sides, cut_nodes;
  for (const auto& [side, count] : per_side) sides += (sides.empty() ? "" : ", ") + side + " " + std::to_string(count);
  for (const auto& c : partition.cuts()) cut_nodes += (cut_nodes.empty() ? "" : " ") + ("n" + std::to_string(c.node));
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - partition.started());
  std::printf("partition: %zu of %d cuts done (%s) in %lld s; %zu runs (%s)\n", partition.cuts().size(), options.cuts,
              cut_nodes.c_str(), static_cast<long long>(seconds.count()), v.runs.size(), sides.c_str());
  const auto [majority, cut_side] = runs_during_cuts(v.runs, partition.cuts());
  std::printf("partition: %d runs started during cuts on the majority side, %d on the cut-off side\n", majority,
              cut_side);
  std::printf("partition: %d end marks by SIGTERM, %d runs without an end mark, %d malformed marks\n", by_term,
              v.without_end, v.malformed_marks);
  std::printf("partition: %d tokens backwards, %d unfenced overlaps, %d fenced overlaps (allowed), %d lost grants "
              "(highest token %llu, last revision %s)\n",
              v.backwards, v.unfenced, v.fenced, v.lost, v.highest_token,
              v.last_revision ? std::to_string(*v.last_revision).c_str() : "unread");
  std::printf("partition: %d writes acknowledged by the server, %d of them lost\n", v.acked_writes, v.lost_writes);
  for (std::size_t i = 0; i < v.notes.size() && i < 30; ++i) std::printf("  %s\n", v.notes[i].c_str());
  const bool ok = v.backwards == 0 && v.unfenced == 0 && v.lost == 0 && v.lost_writes == 0 && !v.runs.empty() &&
                  v.acked_writes > 0;
  // The verdict line: scripts/partition.sh adds these figures up over its runs.
  std::printf("partition: nats-server %s: %s (%zu cuts, %d of the metadata leader, %zu runs, %d backwards, %d "
              "unfenced, %d lost, %d acked, %d acked lost%s)\n",
              version.c_str(), ok ? "ok" : "FAIL", partition.cuts().size(), v.cuts_of_meta, v.runs.size(), v.backwards,
              v.unfenced, v.lost, v.acked_writes, v.lost_writes, v.runs.empty() ? ", no runs at all" : "");
  std::printf("partition: figures ok=%d cuts=%zu meta=%d sections=%zu backwards=%d unfenced=%d fenced=%d lost=%d "
              "acked=%d acked_lost=%d\n",
              ok ? 1 : 0, partition.cuts().size(), v.cuts_of_meta, v.runs.size(), v.backwards, v.unfenced, v.fenced,
              v.lost, v.acked_writes, v.lost_writes);
  std::fflush(stdout);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "writer") return run_writer(argc, argv);
  testing::use_built_git_module();
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGPIPE, SIG_IGN);
  std::string version = "?";
  std::optional<PartitionRun> partition;
  try {
    if (geteuid() != 0) throw SetupFailed("needs root (network namespaces, iptables)");
    const Options options = parse_options(argc, argv);
    version = server_version();
    const char* given = std::getenv("SWARM_PARTITION_RUN");
    const long run_number = given != nullptr && *given != '\0' ? std::atol(given) : static_cast<long>(getpid());
    std::printf("partition: nats-server %s, %d cuts (%s) of %d s with %d s to heal, lease TTL %s, %d s at most\n",
                version.c_str(), options.cuts, options.target.c_str(), options.cut_seconds, options.heal_seconds,
                options.ttl.c_str(), options.max_seconds);
    std::fflush(stdout);
    try {
      partition.emplace(options, run_number);
      partition->start_servers();
      partition->up_workspace();
      partition->start_loopers();
      partition->start_writers();
    } catch (const SetupFailed& e) {
      std::printf("partition: nats-server %s: FAIL (setup: %s)%s\n", version.c_str(), e.what(),
                  partition ? ("; logs in " + partition->dir().string()).c_str() : "");
      return 2;
    }
    partition->run_cuts();
    const long long run_end = partition->stop_loopers();
    const Verdict verdict = partition->check(run_end);
    partition->stop_servers();
    const bool ok = print_summary(verdict, *partition, options, version);
    const fs::path dir = partition->dir();
    partition.reset();
    if (ok && std::getenv("SWARM_PARTITION_KEEP") == nullptr) fs::remove_all(dir);
    if (!ok || std::getenv("SWARM_PARTITION_KEEP") != nullptr)
      std::printf("partition: marks and logs kept in %s\n", dir.c_str());
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("partition: nats-server %s: FAIL (%s)%s\n", version.c_str(), e.what(),
                partition ? ("; logs in " + partition->dir().string()).c_str() : "");
    return 2;
  }
}
