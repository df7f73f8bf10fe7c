// The fault loop (scripts/faults.sh): agents join, write, commit and close
// slots through the real binary while a third of those processes are
// SIGKILLed at a random moment; after each round `swarm doctor --fix` runs.
// Then nothing may be lost: every commit a `commit` reported is reachable in
// the hub, every file the agents wrote is in its worktree, in
// .swarm/recovery/, or in the hub; and doctor must be healthy after --fix.
//   fault_runner [--iterations N] [--seed S] [--max-seconds T]
// Exit 0 when nothing was lost and nothing was left broken, 1 otherwise.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e/swarm_fixture.h"
#include "support/git_module.h"

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

constexpr int kSlots = 4;
// Each round also writes this many files into a folder of their own: enough
// to make salvage and removal take long enough for a kill to land inside.
constexpr int kBulkFiles = 60;

struct Written {
  std::string slot;
  fs::path path;     // where the agent wrote it
  std::string name;  // unique across the run
  std::string content;
};

struct Tally {
  int iterations = 0;
  std::map<std::string, int> runs, killed;       // killed: the SIGKILL found it running
  std::map<std::string, double> usual_ms;          // how long the verb takes when left alone (running mean)
  int reported_commits = 0;
  int lost_commits = 0;
  int written_files = 0;
  int lost_files = 0;
  int unhealthy_after_fix = 0;
  std::vector<std::string> notes;
};

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Every file under the recovery folder, by name, with its contents.
std::multimap<std::string, std::string> recovered_files(const fs::path& recovery) {
  std::multimap<std::string, std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(recovery, ec); it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file()) out.emplace(it->path().filename().string(), read_file(it->path()));
  return out;
}

// The blobs of `contents` that the hub holds (one git process for all).
std::set<std::string> contents_in_hub(const SwarmWorkspace& ws, const std::vector<std::string>& contents,
                                      const fs::path& scratch) {
  std::set<std::string> found;
  if (contents.empty()) return found;
  fs::create_directories(scratch);
  std::vector<std::string> args = {"hash-object"};
  for (std::size_t i = 0; i < contents.size(); ++i) {
    fs::path p = scratch / std::to_string(i);
    write_file(p, contents[i]);
    args.push_back(p.string());
  }
  auto ids = ws.git(args).out;
  write_file(scratch / "ids", ids);
  Command check;
  check.args = {"/bin/sh", "-c",
                "git --git-dir '" + (ws.root() / ".swarm/hub.git").string() + "' cat-file --batch-check < '" +
                    (scratch / "ids").string() + "'"};
  auto answer = run(check).out;
  std::istringstream idlines(ids), answers(answer);
  std::string id, line;
  std::size_t i = 0;
  while (std::getline(idlines, id) && std::getline(answers, line)) {
    if (line.find("missing") == std::string::npos) found.insert(contents[i]);
    ++i;
  }
  return found;
}

void check_nothing_lost(const SwarmWorkspace& ws, const std::vector<std::string>& commits,
                        const std::vector<Written>& files, const fs::path& scratch, Tally& tally) {
  const std::string hub = (ws.root() / ".swarm/hub.git").string();
  tally.lost_commits = 0;
  for (const auto& id : commits) {
    auto refs = ws.git({"--git-dir", hub, "for-each-ref", "--contains", id, "--format=%(refname)"});
    if (trimmed(refs.out).empty()) {
      ++tally.lost_commits;
      tally.notes.push_back("commit " + id + " is in no ref of the hub");
    }
  }
  auto recovered = recovered_files(ws.root() / ".swarm/recovery");
  std::vector<std::string> elsewhere;
  for (const auto& f : files) {
    std::error_code ec;
    if (fs::is_regular_file(f.path, ec) && read_file(f.path) == f.content) continue;
    bool salvaged = false;
    for (auto [it, end] = recovered.equal_range(f.name); it != end && !salvaged; ++it) salvaged = it->second == f.content;
    if (!salvaged) elsewhere.push_back(f.content);
  }
  auto in_hub = contents_in_hub(ws, elsewhere, scratch);
  tally.lost_files = 0;
  for (const auto& content : elsewhere) {
    if (in_hub.count(content) != 0) continue;
    ++tally.lost_files;
    tally.notes.push_back("lost: " + content);
  }
}

struct Options {
  int iterations = 300;
  unsigned seed = static_cast<unsigned>(std::random_device{}());
  int max_seconds = 900;
};

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string arg = argv[i];
    if (arg == "--iterations") o.iterations = std::atoi(argv[i + 1]);
    else if (arg == "--seed") o.seed = static_cast<unsigned>(std::strtoul(argv[i + 1], nullptr, 10));
    else if (arg == "--max-seconds") o.max_seconds = std::atoi(argv[i + 1]);
  }
  return o;
}

// One run of the loop: the workspace, the random source of its choices and
// kills (one seed replays a run), and what the agents wrote and committed.
class FaultLoop {
 public:
  explicit FaultLoop(unsigned seed) : rng_(seed) {}

  // Rounds until `iterations` are done or `max_seconds` have passed since `started`.
  void run_rounds(int iterations, int max_seconds, std::chrono::steady_clock::time_point started) {
    for (int i = 0; i < iterations; ++i) {
      if (std::chrono::steady_clock::now() - started > std::chrono::seconds(max_seconds)) break;
      round(i);
      if ((i + 1) % 50 == 0) {
        std::printf("  %d iterations, %d commits, %d files so far\n", i + 1, tally_.reported_commits,
                    tally_.written_files);
        std::fflush(stdout);
      }
    }
  }

  // The end: every slot is closed (unkilled) and doctor runs once more; then the check.
  void finish() {
    for (int s = 0; s < kSlots; ++s) ws_.swarm({"close", "--slot", "s" + std::to_string(s), "--result", "fail"});
    if (ws_.swarm({"doctor", "--fix"}).exit != 0 && ws_.swarm({"doctor"}).exit != 0) ++tally_.unhealthy_after_fix;
    check_nothing_lost(ws_, commits_, files_, scratch_.path() / "blobs", tally_);
  }

  Tally& tally() { return tally_; }

 private:
  bool chance(int one_in) { return rng_() % static_cast<unsigned>(one_in) == 0; }

  // Runs one verb; a third of them get a SIGKILL at a random moment within
  // the verb's usual length (learnt from the runs left alone).
  RunResult step(const std::string& verb, std::vector<std::string> args) {
    ++tally_.runs[verb];
    Process p(ws_.command(args));
    bool kill = tally_.usual_ms.count(verb) != 0 && chance(3);
    if (kill) {
      auto window = static_cast<unsigned>(tally_.usual_ms[verb] * 1000) + 1;
      std::this_thread::sleep_for(std::chrono::microseconds(rng_() % window));
      p.signal(SIGKILL);
    }
    auto r = p.wait(120s);
    if (r.exit == 128 + SIGKILL) ++tally_.killed[verb];
    if (!kill) {
      double& usual = tally_.usual_ms[verb];
      usual = usual == 0 ? static_cast<double>(r.took.count()) : usual * 0.9 + static_cast<double>(r.took.count()) * 0.1;
    }
    return r;
  }

  // One file the agent writes, remembered to be found again at the end.
  void write(const std::string& slot, const fs::path& path, const std::string& content) {
    Written w{slot, path, "", ""};
    w.name = w.path.filename().string();
    w.content = content;
    write_file(w.path, w.content);
    files_.push_back(w);
    ++tally_.written_files;
  }

  void write_numbered(const std::string& slot, const fs::path& wt, const std::string& n, int k) {
    const fs::path path = wt / ("f-" + n + "-" + std::to_string(k) + ".txt");
    write(slot, path, "iteration " + n + " file " + std::to_string(k) + " " + std::to_string(rng_()) + "\n");
  }

  // An agent's work in its slot: files, a commit, one more file left
  // uncommitted, and now and then a close.
  void work_in_slot(const std::string& slot, const fs::path& wt, const std::string& n) {
    write_numbered(slot, wt, n, 1);
    write_numbered(slot, wt, n, 2);
    for (int k = 0; k < kBulkFiles; ++k)
      write(slot, wt / ("bulk-" + n) / ("b-" + n + "-" + std::to_string(k) + ".txt"),
            "iteration " + n + " bulk " + std::to_string(k) + "\n");
    auto commit = step("commit", {"commit", "--slot", slot, "-m", "iteration " + n, "--json"});
    if (commit.exit == 0) {
      std::string id = field(json_of(commit), "commit");
      if (!id.empty()) {
        commits_.push_back(id);
        ++tally_.reported_commits;
      }
    }
    write_numbered(slot, wt, n, 3);  // uncommitted work
    if (chance(2)) step("close", {"close", "--slot", slot, "--result", "fail"});
  }

  // doctor --fix after the round: one more pass may be needed (a removal
  // that a join held up); a second failure stays.
  void fix(const std::string& n) {
    auto fixed = ws_.swarm({"doctor", "--fix", "--json"});
    if (fixed.exit == 0) return;
    auto again = ws_.swarm({"doctor", "--fix", "--json"});
    if (again.exit != 0) {
      ++tally_.unhealthy_after_fix;
      tally_.notes.push_back("iteration " + n + ": doctor after --fix: " + again.out.substr(0, 600));
    }
  }

  void round(int i) {
    ++tally_.iterations;
    const std::string slot = "s" + std::to_string(rng_() % kSlots);
    const std::string n = std::to_string(i);
    // An agent (re)starting takes its slot over whatever state it was left in.
    auto join = step("join", {"join", "--slot", slot, "--task", "T-" + n, "--force"});
    if (join.exit == 0) work_in_slot(slot, trimmed(join.out), n);
    fix(n);
  }

  std::mt19937 rng_;
  SwarmWorkspace ws_{{.up_args = {"--ttl", "30s"}}};
  TempDir scratch_{"swarm-faults"};
  Tally tally_;
  std::vector<std::string> commits_;
  std::vector<Written> files_;
};

void print_report(Tally& tally, unsigned seed, std::chrono::steady_clock::time_point started) {
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count();
  int killed = 0;
  for (const auto& [verb, count] : tally.killed) killed += count;
  std::printf("faults: %d iterations in %lld s (seed %u); SIGKILLed %d of %d join, %d of %d commit, %d of %d close "
              "(%d in all)\n",
              tally.iterations, static_cast<long long>(seconds), seed, tally.killed["join"], tally.runs["join"],
              tally.killed["commit"], tally.runs["commit"], tally.killed["close"], tally.runs["close"], killed);
  std::printf("faults: %d reported commits, %d lost; %d written files, %d lost; %d times unhealthy after doctor --fix\n",
              tally.reported_commits, tally.lost_commits, tally.written_files, tally.lost_files,
              tally.unhealthy_after_fix);
  for (std::size_t i = 0; i < tally.notes.size() && i < 20; ++i) std::printf("  %s\n", tally.notes[i].c_str());
}

}  // namespace

int main(int argc, char** argv) {
  testing::use_built_git_module();
  const Options options = parse_options(argc, argv);
  std::printf("faults: %d iterations at most, %d s at most, seed %u\n", options.iterations, options.max_seconds,
              options.seed);
  std::fflush(stdout);
  FaultLoop loop(options.seed);
  const auto started = std::chrono::steady_clock::now();
  loop.run_rounds(options.iterations, options.max_seconds, started);
  loop.finish();
  print_report(loop.tally(), options.seed, started);
  const Tally& tally = loop.tally();
  return tally.lost_commits + tally.lost_files + tally.unhealthy_after_fix == 0 ? 0 : 1;
}
