// The recipes of the README and of docs/, run literally: each ```sh block
// that follows a `<!-- recipe: NAME -->` line of README.md or a page of
// docs/ is taken from the file as it is now and run by bash -e, with the
// built swarm first on PATH, as a new user would paste it. A recipe that no
// longer works fails here, not for them (docs_test.cc checks that every
// recipe is run here).
#include <doctest/doctest.h>

#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "e2e/swarm_fixture.h"
#include "support/eventually.h"

using namespace testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// The body of the sh block after `<!-- recipe: name -->` in README.md or a
// page of docs/ (its indentation, inside a list, taken off).
std::string recipe(const std::string& name) {
  std::vector<fs::path> files = {fs::path(SWARM_SOURCE_DIR) / "README.md"};
  for (const auto& entry : fs::directory_iterator(fs::path(SWARM_SOURCE_DIR) / "docs"))
    if (entry.path().extension() == ".md") files.push_back(entry.path());
  for (const auto& file : files) {
    std::ifstream in(file);
    std::string line, body, indent;
    bool marked = false, inside = false;
    while (std::getline(in, line)) {
      const std::string trimmed = line.substr(std::min(line.size(), line.find_first_not_of(' ')));
      if (trimmed == "<!-- recipe: " + name + " -->") {
        marked = true;
        continue;
      }
      if (marked && !inside && trimmed == "```sh") {
        inside = true;
        indent = line.substr(0, line.size() - trimmed.size());
        continue;
      }
      if (inside && trimmed == "```") return body;
      if (inside) body += (line.rfind(indent, 0) == 0 ? line.substr(indent.size()) : line) + "\n";
    }
  }
  FAIL("no recipe " << name << " in README.md or docs/");
  return {};
}

// Runs `script` with bash -e in `cwd`: swarm on PATH, a home of its own.
RunResult run_recipe(const std::string& script, const fs::path& cwd, const fs::path& home,
                     std::map<std::string, std::string> env = {}) {
  Command c{{"/bin/bash", "-e", "-c", script}, std::move(env), cwd};
  // What the caller did not set: unset, or the test's own.
  const char* path = std::getenv("PATH");
  c.env["PATH"] = fs::path(swarm_binary()).parent_path().string() + ":" + (path ? path : "/usr/sbin:/usr/bin:/bin");
  c.env["HOME"] = home.string();
  c.env["SWARM_HOST"] = "host-a";
  c.env["SWARM_HOST_ID"] = "id-a";
  c.env.emplace("SWARM_WORKSPACE", "");
  c.env["NATS_URL"] = "";
  auto r = run(c, 120s);
  INFO("recipe:\n" << script << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit == 0);
  return r;
}

std::string hub_files(const SwarmWorkspace& ws, const std::string& branch) {
  return ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "ls-tree", "--name-only", branch}).out;
}

}  // namespace

TEST_CASE("Readme_QuickStartRunsAsWritten") {
  // on the embedded default, in a fresh folder: up, join, commit, status, close, branches, land, down.
  TempDir dir("swarm-readme");
  const fs::path folder = dir.path() / "project";
  fs::create_directories(folder);
  auto r = run_recipe(recipe("quick-start"), folder, dir.path());
  // Whatever happened, no server is left behind.
  std::ifstream pid_file(folder / ".swarm/nats/nats.pid");
  long pid = 0;
  if (pid_file >> pid && pid > 0) {
    // Gone (or a zombie no one reaped yet), within a bound.
    auto gone = [pid] {
      const char state = process_state(static_cast<pid_t>(pid));
      return state == '\0' || state == 'Z';
    };
    CHECK(eventually(gone, 10s));
    if (!gone()) ::kill(static_cast<pid_t>(pid), SIGKILL);
  }
  CHECK(r.out.find("landed render on main") != std::string::npos);
}

TEST_CASE("Readme_TheLandingLoopLandsEveryFinishedSlot") {
  // the orchestrator's loop: four slots joined, worked, committed and closed from inside their worktrees, then
  // branches and land --ready with the check `make test`: all four land.
  SwarmWorkspace ws({.up = false, .git_repo = true});
  write_file(ws.root() / "Makefile", "test:\n\ttest -f render.txt\n");
  ws.git({"add", "Makefile"});
  REQUIRE(ws.git({"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "make test"}).exit == 0);
  REQUIRE(ws.swarm({"up", "--nats-url", ws.server()->url()}).exit == 0);
  auto r = run_recipe(recipe("landing-loop"), ws.root(), ws.home());
  for (const char* slot : {"render", "parse", "index", "docs"}) {
    CHECK_MESSAGE(r.out.find(std::string("landed ") + slot + " on trunk") != std::string::npos, slot);
    CHECK(hub_files(ws, "trunk").find(std::string(slot) + ".txt") != std::string::npos);
  }
}

TEST_CASE("Readme_PortBlocksAsWritten") {
  // up --ports, two joins with --ports 10 --env: disjoint blocks, in the order the README shows; close frees one.
  SwarmWorkspace ws({.up = false, .git_repo = true});
  REQUIRE(ws.swarm({"up", "--nats-url", ws.server()->url()}).exit == 0);
  auto r = run_recipe(recipe("port-blocks"), ws.root(), ws.home());
  CHECK(r.out.find("web: dev server on 20000, its 10 ports end at 20009\n") != std::string::npos);
  CHECK(r.out.find("api: dev server on 20010\n") != std::string::npos);
  auto again = ws.swarm({"join", "--slot", "ui", "--task", "T-46", "--ports", "10", "--env"});
  CHECK(again.out.find("SWARM_PORT_BASE=20000\n") != std::string::npos);  // web's block, given back by close
}

TEST_CASE("Readme_TheFleetLoopForeseesTheConflictAndLandsABatch") {
  // api and ui both change config.txt: ui's commit is warned and branches shows it; fix closes in the fast
  // lane and lands first; the batch of fix and api passes one check, ui is refused for its conflict.
  SwarmWorkspace ws({.up = false, .git_repo = true});
  write_file(ws.root() / "Makefile", "test:\n\ttest -f api.txt\n");
  write_file(ws.root() / "config.txt", "base\n");
  ws.git({"add", "Makefile", "config.txt"});
  REQUIRE(ws.git({"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "make test"}).exit == 0);
  REQUIRE(ws.swarm({"up", "--nats-url", ws.server()->url()}).exit == 0);
  auto r = run_recipe(recipe("fleet-loop"), ws.root(), ws.home());
  CHECK(r.err.find("swarm/ui conflicts with slot api on config.txt") != std::string::npos);
  CHECK(r.out.find("conflicts with slot ui on config.txt") != std::string::npos);
  const auto fix = r.out.find("landed fix on trunk"), api = r.out.find("landed api on trunk");
  REQUIRE(fix != std::string::npos);
  REQUIRE(api != std::string::npos);
  CHECK(fix < api);
  CHECK(r.out.find("refused ui") != std::string::npos);
  CHECK(r.err.find("[fix api] ") != std::string::npos);
  CHECK(hub_files(ws, "trunk").find("api.txt") != std::string::npos);
  CHECK(hub_files(ws, "trunk").find("ui.txt") == std::string::npos);
}

TEST_CASE("Readme_TheRequiredCheckRunsOnEveryLand") {
  // up --check 'make test': the good slot lands, the bad one is refused by both lands (the second without
  // running the check), branches shows it refused, and up --check '' removes the check.
  SwarmWorkspace ws({.up = false, .git_repo = true});
  write_file(ws.root() / "Makefile", "test:\n\ttest ! -e BAD\n");
  ws.git({"add", "Makefile"});
  REQUIRE(ws.git({"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "make test"}).exit == 0);
  REQUIRE(ws.swarm({"up", "--nats-url", ws.server()->url()}).exit == 0);
  for (const std::string slot : {"good", "bad"}) {
    REQUIRE(ws.swarm({"join", "--slot", slot, "--task", "T-" + slot}).exit == 0);
    write_file(ws.worktree(slot) / (slot == "bad" ? "BAD" : "good.txt"), slot + "\n");
    REQUIRE(ws.swarm({"commit", "--slot", slot, "-m", slot}).exit == 0);
    REQUIRE(ws.swarm({"close", "--slot", slot, "--result", "success"}).exit == 0);
  }
  auto r = run_recipe(recipe("required-check"), ws.root(), ws.home());
  CHECK(r.out.find("landed good on trunk") != std::string::npos);
  const auto first = r.out.find("refused bad"), second = r.out.find("refused bad", first + 1);
  CHECK(first != std::string::npos);
  CHECK(second != std::string::npos);
  CHECK(r.out.find("1      refused ") != std::string::npos);  // the LANDED column of branches
  CHECK(hub_files(ws, "trunk").find("BAD") == std::string::npos);
  CHECK(read_file(ws.root() / ".swarm/config.json").find("\"check\"") == std::string::npos);
}

TEST_CASE("Readme_ARefusedLandIsFixedByTheRecipe") {
  // docs conflicts with what landed first on README.md; the recipe (join, sync, resolve with $EDITOR, commit,
  // close, land) lands it, with both sides kept.
  SwarmWorkspace ws({.git_repo = true});
  for (const std::string slot : {"readme", "docs"}) {
    REQUIRE(ws.swarm({"join", "--slot", slot, "--task", "T-" + slot}).exit == 0);
    write_file(ws.worktree(slot) / "README.md", slot + " wrote this\n");
    REQUIRE(ws.swarm({"commit", "--slot", slot, "-m", slot}).exit == 0);
    REQUIRE(ws.swarm({"close", "--slot", slot, "--result", "success"}).exit == 0);
  }
  REQUIRE(ws.swarm({"land", "--slot", "readme"}).exit == 0);
  REQUIRE(ws.swarm({"land", "--slot", "docs"}).exit == 3);
  // The editor a person would use: here, one that keeps both sides and drops the markers.
  const fs::path editor = ws.home() / "resolve.sh";
  write_file(editor, "#!/bin/sh\nsed -i '/^<<<<<<< /d; /^=======$/d; /^>>>>>>> /d' \"$1\"\n");
  fs::permissions(editor, fs::perms::owner_all);
  auto r = run_recipe(recipe("refused-land"), ws.root(), ws.home(),
                      {{"EDITOR", editor.string()}});
  const std::string landed =
      ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "show", "trunk:README.md"}).out;
  CHECK(landed.find("readme wrote this") != std::string::npos);
  CHECK(landed.find("docs wrote this") != std::string::npos);
  CHECK(landed.find("<<<<<<<") == std::string::npos);
}

TEST_CASE("Readme_TheOrchestratorsLoopAsWritten") {
  // the README's ten lines, on the embedded default in a fresh folder: both slots land, and the journal says so.
  TempDir dir("swarm-readme");
  const fs::path folder = dir.path() / "project";
  fs::create_directories(folder);
  auto r = run_recipe(recipe("orchestrator-loop"), folder, dir.path());
  Command down{{swarm_binary(), "down"}, {{"SWARM_WORKSPACE", folder.string()}, {"HOME", dir.path().string()}}, folder};
  run(down);
  CHECK(r.out.find("landed render on main") != std::string::npos);
  CHECK(r.out.find("landed parse on main") != std::string::npos);
  CHECK(r.out.find(" land ") != std::string::npos);  // the journal's rows of the lands
}

TEST_CASE("Docs_LeasesSemaphoresAndTheJournalAsWritten") {
  // docs/leases.md's lease by hand and semaphores, docs/history.md's reading of the journal.
  SwarmWorkspace ws;
  auto by_hand = run_recipe(recipe("lease-by-hand"), ws.root(), ws.home(), {{"SWARM_WORKSPACE", ws.root().string()}});
  CHECK(by_hand.out.find("claim.T-42") != std::string::npos);
  CHECK(by_hand.out.find("token ") != std::string::npos);
  CHECK(ws.swarm({"lease", "show", "claim.T-42"}).exit == 4);  // released at the end
  auto sem = run_recipe(recipe("semaphores"), ws.root(), ws.home(), {{"SWARM_WORKSPACE", ws.root().string()}});
  CHECK(sem.out.find("permit ") != std::string::npos);
  CHECK(ws.swarm({"lease", "show", "integration"}).out.find("6") != std::string::npos);
  auto history = run_recipe(recipe("history"), ws.root(), ws.home(), {{"SWARM_WORKSPACE", ws.root().string()}});
  CHECK(history.out.find("lease.grant") != std::string::npos);
}

TEST_CASE("Docs_EveryCandidateRunsAsWritten") {
  // docs/leases.md's elect --all: both agents run; first dispatches from the start, second watches and, once
  // first ends, dispatches under a higher token; never both.
  SwarmWorkspace ws;
  auto r = run_recipe(recipe("elect-all"), ws.root(), ws.home(), {{"SWARM_WORKSPACE", ws.root().string()}});
  CHECK(r.exit == 0);
  std::istringstream lines(r.out);
  std::uint64_t first_token = 0, second_token = 0;
  bool second_watched = false, first_after_second = false;
  for (std::string line; std::getline(lines, line);) {
    const auto under = line.find("under token ");
    const std::uint64_t token = under == std::string::npos ? 0 : std::stoull(line.substr(under + 12));
    if (line.rfind("first: dispatching", 0) == 0) {
      first_token = token;
      first_after_second = first_after_second || second_token != 0;
    }
    if (line == "second: watching") second_watched = true;
    if (line.rfind("second: dispatching", 0) == 0) second_token = token;
  }
  CHECK(first_token > 0);
  CHECK(second_watched);
  CHECK(second_token > first_token);
  CHECK_FALSE(first_after_second);
}

TEST_CASE("Docs_RunThreeAgentsAsWritten") {
  // the README's agents under run: a TTL of 2s changed in place; the thinker keeps its slot for 3 TTLs and closes as success with
  // its answer committed; the killed run is dead at once and doctor --fix clears it; the failing one is a fail.
  // docs/run.md's run that commits and lands.
  SwarmWorkspace ws;
  auto r = run_recipe(recipe("run-three-agents"), ws.root(), ws.home(), {{"SWARM_WORKSPACE", ws.root().string()}});
  CHECK(r.out.find("failing exited 1") != std::string::npos);
  CHECK(r.out.find("thinker is working: one long thought") != std::string::npos);
  const auto dead = r.out.find("doomed");
  CHECK(dead != std::string::npos);
  CHECK(r.out.find("dead", dead) != std::string::npos);
  CHECK(r.out.find("result=success") != std::string::npos);
  CHECK(ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "show", "swarm/thinker:answer.txt"}).out ==
        "42\n");
  CHECK(ws.swarm({"log", "--slot", "failing", "--kind", "close"}).out.find("result=fail") != std::string::npos);
  CHECK(ws.swarm({"status", "--slot", "doomed"}).exit == 4);  // doctor --fix removed it
  auto land = run_recipe(recipe("run-and-land"), ws.root(), ws.home(), {{"SWARM_WORKSPACE", ws.root().string()}});
  CHECK(land.out.find("result=success") != std::string::npos);
  CHECK(land.out.find("land ") != std::string::npos);
  CHECK(ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "show", "main:render.txt"}).out == "fixed\n");
}

TEST_CASE("Docs_TheTaskQueueAsWritten") {
  // docs/tasks.md: three tasks, one after the other two; two agents claim with join --next; one closes
  // success (approved), one fails (open again, attempts 1); the last waits for both.
  SwarmWorkspace ws;
  auto r = run_recipe(recipe("task-queue"), ws.root(), ws.home(), {{"SWARM_WORKSPACE", ws.root().string()}});
  CHECK(r.out.find("T-1 1 approved a1 Fix the parser") != std::string::npos);
  CHECK(r.out.find("T-2 2 open a2 Write the docs") != std::string::npos);
  CHECK(r.out.find("T-3 2 open - Release") != std::string::npos);
  CHECK(r.out.find("attempts 1 of 3") != std::string::npos);
  CHECK(r.out.find("to=open") != std::string::npos);
  CHECK(ws.swarm({"join", "--slot", "a3", "--next", "--label", "backend"}).exit == 4);
}

TEST_CASE("Readme_TasksReviewedBeforeTheyLandAsWritten") {
  // the README's queue: five tasks, one after two others; two agents claim with join --next; one fails and
  // its task comes back (claimed again); reviews approve both heads; a new commit dismisses one approval;
  // land --ready lands only the approved head, and its task is completed.
  SwarmWorkspace ws;
  auto r = run_recipe(recipe("tasks-and-review"), ws.root(), ws.home(), {{"SWARM_WORKSPACE", ws.root().string()}});
  CHECK_MESSAGE(r.out.find("landed a1 on main") != std::string::npos, r.out, r.err);
  CHECK(r.out.find("landed a2") == std::string::npos);
  CHECK(r.err.find("slot a2 waits for a review") != std::string::npos);
  CHECK(r.out.find("T-1 2 completed a1 Fix the parser") != std::string::npos);
  CHECK(r.out.find("T-2 2 in_review a2 Fix the docs") != std::string::npos);
  CHECK(r.out.find("T-5 2 open - Release") != std::string::npos);
  auto t2 = json_of(ws.swarm({"task", "show", "T-2", "--json"}));
  CHECK(number(t2, "attempts") == 1);
  CHECK(ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "show", "main:parser.txt"}).out == "fixed\n");
  CHECK(ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "show", "main:docs.txt"}).exit != 0);
}

TEST_CASE("Docs_OperatingTheContractTrustAndHelpAsWritten") {
  // docs/operating.md, docs/contract.md, docs/trust.md's agent and docs/reference.md's offline help.
  SwarmWorkspace ws;
  const std::map<std::string, std::string> env = {{"SWARM_WORKSPACE", ws.root().string()}};
  auto operating = run_recipe(recipe("operating"), ws.root(), ws.home(), env);
  CHECK(operating.out.find("healthy") != std::string::npos);
  auto contract = run_recipe(recipe("contract"), ws.root(), ws.home(), env);
  CHECK(contract.out.find("\"schema\":\"swarm.status.v1\"") != std::string::npos);
  CHECK(contract.out.find("\"schema\":\"swarm.lease.v1\"") != std::string::npos);
  CHECK(contract.out.find("\"schema\":\"swarm.error.v1\"") != std::string::npos);
  CHECK(contract.out.find("exit 4") != std::string::npos);
  auto agent = run_recipe(recipe("agent-env"), ws.root(), ws.home(), env);
  CHECK(ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "show", "swarm/render:tiles.txt"}).out == "tiles\n");
  auto help = run_recipe(recipe("help"), ws.root(), ws.home(), env);
  CHECK(help.out.find("Usage: swarm join") != std::string::npos);
  CHECK(help.out.find("Usage: swarm lease acquire") != std::string::npos);
  CHECK(help.out.find("# Leases:") != std::string::npos);
}


TEST_CASE("Docs_MessagesBetweenAgentsAsWritten") {
  // docs/messages.md's exchange: a broadcast read and acked by two agents, a question answered, a 1 MB log
  // by blob; then docs/messages.md's cursors.
  SwarmWorkspace ws;
  const std::map<std::string, std::string> env = {{"SWARM_WORKSPACE", ws.root().string()}};
  auto r = run_recipe(recipe("messages"), ws.root(), ws.home(), env);
  CHECK(r.out.find(" lead - main moved: run swarm sync") != std::string::npos);
  CHECK(r.out.find("yes, keep the old names working") != std::string::npos);
  // Acked: neither agent gets the broadcast again.
  CHECK(ws.swarm({"inbox", "--as", "a1"}).out.empty());
  CHECK(ws.swarm({"inbox", "--as", "a2"}).out.find("main moved") == std::string::npos);
  CHECK(ws.swarm({"inbox", "--as", "a2"}).out.find("yes, keep the old names working") != std::string::npos);
  CHECK(fs::file_size(ws.root() / "got.log") == 1000000);
  SwarmWorkspace second;
  const std::map<std::string, std::string> env2 = {{"SWARM_WORKSPACE", second.root().string()}};
  auto c = run_recipe(recipe("messages-cursors"), second.root(), second.home(), env2);
  CHECK(c.out.find(" lead note rebase on main") != std::string::npos);
  CHECK(second.swarm({"inbox", "--as", "a1"}).out.empty());
  CHECK(second.swarm({"inbox", "--as", "a2"}).out.find("the API freeze starts at 16:00") != std::string::npos);
}

TEST_CASE("Docs_HoldsAsWritten") {
  // docs/editing.md's holds recipe: a2 is refused a1's paths, its commit of them warns, its land is refused until
  // a1's session ends; then docs/editing.md's release recipe.
  SwarmWorkspace ws;
  const std::map<std::string, std::string> env = {{"SWARM_WORKSPACE", ws.root().string()}};
  auto r = run_recipe(recipe("holds"), ws.root(), ws.home(), env);
  CHECK(r.out.find("refused (exit 3)") != std::string::npos);
  CHECK(r.err.find("src/api/v2.go (held by slot a1") != std::string::npos);
  CHECK(r.out.find("not landed (exit 3)") != std::string::npos);
  CHECK(r.out.find("landed a2 on main") != std::string::npos);
  CHECK(ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "show", "main:src/api/v2.go"}).out == "v2\n");
  SwarmWorkspace second;
  const std::map<std::string, std::string> env2 = {{"SWARM_WORKSPACE", second.root().string()}};
  auto release = run_recipe(recipe("holds-release"), second.root(), second.home(), env2);
  CHECK(release.out.find("refused: exit 3") != std::string::npos);
  CHECK(release.out.find("\"schema\":\"swarm.holds.v1\"") != std::string::npos);
  CHECK(release.out.find("\"patterns\":[\"src/api/**\"]") != std::string::npos);  // narrowed
  auto left = second.swarm({"holds", "--json"});
  CHECK(left.out.find("\"slot\":\"a2\",\"host\"") != std::string::npos);
  CHECK(left.out.find("\"slot\":\"a1\"") == std::string::npos);
}

TEST_CASE("Docs_ElectionStateAsWritten") {
  // docs/leases.md's election recipe: the first leader checks its token and puts its state; the next reads it.
  SwarmWorkspace ws;
  const std::map<std::string, std::string> env = {{"SWARM_WORKSPACE", ws.root().string()}};
  auto r = run_recipe(recipe("elect"), ws.root(), ws.home(), env);
  CHECK(r.out.find("cursor=42\n") != std::string::npos);
  CHECK(r.out.find("elect.state") != std::string::npos);
}

TEST_CASE("Readme_McpOverStdioAsWritten") {
  // docs/mcp.md's recipe: a session over a pipe answers each request once, nothing else on stdout, and a
  // token that is not the slot's session is an error result.
  SwarmWorkspace ws;
  const std::map<std::string, std::string> env = {{"SWARM_WORKSPACE", ws.root().string()}};
  auto r = run_recipe(recipe("mcp-stdio"), ws.root(), ws.home(), env);
  CHECK(r.out.find("3\n") == 0);
  CHECK(r.out.find("\"isError\":true") != std::string::npos);
  const std::string answers = read_file(ws.root() / "answers.jsonl");
  CHECK(answers.find("\"structuredContent\":{\"schema\":\"swarm.status.v1\"") != std::string::npos);
}
