// `swarm status` for people: it fits the terminal, sorts names naturally,
// sums up, filters, colours only a terminal, and --watch draws in place on
// the alternate screen and gives the terminal back. Terminals are real
// pseudo-terminals (util-linux `script`).
#include <doctest/doctest.h>

#include <sstream>

#include "e2e/swarm_fixture.h"
#include "kv/bucket.h"
#include "kv/connection.h"
#include "swarm/base/text.h"

using namespace testing;

namespace {

// 50 sessions with long task ids on 3 hosts with long names, written as records.
void fifty_sessions(SwarmWorkspace& ws) {
  auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
  auto bucket = kv::Bucket::open(connection, ws.names().sessions);
  for (int i = 1; i <= 50; ++i) {
    const std::string slot = "agent-" + std::to_string(i);
    const std::string host = "build-host-with-a-long-name-" + std::to_string(i % 3);
    bucket.create(slot, R"({"slot":")" + slot + R"(","task_id":"a-long-task-id-from-the-tracker-)" + std::to_string(i) +
                            R"(","agent_id":"a","host":")" + host + R"(","host_id":"x)" + std::to_string(i % 3) +
                            R"(","leaf_pid":1,"started_at":"2026-11-24T00:00:00.000Z","last_renewed":"2026-11-24T00:00:00.000Z"})");
  }
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Runs `command` (a shell line) on a pseudo-terminal of `columns` x 24.
RunResult on_a_terminal(const SwarmWorkspace& ws, const std::string& command, int columns,
                        const std::map<std::string, std::string>& env = {}) {
  const std::string line = "stty cols " + std::to_string(columns) + " rows 24; " + command;
  Command c{{"/usr/bin/script", "-qefc", line, "/dev/null"}, env, ws.root()};
  c.env["SWARM_WORKSPACE"] = ws.root().string();
  c.env["SWARM_HOST"] = "host-a";
  c.env["SWARM_HOST_ID"] = "id-a";
  c.env["TERM"] = "xterm";
  return run(c, std::chrono::seconds(30));
}

}  // namespace

TEST_CASE("StatusForPeople_FitsSortsNaturallyAndSumsUp") {
  SwarmWorkspace ws;
  fifty_sessions(ws);
  auto env = kHostA;
  env["COLUMNS"] = "80";
  auto status = ws.swarm({"status"}, env);
  REQUIRE(status.exit == 0);
  const auto lines = lines_of(status.out);
  // The header, 50 rows, a note for each (these records have no task lease), the summary.
  REQUIRE(lines.size() == 102);
  for (const auto& l : lines) CHECK_MESSAGE(swarm::display_width(l) <= 80, l);
  // The slot is never cut; task and host are, with an ellipsis.
  CHECK(lines[1].rfind("agent-1 ", 0) == 0);
  CHECK(lines[2].rfind("agent-2 ", 0) == 0);  // natural order: agent-2 before agent-10
  CHECK(lines[10].rfind("agent-10 ", 0) == 0);
  CHECK(lines[50].rfind("agent-50 ", 0) == 0);
  CHECK(status.out.find("\xE2\x80\xA6") != std::string::npos);
  CHECK(lines.back() == "50 sessions: 50 fresh, 0 late, 0 stale; 3 hosts");
  CHECK(status.out.find("\033[") == std::string::npos);  // no colour into a pipe

  // Wide enough: nothing cut.
  env["COLUMNS"] = "300";
  CHECK(ws.swarm({"status"}, env).out.find("\xE2\x80\xA6") == std::string::npos);

  // Filters, in text and JSON.
  auto host0 = ws.swarm({"status", "--host", "build-host-with-a-long-name-0", "--json"});
  auto doc = json_of(host0);
  CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc.get(), "sessions")) == 16);
  auto stale = ws.swarm({"status", "--state", "stale"});
  CHECK(stale.out == "no sessions\n");
  CHECK(ws.swarm({"status", "--state", "rotten"}).exit == 2);
  auto fresh = ws.swarm({"status", "--state", "fresh", "--state", "late", "--host", "build-host-with-a-long-name-1"});
  CHECK(lines_of(fresh.out).back() == "17 sessions: 17 fresh, 0 late, 0 stale; 1 host");
}

TEST_CASE("StatusForPeople_ColourOnATerminalOnlyAndWatchGivesTheTerminalBack") {
  if (::access("/usr/bin/script", X_OK) != 0) FAIL("util-linux script is not installed");
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "render", "--task", "T-42"}).exit == 0);
  const std::string bin = SWARM_BINARY;
  auto colour = on_a_terminal(ws, bin + " status", 80);
  CHECK(colour.out.find("\033[32mfresh\033[0m") != std::string::npos);
  auto plain = on_a_terminal(ws, "NO_COLOR=1 " + bin + " status", 80);
  CHECK(plain.out.find("\033[32m") == std::string::npos);
  CHECK(plain.out.find("fresh") != std::string::npos);

  // --watch: on the alternate screen, drawn in place (no clearing of the
  // scrollback), and the screen and cursor given back when a signal ends it.
  auto watched = on_a_terminal(ws, "timeout --preserve-status -s INT 2 " + bin + " status --watch; echo exit=$?", 80);
  const auto enter = watched.out.find("\033[?1049h");
  const auto leave = watched.out.find("\033[?1049l");
  REQUIRE(enter != std::string::npos);
  REQUIRE(leave != std::string::npos);
  CHECK(enter < watched.out.find("render"));
  CHECK(watched.out.find("render", enter) < leave);
  CHECK(watched.out.find("\033[?25h", enter) < leave + 1);  // the cursor back
  CHECK(watched.out.find("\033[2J") == std::string::npos);  // redrawn in place, not cleared and scrolled
  CHECK(watched.out.find("exit=0") != std::string::npos);
}
