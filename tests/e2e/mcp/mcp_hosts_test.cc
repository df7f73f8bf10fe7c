// docs/mcp.md's configurations of the agent hosts fleets run, taken from the
// page as it is now: every JSON block parses and names `swarm mcp`, the TOML
// block parses (Python's tomllib), and each marked configuration, read and
// started the way its host starts a stdio server (tests/mcp/agent_host.py),
// as the AGENT of a real `swarm run`, acts on the run's slot with calls that
// name none. A host that dropped the variables (Codex without `env_vars`)
// gets nothing done: the check can fail.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "e2e/swarm_fixture.h"
#include "support/json_fields.h"

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

const fs::path kPage = fs::path(SWARM_SOURCE_DIR) / "docs/mcp.md";

// The body of every ```LANG block of docs/mcp.md, in order, with the
// `<!-- host config: NAME -->` line before it ("" when none).
std::vector<std::pair<std::string, std::string>> blocks(const std::string& lang) {
  std::ifstream in(kPage);
  std::vector<std::pair<std::string, std::string>> out;
  std::string line, previous, mark, body;
  bool inside = false;
  while (std::getline(in, line)) {
    if (inside && line == "```") {
      out.emplace_back(mark, body);
      inside = false;
    } else if (inside) {
      body += line + "\n";
    } else if (line == "```" + lang) {
      const std::string prefix = "<!-- host config: ";
      mark = previous.rfind(prefix, 0) == 0 ? previous.substr(prefix.size(), previous.size() - prefix.size() - 4) : "";
      body.clear();
      inside = true;
    }
    if (!line.empty()) previous = line;
  }
  return out;
}

std::string config_of(const std::string& lang, const std::string& host) {
  for (const auto& [mark, body] : blocks(lang))
    if (mark == host) return body;
  FAIL("docs/mcp.md has no ```" << lang << " block marked <!-- host config: " << host << " -->");
  return {};
}

const cJSON* at(const cJSON* node, std::initializer_list<const char*> path) {
  for (const char* key : path) node = cJSON_GetObjectItemCaseSensitive(node, key);
  return node;
}

std::vector<std::string> strings_of(const cJSON* array) {
  std::vector<std::string> out;
  const cJSON* item = nullptr;
  cJSON_ArrayForEach(item, array) out.push_back(cJSON_IsString(item) ? item->valuestring : "?");
  return out;
}

// The environment a test's `swarm run` gives its agent: the built swarm
// first on PATH, as the host finds `command = "swarm"`.
std::map<std::string, std::string> with_swarm_on_path(std::map<std::string, std::string> env) {
  const char* path = std::getenv("PATH");
  env["PATH"] = fs::path(swarm_binary()).parent_path().string() + ":" + (path ? path : "/usr/bin:/bin");
  return env;
}

// `swarm run --slot SLOT --keep -- agent_host.py HOST CONFIG`: the answers
// its server wrote, by id; the run's own result in `ran`.
std::map<int, swarm::Json> host_under_run(const SwarmWorkspace& ws, const std::string& host, const std::string& slot,
                                          const std::string& config, const std::map<std::string, std::string>& env,
                                          RunResult* ran) {
  const fs::path file = ws.home() / (slot + ".config");
  const fs::path answers = ws.home() / (slot + ".jsonl");
  write_file(file, config);
  const fs::path script = fs::path(SWARM_SOURCE_DIR) / "tests/mcp/agent_host.py";
  Command c = ws.command({"run", "--slot", slot, "--task", "T-" + slot, "--keep", "--", "python3", script.string(), host,
                         file.string(), answers.string()},
                        with_swarm_on_path(env));
  for (const auto& [name, value] : env) c.env[name] = value;  // over the fixture's own (XDG_CONFIG_HOME)
  *ran = run(c, 120s);
  std::map<int, swarm::Json> out;
  std::istringstream in(fs::exists(answers) ? read_file(answers) : "");
  for (std::string line; std::getline(in, line);) {
    auto j = swarm::Json::parse(line);
    REQUIRE_MESSAGE(j, "not JSON on the server's stdout: " << line);
    const cJSON* id = cJSON_GetObjectItemCaseSensitive(j.get(), "id");
    if (cJSON_IsNumber(id)) out[static_cast<int>(id->valuedouble)] = std::move(j);
  }
  return out;
}

bool is_error(const std::map<int, swarm::Json>& answers, int id) {
  const auto it = answers.find(id);
  return it == answers.end() || !cJSON_IsFalse(at(it->second.get(), {"result", "isError"}));
}

}  // namespace

TEST_CASE("McpHosts_EveryConfigurationOfTheDocsParsesAndNamesSwarmMcp") {
  const auto json = blocks("json");
  REQUIRE(json.size() >= 2);
  for (const auto& [mark, body] : json) {
    CAPTURE(body);
    auto doc = swarm::Json::parse(body);
    REQUIRE_MESSAGE(doc, "a JSON block of docs/mcp.md is no JSON");
    const cJSON* entry = at(doc.get(), {"mcpServers", "swarm"});
    CHECK(text_of(entry, "command") == "swarm");
    const auto args = strings_of(at(entry, {"args"}));
    REQUIRE_FALSE(args.empty());
    CHECK(args[0] == "mcp");
  }
  const auto claude = swarm::Json::parse(config_of("json", "claude-code"));
  for (const char* name : {"SWARM_WORKSPACE", "SWARM_SLOT", "SWARM_SESSION"})
    CHECK(text_of(at(claude.get(), {"mcpServers", "swarm", "env"}), name) == std::string("${") + name + "}");
  // The TOML as Codex reads it, by Python's tomllib, printed back as JSON.
  TempDir dir("swarm-mcp-toml");
  write_file(dir.path() / "config.toml", config_of("toml", "codex"));
  auto parsed = run({{"/usr/bin/env", "python3", "-c",
                      "import json, sys, tomllib; print(json.dumps(tomllib.load(open(sys.argv[1], 'rb'))))",
                      (dir.path() / "config.toml").string()}});
  REQUIRE_MESSAGE(parsed.exit == 0, parsed.err);
  auto codex = swarm::Json::parse(parsed.out);
  REQUIRE(codex);
  const cJSON* entry = at(codex.get(), {"mcp_servers", "swarm"});
  CHECK(text_of(entry, "command") == "swarm");
  CHECK(strings_of(at(entry, {"args"})) == std::vector<std::string>{"mcp"});
  const auto passed = strings_of(at(entry, {"env_vars"}));
  for (const char* name : {"SWARM_WORKSPACE", "SWARM_SLOT", "SWARM_SESSION", "SWARM_HOST", "SWARM_HOST_ID"})
    CHECK_MESSAGE(std::find(passed.begin(), passed.end(), name) != passed.end(), name);
}

TEST_CASE("McpHosts_EachHostsServerActsOnTheRunsSlotWithNoSlotGiven") {
  SwarmWorkspace ws;
  struct Case {
    std::string host, slot, lang;
    std::map<std::string, std::string> env;
  };
  // Under the allowlist the entry passes no SWARM_HOST: that run is this
  // machine's own identity, as a fleet that sets none.
  const std::vector<Case> cases = {
      {"claude-code", "cc", "json", kHostA},
      {"claude-code-allowlist", "cca", "json", {{"SWARM_HOST", ""}, {"SWARM_HOST_ID", ""}, {"XDG_CONFIG_HOME", ""}}},
      {"codex", "cx", "toml", kHostA},
  };
  for (const auto& c : cases) {
    CAPTURE(c.host);
    RunResult ran;
    const auto answers =
        host_under_run(ws, c.host, c.slot, config_of(c.lang, c.host == "codex" ? "codex" : "claude-code"), c.env, &ran);
    std::string said;
    if (answers.count(1) != 0) said = answers.at(1).dump();
    INFO("run: " << ran.exit << "\n" << ran.out << ran.err << "renew answered: " << said);
    CHECK(ran.exit == 0);
    CHECK_FALSE(is_error(answers, 1));  // renew, naming no slot: the run's, under its session
    CHECK_FALSE(is_error(answers, 2));
    auto status = json_of(ws.swarm({"status", "--slot", c.slot, "--json"}, c.env));
    CHECK(status.dump().find("\"note\":\"via " + c.host + "\"") != std::string::npos);
  }
  // The control: Codex without env_vars starts the server with none of the
  // run's variables, and nothing is done.
  RunResult ran;
  const auto answers = host_under_run(ws, "codex-no-env-vars", "cn", config_of("toml", "codex"), kHostA, &ran);
  CHECK(is_error(answers, 1));
  CHECK(json_of(ws.swarm({"status", "--slot", "cn", "--json"})).dump().find("via codex") == std::string::npos);
}
