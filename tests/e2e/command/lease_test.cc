// swarm lease, lock and elect through the real binary: tokens, the line,
// signals, a lost lease, a dead leader.
#include <doctest/doctest.h>

#include <signal.h>

#include <fstream>
#include <functional>
#include <thread>

#include "e2e/swarm_fixture.h"

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The lease as `lease show --json` reports it (empty when there is none).
swarm::Json shown(const SwarmWorkspace& ws, const std::string& name) {
  auto r = ws.swarm({"lease", "show", name, "--json"});
  if (r.exit != 0) return {};
  auto doc = json_of(r);
  return swarm::Json::copy(cJSON_GetArrayItem(cJSON_GetObjectItem(doc.get(), "leases"), 0));
}

bool process_gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

// Waits until `path` has a line (a command wrote its pid, say).
std::string first_line_of(const fs::path& path, std::chrono::milliseconds limit = 10s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(path);
    std::string line;
    if (std::getline(in, line) && !line.empty()) return line;
    std::this_thread::sleep_for(20ms);
  }
  return {};
}

bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

}  // namespace

TEST_CASE("LeaseVerbs_AcquireRenewReleaseShowList") {
  // acquire prints the token alone; a held lease is exit 3 naming its holder; a token that is not the lease's is
  // exit 3 and changes nothing; show and list are swarm.lease.v1.
  SwarmWorkspace ws;
  auto acquired = ws.swarm({"lease", "acquire", "claim.T-42", "--ttl", "60s", "--holder", "agent-7"});
  REQUIRE_MESSAGE(acquired.exit == 0, acquired.err);
  const std::string token = trimmed(acquired.out);
  CHECK(token.find_first_not_of("0123456789") == std::string::npos);
  auto held = ws.swarm({"lease", "acquire", "claim.T-42"});
  CHECK(held.exit == 3);
  CHECK(held.err.find("held by agent-7") != std::string::npos);
  CHECK(held.out.empty());

  auto lease = shown(ws, "claim.T-42");
  REQUIRE(lease);
  CHECK(field(lease, "state") == "held");
  CHECK(field(lease, "holder") == "agent-7");
  CHECK(std::to_string(static_cast<long long>(number(lease, "token"))) == token);
  CHECK(number(lease, "ttl_ms") == 60000);
  CHECK(number(lease, "expires_in_seconds") > 50);
  CHECK(number(lease, "waiters") == 0);
  auto revision = number(lease, "revision");

  CHECK(ws.swarm({"lease", "renew", "claim.T-42", "--token", "999999"}).exit == 3);
  CHECK(ws.swarm({"lease", "release", "claim.T-42", "--token", "999999"}).exit == 3);
  CHECK(number(shown(ws, "claim.T-42"), "revision") == revision);  // nothing changed
  auto renewed = ws.swarm({"lease", "renew", "claim.T-42", "--token", token});
  CHECK_MESSAGE(renewed.exit == 0, renewed.err);
  CHECK(number(shown(ws, "claim.T-42"), "revision") > revision);

  auto list = ws.swarm({"lease", "list", "--json"});
  REQUIRE(list.exit == 0);
  CHECK(field(json_of(list), "schema") == "swarm.lease.v1");
  CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(json_of(list).get(), "leases")) == 1);
  CHECK(ws.swarm({"lease", "list"}).out.find("claim.T-42") != std::string::npos);

  CHECK(ws.swarm({"lease", "release", "claim.T-42", "--token", token}).exit == 0);
  CHECK(ws.swarm({"lease", "show", "claim.T-42"}).exit == 4);
  // Its token holds nothing any more: exit 3, as the contract says of a token that is no longer the lease's.
  auto stale = ws.swarm({"lease", "renew", "claim.T-42", "--token", token});
  CHECK(stale.exit == 3);
  CHECK(stale.err.find("was released") != std::string::npos);
  CHECK(ws.swarm({"lease", "release", "claim.T-42", "--token", token}).exit == 3);
  CHECK(ws.swarm({"lease", "renew", "never-taken", "--token", token}).exit == 4);
}

TEST_CASE("LeaseVerbs_BadNamesAndTtlsAreExit2AndWriteNothing") {
  // names outside the lease rule and TTLs outside 1s..1h are refused before any I/O.
  SwarmWorkspace ws;
  for (auto args : std::vector<std::vector<std::string>>{{"lease", "acquire", "a..b"},
                                                         {"lease", "acquire", "_wait.x"},
                                                         {"lease", "acquire", "x", "--ttl", "500ms"},
                                                         {"lease", "acquire", "x", "--ttl", "2h"},
                                                         {"lease", "show", "a b"},
                                                         {"lock", "a/b", "--", "true"},
                                                         {"lock", "x", "--ttl", "0", "--", "true"},
                                                         {"lock", "x"},
                                                         {"elect", "x", "--observe", "--resign"},
                                                         {"lease", "renew", "x"}}) {
    auto r = ws.swarm(args);
    CHECK_MESSAGE(r.exit == 2, args[0] << " " << args[1] << ": " << r.err);
  }
  CHECK(ws.swarm({"lease", "list"}).out == "no leases\n");
}

TEST_CASE("Lock_RunsTheCommandWithItsTokenAndExitsWithItsStatus") {
  // CMD gets SWARM_LEASE and SWARM_FENCING_TOKEN; swarm exits with CMD's status, 128+signal when a signal ended it;
  // the lease is released after.
  SwarmWorkspace ws;
  auto r = ws.swarm({"lock", "merge-main", "--", "sh", "-c", "echo $SWARM_LEASE $SWARM_FENCING_TOKEN; exit 7"});
  CHECK(r.exit == 7);
  CHECK(r.out.rfind("merge-main ", 0) == 0);
  CHECK(std::stoull(r.out.substr(11)) > 0);
  CHECK(ws.swarm({"lease", "show", "merge-main"}).exit == 4);
  CHECK(ws.swarm({"lock", "merge-main", "--", "sh", "-c", "kill -9 $$"}).exit == 137);
  auto missing = ws.swarm({"lock", "merge-main", "--", "/no/such/program"});
  CHECK(missing.exit == 2);
  CHECK(missing.err.find("cannot run /no/such/program") != std::string::npos);
  CHECK(ws.swarm({"lease", "show", "merge-main"}).exit == 4);
}

TEST_CASE("Lock_WaitersGoInTheOrderTheyAsked") {
  // four locks asked 150 ms apart while the lease is held run one after the other, in that order.
  SwarmWorkspace ws;
  auto order = ws.root() / "order.txt";
  Process holder(ws.command({"lock", "m", "--", "sh", "-c", "sleep 1"}));
  REQUIRE(wait_until([&] { return ws.swarm({"lease", "show", "m"}).exit == 0; }, 10s));
  std::vector<Process> waiters;
  for (int i = 1; i <= 4; ++i) {
    waiters.emplace_back(ws.command(
        {"lock", "m", "--", "sh", "-c", "echo " + std::to_string(i) + " >> " + order.string() + "; sleep 0.05"}));
    std::this_thread::sleep_for(150ms);
  }
  CHECK(holder.wait().exit == 0);
  for (auto& w : waiters) CHECK(w.wait().exit == 0);
  CHECK(read_file(order) == "1\n2\n3\n4\n");
}

TEST_CASE("Lock_TryOnceAndBoundedWaitWhenHeld") {
  // --wait 0 tries once (exit 3); --wait DUR gives up after it (exit 3) and leaves the line.
  SwarmWorkspace ws;
  Process holder(ws.command({"lock", "m", "--", "sleep", "3"}));
  REQUIRE(wait_until([&] { return ws.swarm({"lease", "show", "m"}).exit == 0; }, 10s));
  auto once = ws.swarm({"lock", "m", "--wait", "0", "--", "true"});
  CHECK(once.exit == 3);
  CHECK(once.err.find("held by") != std::string::npos);
  auto bounded = ws.swarm({"lock", "m", "--wait", "400ms", "--", "true"});
  CHECK(bounded.exit == 3);
  CHECK(bounded.took >= 400ms);
  CHECK(bounded.err.find("left the line") != std::string::npos);
  CHECK(number(shown(ws, "m"), "waiters") == 0);
  holder.signal(SIGTERM);
  CHECK(holder.wait().exit == 128 + SIGTERM);  // forwarded: sleep died of it
}

TEST_CASE("Lock_SignalsLeaveTheLineWhileWaitingAndReachTheCommandWhileRunning") {
  // SIGINT to a waiting lock leaves the line at once (exit 130); SIGTERM to a running one goes to CMD, whose
  // status swarm exits with.
  SwarmWorkspace ws;
  auto started = ws.root() / "started";
  Process holder(ws.command({"lock", "m", "--", "sh", "-c",
                             "trap 'echo got-term; exit 0' TERM; touch " + started.string() +
                                 "; while :; do sleep 0.05; done"}));
  REQUIRE(wait_until([&] { return fs::exists(started); }, 10s));
  Process waiter(ws.command({"lock", "m", "--", "true"}));
  REQUIRE(wait_until([&] { return number(shown(ws, "m"), "waiters") == 1; }, 10s));
  waiter.signal(SIGINT);
  auto w = waiter.wait(5s);
  CHECK(w.exit == 130);
  CHECK(number(shown(ws, "m"), "waiters") == 0);
  holder.signal(SIGTERM);
  auto h = holder.wait(5s);
  CHECK(h.exit == 0);
  CHECK(h.out.find("got-term") != std::string::npos);
  CHECK(ws.swarm({"lease", "show", "m"}).exit == 4);  // released
}

TEST_CASE("Lock_ALostLeaseStopsTheCommandBeforeTheDeadline") {
  // the lease taken from a running lock (an operator's release) stops CMD: SIGTERM, then SIGKILL for one that
  // ignores it, before the deadline; swarm says why on stderr and exits with CMD's status.
  SwarmWorkspace ws;
  auto started = ws.root() / "started";
  Process holder(ws.command({"lock", "m", "--ttl", "3s", "--", "sh", "-c",
                             "trap '' TERM; echo $$ > " + started.string() + "; while :; do sleep 0.05; done"}));
  auto pid = first_line_of(started);
  REQUIRE(!pid.empty());
  auto token = std::to_string(static_cast<long long>(number(shown(ws, "m"), "token")));
  auto released_at = std::chrono::steady_clock::now();
  REQUIRE(ws.swarm({"lease", "release", "m", "--token", token}).exit == 0);
  auto h = holder.wait(10s);
  auto stopped_after = std::chrono::steady_clock::now() - released_at;
  CHECK(h.exit == 128 + SIGKILL);
  CHECK(h.err.find("was lost") != std::string::npos);
  CHECK(stopped_after < 3s);  // within the TTL from the loss
  CHECK(wait_until([&] { return process_gone(static_cast<pid_t>(std::stol(pid))); }, 2s));
}

TEST_CASE("Lock_TheCommandDiesWithSwarm") {
  // swarm SIGKILLed: CMD gets SIGKILL (the parent-death signal); no orphan runs on.
  SwarmWorkspace ws;
  auto started = ws.root() / "started";
  Process holder(ws.command({"lock", "m", "--", "sh", "-c", "echo $$ > " + started.string() + "; sleep 60"}));
  auto pid = first_line_of(started);
  REQUIRE(!pid.empty());
  holder.signal(SIGKILL);
  holder.wait(5s);
  CHECK(wait_until([&] { return process_gone(static_cast<pid_t>(std::stol(pid))); }, 3s));
}

TEST_CASE("Elect_OneLeaderObserversSilentTakeoverAfterKillAndResign") {
  // one candidate leads, the other waits silently; the leader SIGKILLed, the other takes over within TTL + TTL/3;
  // --observe reports the leader, --resign makes it step down.
  SwarmWorkspace ws;
  auto log = ws.root() / "leaders";
  auto candidate = [&](const std::string& who) {
    return Process(ws.command({"elect", "sched", "--ttl", "2s", "--holder", who, "--", "sh", "-c",
                               "echo " + who + " >> " + log.string() + "; exec sleep 60"}));
  };
  Process a = candidate("a");
  REQUIRE(wait_until([&] { return read_file(log) == "a\n"; }, 10s));
  Process b = candidate("b");
  REQUIRE(wait_until([&] { return number(shown(ws, "sched"), "waiters") == 1; }, 10s));
  Process observer(ws.command({"elect", "sched", "--observe"}));
  auto first = observer.read_line(10s);
  REQUIRE(first);
  auto current = swarm::Json::parse(*first);
  CHECK(field(current, "schema") == "swarm.elect.v1");
  CHECK(field(current, "leader") == "a");
  CHECK(field(current, "change") == "current");

  a.signal(SIGKILL);
  auto killed_at = std::chrono::steady_clock::now();
  a.wait(5s);
  REQUIRE(wait_until([&] { return read_file(log) == "a\nb\n"; }, 10s));
  auto takeover = std::chrono::steady_clock::now() - killed_at;
  CHECK(takeover < 2s + 2s / 3 + 1s);  // TTL + a renew period, and the margin
  MESSAGE("took over " << std::chrono::duration_cast<std::chrono::milliseconds>(takeover).count() << " ms after the "
                       << "leader died (TTL 2s)");
  bool saw_b = false, saw_expired = false;
  for (int i = 0; i < 4 && !saw_b; ++i) {
    auto line = observer.read_line(5s);
    if (!line) break;
    auto doc = swarm::Json::parse(*line);
    saw_b = field(doc, "leader") == "b";
    saw_expired = saw_expired || field(doc, "reason") == "expired";  // a's lease ran out
  }
  CHECK(saw_b);
  CHECK(saw_expired);

  auto resign = ws.swarm({"elect", "sched", "--resign", "--json"});
  CHECK_MESSAGE(resign.exit == 0, resign.err);
  CHECK(field(json_of(resign), "resigned") == "b");
  auto ended = b.wait(15s);
  CHECK(ended.exit == 0);  // it stepped down as asked: no failure for a service manager
  CHECK(ended.out.empty());           // candidates are silent on stdout
  CHECK(ws.swarm({"lease", "show", "sched"}).exit == 4);
  observer.signal(SIGINT);
  CHECK(observer.wait(5s).exit == 0);
  CHECK(ws.swarm({"elect", "sched", "--resign"}).exit == 4);  // nobody leads now
}

TEST_CASE("Lock_NothingTheCommandStartedOutlivesTheLease") {
  // what CMD leaves running (a background child that even ignores SIGTERM) is killed when CMD ends, before the
  // lease is released; and a guard killed by hand takes CMD with it.
  SwarmWorkspace ws;
  auto left = ws.root() / "left";
  auto r = ws.swarm({"lock", "bg", "--wait", "0", "--", "sh", "-c",
                     "(trap '' TERM; sleep 60) & echo $! > " + left.string() + "; exit 0"});
  CHECK(r.exit == 0);
  auto pid = first_line_of(left);
  REQUIRE(!pid.empty());
  CHECK(process_gone(static_cast<pid_t>(std::stol(pid))));  // gone when swarm returned, not later

  auto started = ws.root() / "started";
  Process holder(ws.command({"lock", "g", "--", "sh", "-c", "echo $$ > " + started.string() + "; sleep 60"}));
  auto cmd = first_line_of(started);
  REQUIRE(!cmd.empty());
  // The guard is CMD's parent, named swarm-guard.
  auto guard = run({.args = {"/bin/sh", "-c", "ps -o ppid= -p " + cmd}}).out;
  guard.erase(0, guard.find_first_not_of(' '));
  REQUIRE(!guard.empty());
  CHECK(run({.args = {"/bin/sh", "-c", "ps -o comm= -p " + guard}}).out.find("swarm-guard") == 0);
  ::kill(static_cast<pid_t>(std::stol(guard)), SIGKILL);
  CHECK(wait_until([&] { return process_gone(static_cast<pid_t>(std::stol(cmd))); }, 3s));
  holder.wait(5s);
}

TEST_CASE("Lock_TheCommandStartsCleanAndAMissingOneIsExit2BeforeWaiting") {
  // CMD gets no descriptor of swarm's beyond 0-2 and no ignored signal; a command that does not exist is exit 2
  // at once, even while the lease is held (nothing waited for, nothing written).
  SwarmWorkspace ws;
  // (No pipeline in the shell: its pipe would be the shell's own fd 3 for a moment.)
  auto r = ws.swarm({"lock", "clean", "--wait", "0", "--", "sh", "-c",
                     "ls /proc/$$/fd; grep SigIgn /proc/$$/status"});
  REQUIRE(r.exit == 0);
  CHECK(r.out.find("0\n1\n2\nSigIgn") == 0);
  CHECK(r.out.find("SigIgn:\t0000000000000000") != std::string::npos);

  auto held = ws.swarm({"lease", "acquire", "busy", "--ttl", "60s"});
  REQUIRE(held.exit == 0);
  auto revision = number(shown(ws, "busy"), "revision");
  auto missing = ws.swarm({"lock", "busy", "--", "/no/such/command", "x"});
  CHECK(missing.exit == 2);
  CHECK(missing.err.find("/no/such/command") != std::string::npos);
  CHECK(missing.took < 2s);
  auto elect = ws.swarm({"elect", "busy2", "--", "no-such-command-anywhere"});
  CHECK(elect.exit == 2);
  CHECK(elect.err.find("no-such-command-anywhere") != std::string::npos);
  CHECK(number(shown(ws, "busy"), "revision") == revision);  // no waiter's place came and went
  CHECK(number(shown(ws, "busy"), "waiters") == 0);
  CHECK(ws.swarm({"lease", "show", "busy2"}).exit == 4);  // elect wrote nothing
}

TEST_CASE("LeaseVerbs_ATokenThatIsNoNumberIsExit2") {
  // --token takes the decimal number acquire printed: "-1", "+7", "0x47", "0" and too large are exit 2 naming it.
  SwarmWorkspace ws;
  for (std::string bad : {"-1", "+7", "0x47", "0", "18446744073709551617", "abc", ""}) {
    auto r = ws.swarm({"lease", "renew", "t", "--token", bad});
    CHECK_MESSAGE(r.exit == 2, bad);
    const bool named = r.err.find("--token " + bad) != std::string::npos ||
                       (r.err.find("--token") != std::string::npos && r.err.find("'" + bad + "'") != std::string::npos);
    CHECK_MESSAGE(named, bad << ": " << r.err);
  }
}

TEST_CASE("LeaseVerbs_AHolderIsOneLineOfPrintableText") {
  // --holder is shown in tables and JSON: empty, a newline or a tab in it is exit 2 naming it, nothing written.
  SwarmWorkspace ws;
  for (std::string bad : {std::string(), std::string("a\nb"), std::string("a\tb"), std::string(201, 'x')}) {
    auto r = ws.swarm({"lease", "acquire", "h", "--holder", bad});
    CHECK(r.exit == 2);
    CHECK(r.err.find("--holder") != std::string::npos);
    CHECK(ws.swarm({"lock", "h", "--holder", bad, "--", "true"}).exit == 2);
  }
  CHECK(ws.swarm({"lease", "show", "h"}).exit == 4);
  CHECK(ws.swarm({"lease", "acquire", "h", "--holder", "build-bot #3"}).exit == 0);
}

TEST_CASE("Lock_TheCommandComesOnlyAfterDashes") {
  // without "--" CLI11 would read CMD's options as swarm's: `lock x echo --wait 5s` is exit 2 asking for --, and
  // nothing is taken.
  SwarmWorkspace ws;
  auto r = ws.swarm({"lock", "nodash", "echo", "--wait", "5s"});
  CHECK(r.exit == 2);
  CHECK(r.err.find("put -- before the command") != std::string::npos);
  CHECK(ws.swarm({"elect", "nodash", "echo", "hi"}).exit == 2);
  CHECK(ws.swarm({"lease", "show", "nodash"}).exit == 4);
  CHECK(ws.swarm({"lock", "nodash", "--wait", "0", "--", "echo", "--wait", "5s"}).out == "--wait 5s\n");
}

TEST_CASE("Lock_AKilledWaiterOfThisHostHoldsNoOneUp") {
  // a waiter SIGKILLed never leaves the line; its place's TTL would hold others up for that long. A place whose
  // process of this host is gone is dead at once: `--wait 0` is not refused for it, and the waiter behind it is
  // granted within a third of its own TTL, not the dead one's whole TTL.
  SwarmWorkspace ws;
  auto acquire = [&] {
    auto token = ws.swarm({"lease", "acquire", "q", "--ttl", "60s"}).out;
    token.erase(token.find_last_not_of('\n') + 1);
    return token;
  };
  auto token = acquire();
  REQUIRE(!token.empty());
  {
    Process dead(ws.command({"lock", "q", "--ttl", "30s", "--", "true"}));
    REQUIRE(wait_until([&] { return number(shown(ws, "q"), "waiters") == 1; }, 10s));
    dead.signal(SIGKILL);
    dead.wait(5s);
  }
  CHECK(number(shown(ws, "q"), "waiters") == 0);  // its place is there, but not counted
  REQUIRE(ws.swarm({"lease", "release", "q", "--token", token}).exit == 0);
  CHECK(ws.swarm({"lock", "q", "--wait", "0", "--", "true"}).exit == 0);

  token = acquire();
  REQUIRE(!token.empty());
  Process dead(ws.command({"lock", "q", "--ttl", "30s", "--", "true"}));
  REQUIRE(wait_until([&] { return number(shown(ws, "q"), "waiters") >= 1; }, 10s));
  auto ran = ws.root() / "ran";
  Process behind(ws.command({"lock", "q", "--ttl", "9s", "--", "sh", "-c", "echo yes > " + ran.string()}));
  REQUIRE(wait_until([&] { return number(shown(ws, "q"), "waiters") >= 2; }, 10s));
  dead.signal(SIGKILL);
  dead.wait(5s);
  REQUIRE(ws.swarm({"lease", "release", "q", "--token", token}).exit == 0);
  auto released = std::chrono::steady_clock::now();
  CHECK(wait_until([&] { return read_file(ran) == "yes\n"; }, 8s));  // TTL/3 of the waiter behind, not 30 s
  MESSAGE("the waiter behind a killed one ran "
          << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - released).count()
          << " ms after the release");
  behind.wait(10s);
}

TEST_CASE("Lock_TheGuardReapsAsItGoesAndNothingOutOfReachHoldsTheLease") {
  // the guard is the subreaper of what CMD starts: orphans are reaped while CMD runs (no zombies pile up under a
  // long-lived leader); and a member of CMD's group it cannot wait for (a zombie whose parent left with setsid)
  // keeps the lease at most a second after CMD ended.
  SwarmWorkspace ws;
  auto started = ws.root() / "started";
  Process holder(ws.command({"lock", "z", "--", "sh", "-c",
                             "for i in 1 2 3 4 5; do (sleep 0.1 &); done; echo $$ > " + started.string() + "; sleep 3"}));
  auto cmd = first_line_of(started);
  REQUIRE(!cmd.empty());
  std::this_thread::sleep_for(1s);
  auto guard = run({.args = {"/bin/sh", "-c", "ps -o ppid= -p " + cmd}}).out;
  guard.erase(0, guard.find_first_not_of(' '));
  guard.erase(guard.find_last_not_of(" \n") + 1);
  REQUIRE(!guard.empty());
  auto children = run({.args = {"/bin/sh", "-c", "ps -o stat= --ppid " + guard}}).out;
  CHECK_MESSAGE(children.find('Z') == std::string::npos, "children of the guard: " << children);
  CHECK(holder.wait(10s).exit == 0);

  auto r = ws.swarm({"lock", "escaped", "--", "sh", "-c", "(sleep 4 & exec setsid sleep 4) >/dev/null 2>&1 & sleep 0.3; exit 5"});
  CHECK(r.exit == 5);
  CHECK(r.took < 3s);  // not the 4 s of the process out of reach
  MESSAGE("swarm ended " << r.took.count() << " ms after it started");
}

TEST_CASE("Lease_NamesSwarmGivesItselfAreRefusedToHands") {
  // a port block, a task, a land line or a semaphore's part taken by hand would block what swarm does: exit 2
  // naming what takes it, before anything is written (show, list and release still reach them).
  SwarmWorkspace ws;
  for (const std::string name : {"ports.20000-20099", "task.T-1", "land.main", "hold.s.1", "sem.permit.0", "sem.gate"}) {
    CAPTURE(name);
    auto acquire = ws.swarm({"lease", "acquire", name, "--ttl", "1h"});
    CHECK(acquire.exit == 2);
    CHECK(acquire.err.find(name) != std::string::npos);
    CHECK(ws.swarm({"lock", name, "--wait", "0", "--", "true"}).exit == 2);
    CHECK(ws.swarm({"elect", name, "--", "true"}).exit == 2);
  }
  CHECK(ws.swarm({"lease", "acquire", "ports.1-2"}).err.find("join --ports") != std::string::npos);
  CHECK(ws.swarm({"lease", "list", "--json"}).out.find("ports.") == std::string::npos);
  CHECK(ws.swarm({"lease", "acquire", "claim.T-1", "--ttl", "1h"}).exit == 0);
}
