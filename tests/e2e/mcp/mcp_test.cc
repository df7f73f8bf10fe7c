// swarm mcp through the real binary, on both server legs (the SDK's own
// sessions are tests/mcp/sdk_session.py): the three front ends (the command
// line, serve's /api, mcp's structuredContent) hand out the same documents;
// tools/list stays small; nothing but protocol reaches stdout; --slot fills
// in a call's slot.
#include <doctest/doctest.h>

#include <functional>
#include <set>
#include <sstream>

#include "e2e/serve_fixture.h"
#include "e2e/swarm_fixture.h"
#include "support/eventually.h"
#include "support/json_fields.h"

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// `swarm mcp ARGS...` fed `lines` (an initialize first), its input closed
// once it answered as many messages as the lines have ids (at most 30 s: the
// server stops calls still running when its client goes): every JSON
// message it wrote, by id.
std::map<int, swarm::Json> mcp_session(const SwarmWorkspace& ws, const std::vector<std::string>& lines,
                                       const std::vector<std::string>& args = {}, std::string* raw = nullptr,
                                       const std::map<std::string, std::string>& env = kHostA) {
  TempDir dir("swarm-mcp-in");
  std::string input =
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},)"
      R"("clientInfo":{"name":"test","version":"1"}}})"
      "\n";
  int answers = 1;
  for (const auto& l : lines) {
    input += l + "\n";
    if (l.find("\"id\":") != std::string::npos) ++answers;
  }
  write_file(dir.path() / "in", input);
  std::vector<std::string> argv = {"mcp"};
  argv.insert(argv.end(), args.begin(), args.end());
  Command c = ws.command(argv, env);
  std::vector<std::string> wrapped = {
      "/bin/sh", "-c",
      "out=$SWARM_TEST_INPUT.out; : > \"$out\"\n"
      "{ cat \"$SWARM_TEST_INPUT\"; i=0\n"
      "  while [ \"$(grep -c '\"id\":' \"$out\")\" -lt \"$SWARM_TEST_ANSWERS\" ] && [ $i -lt 600 ]; do\n"
      "    sleep 0.05; i=$((i+1)); done; } | \"$@\" > \"$out\"\n"
      "rc=$?; cat \"$out\"; exit $rc",
      "sh"};
  wrapped.insert(wrapped.end(), c.args.begin(), c.args.end());
  c.args = wrapped;
  c.env["SWARM_TEST_INPUT"] = (dir.path() / "in").string();
  c.env["SWARM_TEST_ANSWERS"] = std::to_string(answers);
  auto r = run(c, 120s);
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  if (raw != nullptr) *raw = r.out;
  std::map<int, swarm::Json> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    auto j = swarm::Json::parse(line);
    REQUIRE_MESSAGE(j, "not JSON on stdout: " << line);
    const cJSON* id = cJSON_GetObjectItemCaseSensitive(j.get(), "id");
    if (cJSON_IsNumber(id)) out[static_cast<int>(id->valuedouble)] = std::move(j);
  }
  return out;
}

std::string call(int id, const std::string& tool, const std::string& arguments = "{}") {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"tools/call","params":{"name":")" + tool +
         R"(","arguments":)" + arguments + "}}";
}

const cJSON* result_of(const std::map<int, swarm::Json>& by_id, int id) {
  auto it = by_id.find(id);
  REQUIRE(it != by_id.end());
  return cJSON_GetObjectItemCaseSensitive(it->second.get(), "result");
}

// A document without what moves between two reads of it (ages, times left).
std::string steady(const cJSON* doc) {
  swarm::Json copy = swarm::Json::copy(doc);
  std::function<void(cJSON*)> strip = [&](cJSON* node) {
    for (const char* moving : {"age_seconds", "expires_in_seconds", "state"}) cJSON_DeleteItemFromObject(node, moving);
    for (cJSON* child = node ? node->child : nullptr; child != nullptr; child = child->next)
      if (cJSON_IsObject(child) || cJSON_IsArray(child)) strip(child);
  };
  strip(copy.get());
  return copy.dump();
}

}  // namespace

TEST_CASE("Mcp_TheThreeFrontEndsHandOutTheSameDocuments") {
  // for every verb that has a --json document, an /api path and a tool (status, task list, holds, lease list,
  // branches): the three are the same document (ages aside).
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"task", "add", "A task", "--id", "T-1"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "s1", "--task", "T-1"}).exit == 0);
  REQUIRE(ws.swarm({"hold", "--slot", "s1", "src/**", "--reason", "api"}).exit == 0);
  REQUIRE(ws.swarm({"lease", "acquire", "job", "--ttl", "1m"}).exit == 0);
  Served served(ws);
  const std::vector<std::tuple<std::string, std::vector<std::string>, std::string>> fronts = {
      {"status", {"status", "--json"}, "/api/status"},
      {"task_list", {"task", "list", "--json"}, "/api/tasks"},
      {"holds", {"holds", "--json"}, "/api/holds"},
      {"lease_list", {"lease", "list", "--json"}, "/api/leases"},
      {"branches", {"branches", "--json"}, "/api/branches"}};
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < fronts.size(); ++i) lines.push_back(call(static_cast<int>(i) + 1, std::get<0>(fronts[i])));
  // The view has caught up with what was written before it started.
  REQUIRE(eventually_body(served, "/api/holds", [](const std::string& b) { return b.find("src/**") != std::string::npos; }));
  const auto by_id = mcp_session(ws, lines, {"--tools", "all"});
  for (std::size_t i = 0; i < fronts.size(); ++i) {
    const auto& [tool, verb, path] = fronts[i];
    CAPTURE(tool);
    const cJSON* result = result_of(by_id, static_cast<int>(i) + 1);
    REQUIRE(result != nullptr);
    CHECK_FALSE(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "isError")));
    const std::string from_mcp = steady(cJSON_GetObjectItemCaseSensitive(result, "structuredContent"));
    auto cli = ws.swarm(verb);
    REQUIRE(cli.exit == 0);
    const std::string from_cli = steady(json_of(cli).get());
    std::string from_api;
    eventually([&] {
      auto r = served.get(path);  // branches: 503 while they are first read
      if (!r || r->status != 200) return false;
      auto api = swarm::Json::parse(r->body);
      from_api = api ? steady(api.get()) : "";
      return from_api == from_cli;
    }, 10s);
    INFO("cli: " << from_cli << "\napi: " << from_api << "\nmcp: " << from_mcp);
    CHECK(from_mcp == from_cli);
    CHECK(from_api == from_cli);
  }
}

TEST_CASE("Mcp_ToolsListIsSmallAndNothingButProtocolReachesStdout") {
  // tools/list of the core set stays under 10 KB (it costs an agent's context: 16 tools); every line of stdout is a
  // JSON-RPC message, also when a verb prints warnings or fails; --slot fills in a call's slot.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s1", "--task", "T-1"}).exit == 0);
  std::string raw;
  const auto by_id = mcp_session(ws,
                                 {R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})", call(2, "renew"),
                                  call(3, "close", R"({"result":"success"})"), call(4, "hold", R"({"pattern":["/abs"]})")},
                                 {"--slot", "s1"}, &raw);
  const cJSON* listed = result_of(by_id, 1);
  CHECK(std::string(cJSON_PrintUnformatted(listed)).size() < 10240);
  CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(listed, "tools")) >= 16);
  // renew with no slot named: the server's --slot.
  const cJSON* renewed = result_of(by_id, 2);
  CHECK_FALSE(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(renewed, "isError")));
  CHECK(text_of(cJSON_GetObjectItemCaseSensitive(renewed, "structuredContent"), "slot") == "s1");
  // close --result success without a commit: an error result carrying swarm.error.v1 and the verb's message.
  const cJSON* refused = result_of(by_id, 3);
  CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(refused, "isError")));
  const cJSON* error = cJSON_GetObjectItemCaseSensitive(refused, "structuredContent");
  CHECK(text_of(error, "schema") == "swarm.error.v1");
  CHECK(number_of(error, "exit") == 3);
  // A bad pattern is the verb's exit 2, as an error result.
  CHECK(number_of(cJSON_GetObjectItemCaseSensitive(result_of(by_id, 4), "structuredContent"), "exit") == 2);
  std::istringstream lines(raw);
  for (std::string line; std::getline(lines, line);) {
    auto j = swarm::Json::parse(line);
    REQUIRE(j);
    CHECK(text_of(j.get(), "jsonrpc") == "2.0");
  }
  // The all set is larger, and says so.
  const auto all = mcp_session(ws, {R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})"}, {"--tools", "all"});
  CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(result_of(all, 1), "tools")) >
        cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(listed, "tools")));
}

TEST_CASE("Mcp_OddRequestsNeverReachTheProtocolOrAVerbTheyShouldNot") {
  // a verb reading its stdin reads nothing (never the requests after it); a large id comes back whole; a lock's
  // name that looks like an option is refused before anything runs; a notification with bad params gets no
  // answer; credentials from the environment never become arguments; --slot names the inbox too.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s1", "--task", "T-1"}).exit == 0);
  auto env = kHostA;
  env["NATS_TOKEN"] = "not-needed-here";
  std::string raw;
  const auto by_id = mcp_session(
      ws,
      {call(1, "send", R"({"to":"x","from":"y","text":["-"]})"), R"({"jsonrpc":"2.0","id":2,"method":"ping"})",
       call(3, "status"), R"({"jsonrpc":"2.0","id":9007199254740991,"method":"ping"})",
       R"({"jsonrpc":"2.0","method":"notifications/initialized","params":[1]})",
       call(4, "lock", R"({"name":"--holder","command":["n","--nats-url=nats://127.0.0.1:1","true"]})"),
       call(5, "inbox")},
      {"--slot", "s1", "--tools", "all"}, &raw, env);
  CAPTURE(raw);
  CHECK(by_id.count(2) == 1);
  CHECK_FALSE(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result_of(by_id, 3), "isError")));
  CHECK(raw.find("\"id\":9007199254740991,") != std::string::npos);
  auto lock = by_id.find(4);
  REQUIRE(lock != by_id.end());
  CHECK(number_of(cJSON_GetObjectItemCaseSensitive(lock->second.get(), "error"), "code") == -32602);
  CHECK_FALSE(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result_of(by_id, 5), "isError")));  // as s1
  CHECK(raw.find("\"id\":null") == std::string::npos);  // the notification got no answer
  // Nothing of the protocol reached x's inbox.
  auto inbox = ws.swarm({"inbox", "--as", "x", "--json"});
  CHECK(inbox.out.find("jsonrpc") == std::string::npos);
}

TEST_CASE("Mcp_TheCoreSetIsTheContractsWithTaskNextAskAndBlobGet") {
  // The core set is the contract's: status, join, commit, sync, close, renew, task_list, task_next, send, inbox,
  // ack, hold, land, log, ask, blob_get. task_next claims the most urgent ready task for the server's --slot (join
  // --next) and hands out join's handle; it takes no task of its own. blob_get returns a blob's text; ask with
  // nobody to answer is exit 4 as an error result.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"task", "add", "Later", "--id", "T-low", "--priority", "3"}).exit == 0);
  REQUIRE(ws.swarm({"task", "add", "First", "--id", "T-high", "--priority", "0"}).exit == 0);
  write_file(ws.root() / "note.txt", "a note for the reviewer\n");
  auto put = ws.swarm({"blob", "put", (ws.root() / "note.txt").string()});
  REQUIRE(put.exit == 0);
  const std::string sha = put.out.substr(0, 64);
  const auto by_id = mcp_session(ws,
                                 {R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})", call(2, "task_next"),
                                  call(3, "blob_get", R"({"sha256":")" + sha + R"("})"),
                                  call(4, "ask", R"({"to":"lead","wait":"300ms","text":["anyone?"]})")},
                                 {"--slot", "s1"});
  const cJSON* listed = result_of(by_id, 1);
  std::set<std::string> names;
  const cJSON* tool = nullptr;
  const cJSON* next_schema = nullptr;
  cJSON_ArrayForEach(tool, cJSON_GetObjectItemCaseSensitive(listed, "tools")) {
    names.insert(text_of(tool, "name"));
    if (text_of(tool, "name") == "task_next") next_schema = cJSON_GetObjectItemCaseSensitive(tool, "inputSchema");
  }
  const std::set<std::string> core = {"status", "join",  "commit", "sync", "close", "renew", "task_list", "task_next",
                                      "send",   "inbox", "ack",    "hold", "land",  "log",   "ask",       "blob_get"};
  CHECK(names == core);
  CHECK(std::string(cJSON_PrintUnformatted(listed)).size() < 10240);
  REQUIRE(next_schema != nullptr);
  const cJSON* props = cJSON_GetObjectItemCaseSensitive(next_schema, "properties");
  CHECK(cJSON_GetObjectItemCaseSensitive(props, "task") == nullptr);
  CHECK(cJSON_GetObjectItemCaseSensitive(props, "next") == nullptr);
  CHECK(cJSON_GetObjectItemCaseSensitive(props, "label") != nullptr);
  const cJSON* claimed = result_of(by_id, 2);
  CHECK_FALSE(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(claimed, "isError")));
  const cJSON* doc = cJSON_GetObjectItemCaseSensitive(claimed, "structuredContent");
  CHECK(text_of(doc, "slot") == "s1");
  CHECK(text_of(doc, "task_id") == "T-high");
  CHECK(text_of(cJSON_GetObjectItemCaseSensitive(doc, "handle"), "kind") == "session");
  CHECK(ws.swarm({"task", "show", "T-high", "--json"}).out.find("\"state\":\"working\"") != std::string::npos);
  const cJSON* blob = cJSON_GetObjectItemCaseSensitive(result_of(by_id, 3), "structuredContent");
  CHECK(text_of(blob, "text") == "a note for the reviewer\n");
  CHECK(text_of(blob, "sha256") == sha);
  const cJSON* asked = result_of(by_id, 4);
  CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(asked, "isError")));
  CHECK(number_of(cJSON_GetObjectItemCaseSensitive(asked, "structuredContent"), "exit") == 4);
}
