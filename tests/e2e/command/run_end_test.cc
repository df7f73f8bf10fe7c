// How `swarm run` says its agent ended, through the real binary: a signal
// that ended the agent is `signalled` (never read as an exit of 128 + n),
// an exit of the agent's own is `exited`, whatever its number.
#include <doctest/doctest.h>

#include "e2e/swarm_fixture.h"

using namespace testing;
using namespace std::chrono_literals;

namespace {

// The last line of stdout parsed (swarm.run.v1 comes after what AGENT printed).
swarm::Json last_json_line(const std::string& out) {
  std::string text = out;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const auto at = text.rfind('\n');
  return swarm::Json::parse(at == std::string::npos ? text : text.substr(at + 1));
}

}  // namespace

TEST_CASE("RunEnd_AnAgentKilledByASignalIsSignalledAndAnExitOf137IsExited") {
  // sh killing itself with SIGKILL (as the OOM killer would): exit 137, ended signalled, and the text says a
  // signal ended it. sh exiting 137 by itself: exit 137 too, ended exited. Both close the slot as fail.
  SwarmWorkspace ws;
  auto killed = ws.swarm({"run", "--slot", "k", "--task", "T-1", "--json", "--", "sh", "-c", "kill -KILL $$"});
  CHECK(killed.exit == 137);
  auto doc = last_json_line(killed.out);
  REQUIRE_MESSAGE(doc, killed.out);
  CHECK(field(doc, "schema") == "swarm.run.v1");
  CHECK(field(doc, "ended") == "signalled");
  CHECK(number(doc, "exit") == 137);
  CHECK(field(doc, "result") == "fail");
  auto said = ws.swarm({"run", "--slot", "t", "--task", "T-2", "--", "sh", "-c", "kill -TERM $$"});
  CHECK(said.exit == 143);
  CHECK_MESSAGE(said.err.find("signal 15 ended it") != std::string::npos, said.err);
  auto exited = ws.swarm({"run", "--slot", "e", "--task", "T-3", "--json", "--", "sh", "-c", "exit 137"});
  CHECK(exited.exit == 137);
  auto own = last_json_line(exited.out);
  REQUIRE_MESSAGE(own, exited.out);
  CHECK(field(own, "ended") == "exited");
  CHECK(number(own, "exit") == 137);
  CHECK(field(own, "result") == "fail");
  auto text = ws.swarm({"run", "--slot", "f", "--task", "T-4", "--", "sh", "-c", "exit 130"});
  CHECK(text.exit == 130);
  CHECK_MESSAGE(text.err.find("it exited 130") != std::string::npos, text.err);
}

namespace {

swarm::Json task_of(const SwarmWorkspace& ws, const std::string& id) {
  auto r = ws.swarm({"task", "show", id, "--json"});
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  return json_of(r);
}

}  // namespace

TEST_CASE("RunEnd_AnExitZeroWithNoCommitFollowsClosesArtifactRule") {
  // close's artifact rule, for run: AGENT exits 0 having committed nothing (and --commit had nothing to commit):
  // closed as fail saying so, exit 3, the task open again with an attempt more. --no-artifact: a success. A
  // commit of the agent's own, or --commit's, is a success. --no-artifact with --keep is exit 2.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"task", "add", "Nothing to do", "--id", "T-1"}).exit == 0);
  auto idle = ws.swarm({"run", "--slot", "a", "--task", "T-1", "--json", "--", "true"});
  CHECK(idle.exit == 3);
  auto doc = last_json_line(idle.out);
  REQUIRE_MESSAGE(doc, idle.out);
  CHECK(field(doc, "result") == "fail");
  CHECK(field(doc, "ended") == "exited");
  CHECK(number(doc, "exit") == 0);
  CHECK(field(doc, "why").find("without a commit") != std::string::npos);
  auto t = task_of(ws, "T-1");
  CHECK(field(t, "state") == "open");
  CHECK(number(t, "attempts") == 1);
  CHECK(field(t, "result").find("without a commit") != std::string::npos);
  CHECK(ws.swarm({"log", "--slot", "a", "--kind", "close", "--json"}).out.find("\"why\":") != std::string::npos);
  auto said = ws.swarm({"run", "--slot", "a", "--task", "T-1", "--commit", "nothing", "--", "true"});
  CHECK(said.exit == 3);
  CHECK_MESSAGE(said.err.find("closed as fail: the agent exited 0 without a commit") != std::string::npos, said.err);
  CHECK(number(task_of(ws, "T-1"), "attempts") == 2);
  auto allowed = ws.swarm({"run", "--slot", "a", "--task", "T-1", "--no-artifact", "--json", "--", "true"});
  CHECK_MESSAGE(allowed.exit == 0, allowed.err);
  CHECK(field(last_json_line(allowed.out), "result") == "success");
  CHECK(field(task_of(ws, "T-1"), "state") == "approved");
  REQUIRE(ws.swarm({"task", "add", "Write b", "--id", "T-2"}).exit == 0);
  auto own = ws.swarm({"run", "--slot", "b", "--task", "T-2", "--json", "--", "sh", "-c",
                       "echo b > b.txt && git add b.txt && git -c user.name=a -c user.email=a@a commit -qm b"});
  CHECK_MESSAGE(own.exit == 0, own.err);
  CHECK(field(last_json_line(own.out), "result") == "success");
  REQUIRE(ws.swarm({"task", "add", "Write c", "--id", "T-3"}).exit == 0);
  auto committed = ws.swarm({"run", "--slot", "c", "--task", "T-3", "--commit", "c", "--", "sh", "-c", "echo c > c.txt"});
  CHECK_MESSAGE(committed.exit == 0, committed.err);
  CHECK(field(task_of(ws, "T-3"), "state") == "approved");
  CHECK(ws.swarm({"run", "--slot", "d", "--task", "T-4", "--no-artifact", "--keep", "--", "true"}).exit == 2);
}
