// swarm run through the real binary: an agent that thinks longer than the
// TTL keeps its slot and task; a lost session stops the agent before a
// successor starts; a killed run is dead at once (its agent killed); the
// terminal's ^C and the signals to run reach the agent; presence, up --ttl
// on a live workspace, the run lock, and bad usage.
#include <doctest/doctest.h>

#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <thread>

#include "e2e/serve_fixture.h"
#include "e2e/process_wait.h"
#include "e2e/swarm_fixture.h"
#include "kv/bucket.h"
#include "support/eventually.h"
#include "swarm/base/process_info.h"

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// The session of `slot` as status --json has it (empty when none).
swarm::Json session_of(const SwarmWorkspace& ws, const std::string& slot) {
  auto doc = json_of(ws.swarm({"status", "--json", "--slot", slot}));
  cJSON* sessions = cJSON_GetObjectItem(doc.get(), "sessions");
  if (sessions == nullptr || cJSON_GetArraySize(sessions) == 0) return {};
  return swarm::Json::copy(cJSON_GetArrayItem(sessions, 0));
}

std::string state_of(const SwarmWorkspace& ws, const std::string& slot) {
  auto s = session_of(ws, slot);
  return s ? field(s, "state") : "";
}

// The last line of stdout parsed (swarm.run.v1 comes after what AGENT printed).
swarm::Json last_json_line(const std::string& out) {
  std::string text = out;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const auto at = text.rfind('\n');
  return swarm::Json::parse(at == std::string::npos ? text : text.substr(at + 1));
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// `swarm run --slot SLOT --task T-1 -- sh -c SCRIPT` as host A on a terminal
// of its own (a pty, whose session it leads): what it prints is kept, keys
// are typed into it.
class OnATerminal {
 public:
  OnATerminal(const SwarmWorkspace& ws, const std::string& slot, const std::string& script) {
    pid_ = forkpty(&master_, nullptr, nullptr, nullptr);
    if (pid_ == 0) {
      if (::chdir(ws.root().c_str()) != 0) ::_exit(126);
      ::setenv("SWARM_HOST", "host-a", 1);
      ::setenv("SWARM_HOST_ID", "id-a", 1);
      ::execl(swarm_binary().c_str(), "swarm", "run", "--slot", slot.c_str(), "--task", "T-1", "--", "sh", "-c",
              script.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~OnATerminal() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) ::close(master_);
  }
  OnATerminal(const OnATerminal&) = delete;
  OnATerminal& operator=(const OnATerminal&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  int terminal() const { return master_; }
  const std::string& seen() { return drain(), seen_; }
  bool type(char key) { return ::write(master_, &key, 1) == 1; }
  // Its wait status once it changed (stopped, with `stops`, or ended).
  std::optional<int> changed(bool stops = false) {
    drain();
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG | (stops ? WUNTRACED : 0)) != pid_) return std::nullopt;
    if (!WIFSTOPPED(status)) reaped_ = true;
    return status;
  }

 private:
  // What it printed so far, without waiting (a terminal's output must be
  // read, or a process writing to it blocks).
  void drain() {
    pollfd p{master_, POLLIN, 0};
    while (::poll(&p, 1, 10) > 0 && (p.revents & POLLIN) != 0) {
      char buf[512];
      const ssize_t n = ::read(master_, buf, sizeof buf);
      if (n <= 0) return;
      seen_.append(buf, static_cast<std::size_t>(n));
    }
  }
  pid_t pid_ = -1;
  int master_ = -1;
  bool reaped_ = false;
  std::string seen_;
};

}  // namespace

TEST_CASE("Run_AnAgentThatThinksThreeTtlsKeepsItsSlotAndTask") {
  // TTL 2s; the agent commits nothing and renews nothing for 6.5s: the slot stays fresh, another slot cannot take
  // its task, and when it ends its work is committed (--commit), pushed, and the slot closed as success.
  SwarmWorkspace ws({.up_args = {"--ttl", "2s"}});
  auto started = ws.root() / "started";
  Process run(ws.command({"run", "--slot", "think", "--task", "T-think", "--commit", "thought it through", "--", "sh",
                          "-c", "touch " + started.string() + "; sleep 6.5; echo answer > answer.txt"}));
  REQUIRE(eventually([&] { return fs::exists(started); }));
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(1s);
    CHECK(state_of(ws, "think") == "fresh");
  }
  auto thief = ws.swarm({"join", "--slot", "thief", "--task", "T-think"});
  CHECK(thief.exit == 3);
  CHECK(thief.err.find("T-think") != std::string::npos);
  auto r = run.wait(30s);
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  CHECK(r.err.find("closed as success") != std::string::npos);
  CHECK(ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "show", "swarm/think:answer.txt"}).out ==
        "answer\n");
  CHECK(ws.swarm({"status", "--slot", "think"}).out.find("think") == std::string::npos);
  auto log = ws.swarm({"log", "--slot", "think", "--json"});
  CHECK(log.out.find("\"result\":\"success\"") != std::string::npos);
}

TEST_CASE("Run_ALostSessionStopsTheAgentBeforeASuccessorOfThisHostStarts") {
  // an operator evicts the slot of a running agent that ignores SIGTERM: run stops it (SIGKILL) before the
  // session's deadline, says why, exits 3 and journals session.lost; a join of the slot on this host meanwhile
  // is exit 3 naming the run, and the one that succeeds starts after the agent's last heartbeat.
  SwarmWorkspace ws({.up_args = {"--ttl", "3s"}});
  auto beats = ws.root() / "beats";
  auto pid_file = ws.root() / "agent.pid";
  Process run(ws.command({"run", "--slot", "s", "--task", "T-1", "--", "sh", "-c",
                          "trap '' TERM; echo $$ > " + pid_file.string() +
                              "; while :; do date +%s%N >> " + beats.string() + "; sleep 0.02; done"}));
  const std::string pid = first_line_of(pid_file);
  REQUIRE(!pid.empty());
  REQUIRE(eventually([&] { return state_of(ws, "s") == "fresh"; }));
  const auto evicted_at = std::chrono::steady_clock::now();
  REQUIRE(ws.swarm({"evict", "--slot", "s"}).exit == 0);
  bool refused_once = false;
  std::int64_t join_started_ns = 0;
  RunResult joined;
  REQUIRE(eventually(
      [&] {
        join_started_ns = now_ns();
        joined = ws.swarm({"join", "--slot", "s", "--task", "T-2"});
        if (joined.exit == 3 && joined.err.find("swarm run") != std::string::npos) refused_once = true;
        return joined.exit == 0;
      },
      20s));
  auto r = run.wait(20s);
  const auto stopped_after = std::chrono::steady_clock::now() - evicted_at;
  CHECK(r.exit == 3);
  CHECK(r.err.find("was lost") != std::string::npos);
  CHECK(stopped_after < 10s);
  CHECK(process_gone(static_cast<pid_t>(std::stol(pid))));
  // Every heartbeat of the agent came before the successor's join began.
  std::string text = read_file(beats);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const std::int64_t last_beat = std::stoll(text.substr(text.rfind('\n') + 1));
  CHECK(last_beat < join_started_ns);
  CHECK(refused_once);  // the join tried while the agent lived was refused (the run keeps the folder)
  auto log = ws.swarm({"log", "--kind", "session.lost", "--json"});
  CHECK(log.out.find("evicted") != std::string::npos);
}

// `run` of slot s (task T-1) whose agent writes draft.txt and sleeps: the
// run, and its agent's pid once the session's record names the agent.
std::pair<Process, pid_t> drafting_run(const SwarmWorkspace& ws) {
  auto pid_file = ws.root() / "agent.pid";
  Process run(ws.command({"run", "--slot", "s", "--task", "T-1", "--", "sh", "-c",
                          "echo $$ > " + pid_file.string() + "; echo draft > draft.txt; sleep 60"}));
  const std::string pid = first_line_of(pid_file);
  REQUIRE(!pid.empty());
  REQUIRE(eventually([&] { return session_of(ws, "s") && number(session_of(ws, "s"), "agent_pid") > 0; }));
  return {std::move(run), static_cast<pid_t>(std::stol(pid))};
}

TEST_CASE("Run_AKilledRunKillsItsAgentAndItsSessionIsDeadAtOnce") {
  // TTL 1m: a run SIGKILLed takes its agent with it within a second, and status and doctor say dead at once (not
  // after TTL/3); doctor --fix salvages the folder's files and removes the record; a join takes it after.
  SwarmWorkspace ws({.up_args = {"--ttl", "1m"}});
  auto [run, pid] = drafting_run(ws);
  CHECK(state_of(ws, "s") == "fresh");
  run.signal(SIGKILL);
  run.wait(5s);
  const auto killed_at = std::chrono::steady_clock::now();
  CHECK(eventually([&] { return process_gone(pid); }, 1s));
  // At once: the first status after the run is gone says dead.
  CHECK(state_of(ws, "s") == "dead");
  CHECK(std::chrono::steady_clock::now() - killed_at < 1s + 1s);  // the agent's 1 s to go, and one status
  auto status = ws.swarm({"status"});
  CHECK(status.out.find("dead") != std::string::npos);
  auto doctor = ws.swarm({"doctor"});
  CHECK(doctor.exit == 8);
  CHECK(doctor.out.find("[dead_session] slot s") != std::string::npos);
  auto fixed = ws.swarm({"doctor", "--fix"});
  CHECK(fixed.exit == 0);
  CHECK(ws.swarm({"status", "--slot", "s"}).out.find("T-1") == std::string::npos);
  bool salvaged = false;
  for (const auto& e : fs::directory_iterator(ws.root() / ".swarm/recovery"))
    salvaged = salvaged || fs::exists(e.path() / "draft.txt");
  CHECK(salvaged);
  CHECK(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
}

TEST_CASE("Run_AJoinTakesADeadSessionOverWithoutForce") {
  // TTL 1m: a killed run's session is dead at once, and a join of this host takes it over as it would a stale
  // one (no --force, no doctor first), with the worktree as the dead agent left it.
  SwarmWorkspace ws({.up_args = {"--ttl", "1m"}});
  auto [run, pid] = drafting_run(ws);
  auto early = ws.swarm({"join", "--slot", "s", "--task", "T-2"});
  CHECK(early.exit == 3);  // alive: refused
  run.signal(SIGKILL);
  run.wait(5s);
  REQUIRE(eventually([&] { return process_gone(pid); }, 2s));
  auto joined = ws.swarm({"join", "--slot", "s", "--task", "T-2"});
  REQUIRE_MESSAGE(joined.exit == 0, joined.err);
  CHECK(field(session_of(ws, "s"), "task_id") == "T-2");
  CHECK(state_of(ws, "s") == "fresh");
  CHECK(joined.err.find("replaced the earlier session of slot s") != std::string::npos);
  CHECK(read_file(ws.worktree("s") / "draft.txt") == "draft\n");  // the worktree taken over as it was
}

TEST_CASE("Run_AReusedPidIsNotTakenForTheAgent") {
  // records naming live processes: with their true start times the session is alive; with another start time
  // (the pid now someone else's), or as a zombie, it is dead. Never by pid alone.
  SwarmWorkspace ws;
  Process stand_in(Command{{"/bin/sleep", "60"}, {}, {}});
  const pid_t pid = stand_in.pid();
  REQUIRE(eventually([&] { return swarm::process_start_ticks(pid).has_value() && process_state(pid) == 'S'; }));
  const auto start = *swarm::process_start_ticks(pid);
  const pid_t me = ::getpid();
  const auto my_start = *swarm::process_start_ticks(me);
  std::optional<kv::Connection> keep;
  keep.emplace(kv::Connection::connect({.urls = {ws.server()->url()}}));
  auto bucket = kv::Bucket::open(*keep, ws.names().sessions);
  auto record = [&](const std::string& slot, std::uint64_t agent_start, pid_t agent = 0) {
    if (agent == 0) agent = pid;
    return R"({"slot":")" + slot + R"(","task_id":"T-)" + slot + R"(","agent_id":"slot-)" + slot +
           R"(","host":"host-a","host_id":"id-a","leaf_pid":)" + std::to_string(me) + R"(,"leaf_start":)" +
           std::to_string(my_start) + R"(,"agent_pid":)" + std::to_string(agent) + R"(,"agent_start":)" +
           std::to_string(agent_start) + R"(,"started_at":"2026-11-27T00:00:00Z","last_renewed":"2026-11-27T00:00:00Z"})";
  };
  bucket.create("alive", record("alive", start));
  bucket.create("reused", record("reused", start + 1));
  CHECK(state_of(ws, "alive") == "fresh");
  CHECK(state_of(ws, "reused") == "dead");
  // An agent that ended and was not reaped yet (a zombie, its start time still readable) is gone too.
  Process ended(Command{{"/bin/true"}, {}, {}});
  REQUIRE(eventually([&] { return process_state(ended.pid()) == 'Z'; }));
  const auto ended_start = swarm::process_start_ticks(ended.pid());
  REQUIRE(ended_start.has_value());
  bucket.create("zombie", record("zombie", *ended_start, ended.pid()));
  CHECK(state_of(ws, "zombie") == "dead");
  // Another host's record is never judged by this host's processes.
  auto other = ws.swarm({"status", "--json", "--slot", "reused"}, kHostB);
  CHECK(other.out.find("\"state\":\"fresh\"") != std::string::npos);
  auto doctor = ws.swarm({"doctor"});
  CHECK(doctor.out.find("[dead_session] slot reused") != std::string::npos);
  CHECK(doctor.out.find("[dead_session] slot alive") == std::string::npos);
  stand_in.signal(SIGKILL);
}

TEST_CASE("Run_TheTerminalsInterruptReachesTheAgent") {
  // on a terminal (a pty) the agent is the foreground: ^C reaches it, not run; it dies of SIGINT, so run exits
  // 130 and the slot is closed as fail.
  SwarmWorkspace ws;
  auto started = ws.root() / "started";
  OnATerminal run(ws, "tty", "touch " + started.string() + "; sleep 60");
  REQUIRE(run.started());
  REQUIRE(eventually([&] { return run.seen(), fs::exists(started); }));
  REQUIRE(run.type('\x03'));
  std::optional<int> status;
  REQUIRE(eventually([&] { return (status = run.changed()).has_value(); }));
  REQUIRE(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 130);
  CHECK(run.seen().find("closed as fail") != std::string::npos);
  CHECK(ws.swarm({"log", "--slot", "tty", "--json"}).out.find("\"result\":\"fail\"") != std::string::npos);
}

TEST_CASE("Run_SignalsToRunGoToTheAgentBoundedByGrace") {
  // SIGTERM to run reaches the agent, which exits as it likes (here 5): run exits 5, closed as fail. An agent that
  // ignores it gets SIGKILL after --grace: 137.
  SwarmWorkspace ws;
  auto started = ws.root() / "started";
  Process polite(ws.command({"run", "--slot", "p", "--task", "T-1", "--", "sh", "-c",
                             "trap 'echo got-term; exit 5' TERM; touch " + started.string() + "; sleep 60 & wait"}));
  REQUIRE(eventually([&] { return fs::exists(started); }));
  REQUIRE(eventually([&] { return number(session_of(ws, "p"), "agent_pid") > 0; }));
  polite.signal(SIGTERM);
  auto p = polite.wait(15s);
  CHECK(p.exit == 5);
  CHECK(p.out.find("got-term") != std::string::npos);
  CHECK(p.err.find("closed as fail") != std::string::npos);
  fs::remove(started);
  Process stubborn(ws.command({"run", "--slot", "q", "--task", "T-2", "--grace", "500ms", "--json", "--", "sh", "-c",
                               "trap '' TERM; touch " + started.string() + "; sleep 60"}));
  REQUIRE(eventually([&] { return fs::exists(started); }));
  REQUIRE(eventually([&] { return number(session_of(ws, "q"), "agent_pid") > 0; }));
  const auto sent = std::chrono::steady_clock::now();
  stubborn.signal(SIGTERM);
  auto q = stubborn.wait(15s);
  CHECK(q.exit == 137);
  CHECK(std::chrono::steady_clock::now() - sent < 5s);
  auto doc = last_json_line(q.out);
  CHECK(field(doc, "schema") == "swarm.run.v1");
  CHECK(field(doc, "ended") == "signalled");
  CHECK(field(doc, "result") == "fail");
  CHECK(number(doc, "exit") == 137);
}

TEST_CASE("Run_WhatTheAgentSaysShowsInStatusServeAndMetrics") {
  // renew --status/--note from inside the agent (its SWARM_SESSION): status, status --json, serve's /api/status
  // and /metrics show it; a bad status, a long note or one with a control byte is exit 2 and writes nothing; a
  // note another client planted with one is escaped where printed. The run's own renewals after the agent's
  // keep the session (and what it said): TTL 3s, watched for 4s.
  SwarmWorkspace ws({.up_args = {"--ttl", "3s"}});
  auto said = ws.root() / "said";
  Process run(ws.command({"run", "--slot", "s", "--task", "T-1", "--", "sh", "-c",
                          swarm_binary() + " renew --status blocked --note 'waiting for the API review' && touch " +
                              said.string() + "; sleep 60"}));
  REQUIRE(eventually([&] { return fs::exists(said); }));
  auto s = session_of(ws, "s");
  CHECK(field(s, "status") == "blocked");
  CHECK(field(s, "note") == "waiting for the API review");
  CHECK(ws.swarm({"status"}).out.find("s is blocked: waiting for the API review") != std::string::npos);
  Served served(ws);
  CHECK(eventually_body(served, "/metrics", [](const std::string& m) {
    return sample(m, "swarm_agents{status=\"blocked\"}") == 1;
  }));
  CHECK(served.body("/api/status").find("\"status\":\"blocked\"") != std::string::npos);
  CHECK(ws.swarm({"renew", "--slot", "s", "--status", "sleeping"}).exit == 2);
  CHECK(ws.swarm({"renew", "--slot", "s", "--note", std::string(201, 'x')}).exit == 2);
  CHECK(ws.swarm({"renew", "--slot", "s", "--note", "a\x1b[2Jb"}).exit == 2);
  CHECK(field(session_of(ws, "s"), "note") == "waiting for the API review");  // nothing written
  // The agent's renewal moved the task lease under the run's keeper (which
  // renews it without a read): the keeper's next write is refused, it claims
  // its own lease again, and the task keeps its token.
  auto task_token = [&] {
    auto doc = json_of(ws.swarm({"lease", "show", "task.T-1", "--json"}));
    auto lease = swarm::Json::copy(cJSON_GetArrayItem(cJSON_GetObjectItem(doc.get(), "leases"), 0));
    return number(lease, "token");
  };
  const auto token = task_token();
  CHECK(token > 0);
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(1s);
    CHECK(state_of(ws, "s") == "fresh");
  }
  CHECK(field(session_of(ws, "s"), "status") == "blocked");
  CHECK(task_token() == token);
  // Planted by another client: shown escaped.
  std::optional<kv::Connection> keep;
  keep.emplace(kv::Connection::connect({.urls = {ws.server()->url()}}));
  kv::Bucket::open(*keep, ws.names().sessions)
      .create("planted", R"({"slot":"planted","host":"h","task_id":"T-9","status":"working","note":"x\u001b[2Jy"})");
  auto text = ws.swarm({"status"});
  CHECK(text.out.find("planted is working: x\\x1b[2Jy") != std::string::npos);
  CHECK(text.out.find('\x1b') == std::string::npos);
  run.signal(SIGTERM);
  auto r = run.wait(15s);
  CHECK_MESSAGE(r.err.find("could not be kept") == std::string::npos, r.err);
}

TEST_CASE("Run_UpTtlChangesALiveWorkspaceInPlace") {
  // up --ttl on a workspace with a live run: the bucket's TTL changes in place (no "delete the bucket"), the run
  // follows it (lowered 30s -> 2s, it renews at once and keeps its slot for 3 TTLs), its task lease carries the
  // new TTL, and a later up without --ttl keeps it.
  SwarmWorkspace ws({.up_args = {"--ttl", "30s"}});
  auto started = ws.root() / "started";
  Process run(ws.command({"run", "--slot", "s", "--task", "T-1", "--", "sh", "-c",
                          "touch " + started.string() + "; sleep 60"}));
  REQUIRE(eventually([&] { return fs::exists(started); }));
  REQUIRE(eventually([&] { return number(session_of(ws, "s"), "agent_pid") > 0; }));
  auto lowered = ws.swarm({"up", "--ttl", "2s", "--json"});
  REQUIRE_MESSAGE(lowered.exit == 0, lowered.err);
  CHECK(number(json_of(lowered), "ttl_seconds") == 2);
  CHECK(number(json_of(lowered), "ttl_was_seconds") == 30);
  for (int i = 0; i < 6; ++i) {
    std::this_thread::sleep_for(1s);
    CHECK(state_of(ws, "s") != "");
  }
  CHECK(eventually([&] {
    return ws.swarm({"lease", "show", "task.T-1", "--json"}).out.find("\"ttl_ms\":2000") != std::string::npos;
  }, 5s));
  auto again = ws.swarm({"up", "--json"});
  CHECK(number(json_of(again), "ttl_seconds") == 2);
  auto raised = ws.swarm({"up", "--ttl", "1m"});
  CHECK(raised.exit == 0);
  CHECK(raised.out.find("changed from 2s") != std::string::npos);
  CHECK(ws.swarm({"status", "--json"}).out.find("\"ttl_seconds\":60") != std::string::npos);
  CHECK(state_of(ws, "s") == "fresh");
  run.signal(SIGTERM);
  run.wait(15s);
}

TEST_CASE("Run_TheSlotIsTheRunsWhileItsAgentLives") {
  // a join --force, a second run, a close and doctor --fix of this host leave a running slot alone (exit 3 naming
  // the run, or a note); another host's join is exit 5 as ever.
  SwarmWorkspace ws;
  auto started = ws.root() / "started";
  Process run(ws.command({"run", "--slot", "s", "--task", "T-1", "--", "sh", "-c",
                          "touch " + started.string() + "; sleep 60"}));
  REQUIRE(eventually([&] { return fs::exists(started); }));
  REQUIRE(eventually([&] { return number(session_of(ws, "s"), "agent_pid") > 0; }));
  auto forced = ws.swarm({"join", "--slot", "s", "--task", "T-1", "--force"});
  CHECK(forced.exit == 3);
  CHECK(forced.err.find("swarm run") != std::string::npos);
  auto second = ws.swarm({"run", "--slot", "s", "--task", "T-1", "--force", "--", "true"});
  CHECK(second.exit == 3);
  CHECK(ws.swarm({"join", "--slot", "s", "--task", "T-1"}, kHostB).exit == 5);
  auto closed = ws.swarm({"close", "--slot", "s", "--result", "fail"});
  CHECK(closed.exit == 3);
  CHECK(closed.err.find("swarm run") != std::string::npos);
  CHECK(ws.swarm({"doctor", "--fix"}).exit == 0);
  CHECK(state_of(ws, "s") == "fresh");
  CHECK(fs::exists(ws.worktree("s")));
  run.signal(SIGTERM);
  CHECK(run.wait(15s).exit == 143);
}

TEST_CASE("Run_LandsWhatItCommittedAndARefusedLandIsExit3") {
  // --commit MSG --land: the agent's file reaches main; with a CHECK of its own that fails, the land is refused:
  // exit 3, the branch refused in `branches`, swarm.run.v1 says landed false.
  SwarmWorkspace ws;
  auto ok = ws.swarm({"run", "--slot", "a", "--task", "T-1", "--commit", "add a", "--land", "--json", "--", "sh",
                      "-c", "echo a > a.txt"});
  REQUIRE_MESSAGE(ok.exit == 0, ok.err);
  auto doc = last_json_line(ok.out);
  CHECK(field(doc, "result") == "success");
  CHECK(cJSON_IsTrue(cJSON_GetObjectItem(doc.get(), "landed")));
  CHECK(ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "show", "main:a.txt"}).out == "a\n");
  auto refused = ws.swarm({"run", "--slot", "b", "--task", "T-2", "--commit", "add b", "--land", "--json", "--", "sh",
                           "-c", "exit 1", "--", "sh", "-c", "echo b > b.txt"});
  CHECK(refused.exit == 3);
  auto no = last_json_line(refused.out);
  CHECK(cJSON_IsFalse(cJSON_GetObjectItem(no.get(), "landed")));
  CHECK(ws.swarm({"branches"}).out.find("refused") != std::string::npos);
  // A fail is not landed, and run exits as the agent did.
  auto failed = ws.swarm({"run", "--slot", "c", "--task", "T-3", "--land", "--", "sh", "-c", "exit 4"});
  CHECK(failed.exit == 4);
  CHECK(failed.err.find("not landed") != std::string::npos);
}

TEST_CASE("Run_BadUsageIsExit2AndJoinsNothing") {
  SwarmWorkspace ws;
  const std::vector<std::vector<std::string>> bad = {
      {"run", "--slot", "s", "--task", "T-1"},
      {"run", "--slot", "s", "--task", "T-1", "--"},
      {"run", "--slot", "s", "--task", "T-1", "--grace", "2h", "--", "true"},
      {"run", "--slot", "s", "--task", "T-1", "--grace", "soon", "--", "true"},
      {"run", "--slot", "s", "--task", "T-1", "--land", "--keep", "--", "true"},
      {"run", "--slot", "s", "--task", "T-1", "--commit", "", "--", "true"},
      {"run", "--slot", "s", "--task", "T-1", "--", "no-such-agent-anywhere"},
      {"run", "--slot", "s", "--task", "T-1", "--land", "--", "no-such-check", "--", "true"},
      {"run", "--slot", "-s", "--task", "T-1", "--", "true"},
  };
  for (const auto& args : bad) {
    auto r = ws.swarm(args);
    const std::string said = args.back() + ": " + r.err;
    CHECK_MESSAGE(r.exit == 2, said);
    CHECK_FALSE(r.err.empty());
  }
  CHECK(ws.swarm({"status"}).out.find("no sessions") != std::string::npos);
  CHECK_FALSE(fs::exists(ws.root() / ".swarm/slots/s"));
}

TEST_CASE("Run_OutOfReachStopsTheAgentAndIsExit7") {
  // NATS gone: no renewal gets through, so run stops its agent before the session's deadline and exits 7.
  SwarmWorkspace ws({.up_args = {"--ttl", "3s"}});
  auto pid_file = ws.root() / "agent.pid";
  Process run(ws.command({"run", "--slot", "s", "--task", "T-1", "--", "sh", "-c",
                          "trap '' TERM; echo $$ > " + pid_file.string() + "; sleep 60"}));
  const std::string pid = first_line_of(pid_file);
  REQUIRE(!pid.empty());
  REQUIRE(eventually([&] { return number(session_of(ws, "s"), "agent_pid") > 0; }));
  const auto stopped_at = std::chrono::steady_clock::now();
  ws.server()->stop();
  // The agent is gone within a TTL of the last renewal (the session's deadline); run says so after (its journal
  // write waits out --timeout on the way).
  CHECK(eventually([&] { return process_gone(static_cast<pid_t>(std::stol(pid))); }, 10s));
  CHECK(std::chrono::steady_clock::now() - stopped_at < 3s + 500ms);
  auto r = run.wait(30s);
  CHECK(r.exit == 7);
  CHECK(r.err.find("unreachable") != std::string::npos);
}

TEST_CASE("Run_TheTerminalsSuspendStopsRunAndItsAgentAsAJob") {
  // on a pty: ^Z stops the agent, and run with it (the shell's job is seen stopped, the terminal back with run's
  // group); SIGCONT to run (a shell's fg) continues both with the terminal the agent's again: ^C then ends it.
  SwarmWorkspace ws;
  auto started = ws.root() / "started";
  OnATerminal run(ws, "job", "echo $$ > " + started.string() + "; sleep 60");
  REQUIRE(run.started());
  std::string agent;
  REQUIRE(eventually([&] {
    run.seen();
    agent = first_line_of(started, 10ms);
    return !agent.empty() && number(session_of(ws, "job"), "agent_pid") > 0;
  }));
  const pid_t agent_pid = static_cast<pid_t>(std::stol(agent));
  REQUIRE(run.type('\x1a'));
  std::optional<int> status;
  CHECK(eventually([&] { return (status = run.changed(true)).has_value() && WIFSTOPPED(*status); }));
  CHECK(process_state(agent_pid) == 'T');
  CHECK(::tcgetpgrp(run.terminal()) == ::getpgid(run.pid()));  // the terminal is run's group's again
  ::kill(run.pid(), SIGCONT);
  CHECK(eventually([&] {
    run.seen();
    return process_state(agent_pid) != 'T' && ::tcgetpgrp(run.terminal()) != ::getpgid(run.pid());
  }));
  REQUIRE(run.type('\x03'));
  REQUIRE(eventually([&] { return (status = run.changed()).has_value(); }));
  REQUIRE(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 130);
}

TEST_CASE("Run_AKeptSlotAndAFinishingRunAreNotTakenForDead") {
  // --keep: the agent and the run are gone, the slot stays open and fresh (not dead); a run killed before it
  // named its agent is dead at once all the same (its own start time is in the record from the join).
  SwarmWorkspace ws({.up_args = {"--ttl", "1m"}});
  REQUIRE(ws.swarm({"run", "--slot", "kept", "--task", "T-1", "--keep", "--", "true"}).exit == 0);
  CHECK(state_of(ws, "kept") == "fresh");
  CHECK(ws.swarm({"doctor"}).out.find("dead_session") == std::string::npos);
  CHECK(ws.swarm({"join", "--slot", "kept", "--task", "T-1"}).exit == 3);  // live: only with --force
  auto env = kHostA;
  env["SWARM_TEST_RUN_STOP"] = "joined";
  Process run(ws.command({"run", "--slot", "early", "--task", "T-2", "--", "sleep", "60"}, env));
  REQUIRE(eventually([&] { return process_state(run.pid()) == 'T'; }));
  run.signal(SIGKILL);
  run.wait(5s);
  CHECK(eventually([&] { return state_of(ws, "early") == "dead"; }, 2s));
}

TEST_CASE("Run_TheAgentGetsItsOwnVariablesAndARelativePathIsTheCallers") {
  // ./agent.sh is the current folder's (not the worktree's); a caller's SWARM_FENCING_TOKEN and SWARM_PORTS do
  // not reach the agent; an agent that ends 0 after a SIGTERM to run closes as success (--no-artifact: it commits
  // nothing).
  SwarmWorkspace ws;
  const auto script = ws.root() / "agent.sh";
  {
    std::ofstream out(script);
    out << "#!/bin/sh\nenv | grep '^SWARM_' | sort > \"$SWARM_WORKSPACE/seen\"\ntrap 'exit 0' TERM\n"
           "touch \"$SWARM_WORKSPACE/started\"\nsleep 60 & wait\n";
  }
  fs::permissions(script, fs::perms::owner_all);
  auto env = kHostA;
  env["SWARM_FENCING_TOKEN"] = "7";
  env["SWARM_PORTS"] = "4";
  Process run(ws.command({"run", "--slot", "s", "--task", "T-1", "--no-artifact", "--", "./agent.sh"}, env));
  REQUIRE(eventually([&] { return fs::exists(ws.root() / "started"); }));
  REQUIRE(eventually([&] { return number(session_of(ws, "s"), "agent_pid") > 0; }));
  std::ifstream in(ws.root() / "seen");
  const std::string seen{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  CHECK(seen.find("SWARM_SLOT=s") != std::string::npos);
  CHECK(seen.find("SWARM_TASK=T-1") != std::string::npos);
  CHECK(seen.find("SWARM_FENCING_TOKEN") == std::string::npos);
  CHECK(seen.find("SWARM_PORTS") == std::string::npos);
  run.signal(SIGTERM);
  auto r = run.wait(15s);
  CHECK(r.exit == 0);
  CHECK(r.err.find("closed as success") != std::string::npos);
}
