// The lock history checker: eight processes loop `swarm lock` on one name for
// a minute while faults strike: random holders and waiters SIGKILLed, random
// swarm processes frozen (SIGSTOP) past their TTL and thawed. Each command
// logs "start TOKEN ID" and "end TOKEN ID"; the harness logs each swarm's
// exit and each freeze. The checker then asserts:
// - tokens strictly rise in the order sections start;
// - no two sections overlap, unless the earlier one's swarm was frozen (its
//   command ran on without a lease: what fencing tokens are for), and then
//   the later section has the higher token, so a fenced resource refuses the
//   stale one;
// - no command outlives its swarm.
// The same runs on a 3-node cluster with the stream leader killed once.
#include <doctest/doctest.h>

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "e2e/swarm_fixture.h"
#include "kv/bucket.h"

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

constexpr int kWorkers = 8;

struct History {
  int sections = 0;
  int fenced_overlaps = 0;  // overlaps a freeze caused, caught by the token
  int kills = 0;
  int freezes = 0;
  std::vector<std::string> violations;
  std::vector<std::pair<std::string, std::string>> violators;  // the two runs of each violation
};

// The time now as seconds since the epoch, to the millisecond, as `date +%s.%N` writes it.
std::string now_text() {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
  char text[32];
  std::snprintf(text, sizeof text, "%lld.%03lld", static_cast<long long>(ms.count() / 1000),
                static_cast<long long>(ms.count() % 1000));
  return text;
}

// The log's lines about runs `a` and `b` (their sections, exits, freezes and
// what their swarm printed), to show with a violation.
std::string lines_about(const fs::path& log, const std::string& a, const std::string& b) {
  std::ifstream in(log);
  std::string line, out;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string what, id;
    words >> what;
    if (what == "start" || what == "end") words >> id;
    words >> id;
    if (!id.empty() && id.back() == ':') id.pop_back();
    if (id == a || id == b || what == "killed") out += line + "\n";
  }
  return out;
}

// Reads the log and checks it; see the file comment. Of two sections of one
// permit (a lock has one) that overlap, the one with the lower token must
// belong to a swarm that was frozen (its lease ran out under it): a resource
// that keeps the highest token seen refuses it. Any other overlap, or a lower
// token from a swarm never frozen, is a violation; so is more than `limit`
// sections running at once whose swarms were never frozen.
History check(const fs::path& log, int limit = 1) {
  History h;
  std::ifstream in(log);
  std::string line;
  struct Open {
    unsigned long long token = 0;
    int permit = 0;
  };
  std::map<std::string, Open> open;                 // each running section, by the id of its swarm run
  std::map<std::string, bool> ever_frozen;          // runs frozen at any time so far
  std::map<int, unsigned long long> highest;        // by permit
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string what, id;
    unsigned long long token = 0;
    int permit = 0;
    words >> what;
    if (what == "start") words >> token >> id >> permit;
    else if (what == "end") words >> token >> id;
    else words >> id;
    if (what == "start") {
      ++h.sections;
      if (token <= highest[permit]) {
        if (ever_frozen[id]) {
          ++h.fenced_overlaps;  // a stale holder that woke up: refused by its token
        } else {
          h.violations.push_back("token " + std::to_string(token) + " (" + id + ") of permit " +
                                 std::to_string(permit) + " started after " + std::to_string(highest[permit]) +
                                 ", and its swarm was never frozen");
          h.violators.emplace_back(id, id);
        }
      }
      int live = 1;
      for (const auto& [other, o] : open) {
        if (!ever_frozen[other]) ++live;
        if (o.permit != permit) continue;
        const std::string& stale = o.token < token ? other : id;
        if (ever_frozen[stale]) {
          ++h.fenced_overlaps;
        } else {
          h.violations.push_back("sections " + other + " (token " + std::to_string(o.token) + ") and " + id +
                                 " (token " + std::to_string(token) + ") of permit " + std::to_string(permit) +
                                 " overlap, and the stale one was not frozen");
          h.violators.emplace_back(other, id);
        }
      }
      if (live > limit && !ever_frozen[id]) {
        h.violations.push_back(std::to_string(live) + " sections ran at once (limit " + std::to_string(limit) +
                               ") when " + id + " started");
        h.violators.emplace_back(id, id);
      }
      highest[permit] = std::max(highest[permit], token);
      open[id] = {token, permit};
    } else if (what == "end" || what == "exit") {
      open.erase(id);
    } else if (what == "freeze") {
      ever_frozen[id] = true;
    }
  }
  return h;
}

// The run whose section is open at the end of the log, if one is.
std::string holder_in(const fs::path& log) {
  std::ifstream in(log);
  std::string line, open;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string what, token, id;
    words >> what;
    if (what == "start") {
      words >> token >> id;
      open = id;
    } else if (what == "end" || what == "exit") {
      if (what == "end") words >> token;
      words >> id;
      if (id == open) open.clear();
    }
  }
  return open;
}

// A swarm process running now: its pid and the id of its run.
struct Running {
  pid_t pid = 0;
  std::string id;
};

// The state one run of the loop shares between its threads: the log, the
// swarm processes running now, and the faults struck so far.
class HistoryRun {
 public:
  HistoryRun(SwarmWorkspace& ws, int limit) : ws_(ws), log_(ws.root() / "history.log"), running_(kWorkers), limit_(limit) {}

  const fs::path& log() const { return log_; }
  int kills() const { return kills_; }
  int freezes() const { return freezes_; }

  // Worker `w`: one `swarm lock` after another until the faults stop.
  void work(int w) {
    std::mt19937 rng(static_cast<unsigned>(w) * 7919u + 1);
    for (int n = 0; !stop_; ++n) lock_once(w, std::to_string(w) + "-" + std::to_string(n), rng);
  }

  // Faults at random moments for `length`, `midway` once at half time; then
  // the workers stop.
  void strike_faults(std::chrono::seconds length, const std::function<void()>& midway) {
    std::mt19937 rng(12345);
    auto deadline = std::chrono::steady_clock::now() + length;
    bool midway_done = !midway;
    while (std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300 + rng() % 700));
      if (!midway_done && std::chrono::steady_clock::now() > deadline - length / 2) {
        midway();
        midway_done = true;
      }
      Running victim = pick_victim(rng);
      if (victim.pid == 0) continue;
      strike(victim, rng);
    }
    stop_ = true;
  }

 private:
  void append(const std::string& line) {
    std::lock_guard lock(log_mu_);
    std::ofstream(log_, std::ios::app) << line << "\n";
  }

  void lock_once(int w, const std::string& id, std::mt19937& rng) {
    // Mostly short; a quarter longer than the TTL (renewed meanwhile, or,
    // its swarm frozen, running on past it).
    const char* hold = (rng() % 4 == 0) ? "4" : (rng() % 2 ? "0.05" : "0.2");
    std::vector<std::string> args = {"lock", "history", "--ttl", "2s", "--timeout", "10s", "--log-level", "debug"};
    if (limit_ > 1) args.insert(args.end(), {"--limit", std::to_string(limit_)});
    args.insert(args.end(), {"--", "sh", "-c",
                             "echo \"start $SWARM_FENCING_TOKEN $RUN_ID ${SWARM_PERMIT:-0} $(date +%s.%N)\" >> " +
                                 log_.string() +
                                    "; sleep " + hold + "; echo \"end $SWARM_FENCING_TOKEN $RUN_ID $(date +%s.%N)\" >> " +
                                 log_.string()});
    auto command = ws_.command(args);
    command.env["RUN_ID"] = id;
    Process p(command);
    {
      std::lock_guard lock(running_mu_);
      running_[static_cast<std::size_t>(w)] = {p.pid(), id};
    }
    auto r = p.wait(120s);
    {
      std::lock_guard lock(running_mu_);
      running_[static_cast<std::size_t>(w)] = {};
    }
    append("exit " + id + " " + std::to_string(r.exit) + " " + now_text());
    // What its swarm said, to show beside a violation.
    std::istringstream said(r.err);
    for (std::string line; std::getline(said, line);) append("said " + id + ": " + line);
  }

  // Half the time the holder (the run with a section open in the log),
  // else anyone: a waiter, or a holder between grant and command.
  Running pick_victim(std::mt19937& rng) {
    Running victim;
    std::string holding = rng() % 2 == 0 ? holder_in(log_) : std::string();
    std::lock_guard lock(running_mu_);
    victim = running_[rng() % kWorkers];
    for (const auto& r : running_)
      if (!holding.empty() && r.id == holding) victim = r;
    return victim;
  }

  // A SIGKILL, or a freeze past its TTL (its command runs on without a lease).
  void strike(const Running& victim, std::mt19937& rng) {
    if (rng() % 2 == 0) {
      ::kill(victim.pid, SIGKILL);
      append("kill " + victim.id + " " + now_text());
      ++kills_;
    } else {
      append("freeze " + victim.id + " " + now_text());
      ::kill(victim.pid, SIGSTOP);
      std::this_thread::sleep_for(std::chrono::milliseconds(2500 + rng() % 1500));
      ::kill(victim.pid, SIGCONT);
      append("thaw " + victim.id + " " + now_text());
      ++freezes_;
    }
  }

  SwarmWorkspace& ws_;
  const fs::path log_;
  std::mutex log_mu_;
  std::mutex running_mu_;
  std::vector<Running> running_;
  int limit_;
  std::atomic<bool> stop_{false};
  int kills_ = 0;
  int freezes_ = 0;
};

// No command outlives its swarm: none of the log's writers still runs.
// (A bracket in the pattern keeps it from matching its own shell's command line.)
void check_no_command_left(const fs::path& log) {
  std::string pattern = log.string();
  pattern.replace(pattern.rfind(".log"), 4, "[.]log; sleep");
  auto left = run({.args = {"/bin/sh", "-c", "pgrep -f '" + pattern + "' || true"}});
  CHECK_MESSAGE(left.out.empty(), "commands left running: " << left.out);
}

// One run of the loop: a workspace on `urls` (or its own server), kWorkers
// processes locking for `length` (a semaphore of `limit` when above 1),
// faults, then the checker.
History run_history(SwarmWorkspace& ws, std::chrono::seconds length, const std::function<void()>& midway = {},
                    int limit = 1) {
  HistoryRun history(ws, limit);
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) workers.emplace_back([&history, w] { history.work(w); });
  std::thread faults([&] { history.strike_faults(length, midway); });
  faults.join();
  for (auto& t : workers) t.join();
  const fs::path& log = history.log();
  History h = check(log, limit);
  for (const auto& [a, b] : h.violators) MESSAGE("what runs " << a << " and " << b << " did:\n" << lines_about(log, a, b));
  h.kills = history.kills();
  h.freezes = history.freezes();
  check_no_command_left(log);
  return h;
}

}  // namespace

TEST_CASE("LockHistory_TokensRiseAndOnlyFrozenHoldersOverlapFenced") {
  // a minute of eight processes locking one name under SIGKILLs and freezes: see the file comment.
  SwarmWorkspace ws;
  auto h = run_history(ws, 60s);
  CHECK(h.sections > 25);
  CHECK(h.kills > 5);
  CHECK(h.freezes > 5);
  CHECK_MESSAGE(h.violations.empty(), (h.violations.empty() ? std::string() : h.violations.front()));
  MESSAGE(h.sections << " sections, " << h.kills << " SIGKILLs, " << h.freezes << " freezes, " << h.fenced_overlaps
                     << " overlaps of a frozen holder, each fenced by a higher token");
}

TEST_CASE("LockHistory_ASemaphoreOfThreeUnderKillsAndFreezes") {
  // the same with `--limit 3`: never more than 3 commands at once (frozen holders aside, fenced per permit).
  SwarmWorkspace ws;
  auto h = run_history(ws, 30s, {}, 3);
  CHECK(h.sections > 30);
  CHECK(h.kills + h.freezes > 6);
  CHECK_MESSAGE(h.violations.empty(), (h.violations.empty() ? std::string() : h.violations.front()));
  MESSAGE("limit 3: " << h.sections << " sections, " << h.kills << " SIGKILLs, " << h.freezes << " freezes, "
                      << h.fenced_overlaps << " overlaps of a frozen holder, each fenced by a higher token");
}

namespace {

// The history of `limit` (1: a lock) for `length` on a 3-node cluster (R3
// buckets), the leases stream's leader killed half way; `leader` says which.
History run_on_a_cluster(std::chrono::seconds length, int limit, std::string& leader) {
  NatsCluster cluster;
  SwarmWorkspace ws({.up = false});
  RunResult up = up_on_cluster(ws, cluster, {"--replicas", "3"});
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  return run_history(ws, length, [&] {
    auto connection = kv::Connection::connect({.urls = cluster.url_list()});
    leader = kv::Bucket::open(connection, ws.names().leases).leader();
    cluster.node(leader == "n1" ? 0 : leader == "n2" ? 1 : 2).kill();
    std::ofstream(ws.root() / "history.log", std::ios::app) << "killed leader " << leader << " " << now_text() << "\n";
  }, limit);
}

}  // namespace

TEST_CASE("LockHistory_OnAClusterLosingItsStreamLeader") {
  // the same on a 3-node cluster (R3 buckets), with the leases stream's leader killed half way.
  std::string leader;
  auto h = run_on_a_cluster(60s, 1, leader);
  CHECK(!leader.empty());
  CHECK(h.sections > 20);
  CHECK_MESSAGE(h.violations.empty(), (h.violations.empty() ? std::string() : h.violations.front()));
  MESSAGE("cluster, leader " << leader << " killed: " << h.sections << " sections, " << h.kills << " SIGKILLs, "
                             << h.freezes << " freezes, " << h.fenced_overlaps << " fenced overlaps");
}

TEST_CASE("LockHistory_ASemaphoreOnAClusterLosingItsStreamLeader") {
  // --limit 3 on a 3-node cluster (R3 buckets), the leases stream's leader killed half way: never more than 3.
  std::string leader;
  auto h = run_on_a_cluster(25s, 3, leader);
  CHECK(!leader.empty());
  CHECK(h.sections > 15);
  CHECK_MESSAGE(h.violations.empty(), (h.violations.empty() ? std::string() : h.violations.front()));
  MESSAGE("cluster, limit 3, leader " << leader << " killed: " << h.sections << " sections, " << h.kills
                                      << " SIGKILLs, " << h.freezes << " freezes, " << h.fenced_overlaps
                                      << " fenced overlaps");
}
