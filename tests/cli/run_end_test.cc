// How `swarm run` says its agent ended, through the real binary: a signal
// that ended the agent is `signalled` (never read as an exit of 128 + n),
// an exit of the agent's own is `exited`, whatever its number.
#include <doctest/doctest.h>

#include "cli/swarm_fixture.h"

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

