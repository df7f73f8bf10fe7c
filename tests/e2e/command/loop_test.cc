// The orchestrator's loop at its seams, as a new user meets them: a refused
// land fixed where the work is (sync, resolve, commit, close, land), land's
// guards, verbs run from a folder close removed, a refused join that changes
// nothing, text from NATS that stays data, and feedback that tells the truth.
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "e2e/swarm_fixture.h"
#include "support/eventually.h"
#include "support/json_fields.h"
#include "support/raw_nats.h"
#include "swarm/base/text.h"

using namespace testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string hub_git(const SwarmWorkspace& ws, const std::vector<std::string>& args) {
  std::vector<std::string> full = {"--git-dir", (ws.root() / ".swarm/hub.git").string()};
  full.insert(full.end(), args.begin(), args.end());
  return trimmed(ws.git(full).out);
}

// join, write `file`, commit, close --result success: a finished slot.
void finish(const SwarmWorkspace& ws, const std::string& slot, const std::string& file, const std::string& text) {
  auto join = ws.swarm({"join", "--slot", slot, "--task", "T-" + slot});
  REQUIRE_MESSAGE(join.exit == 0, join.err);
  write_file(ws.worktree(slot) / file, text);
  auto commit = ws.swarm({"commit", "--slot", slot, "-m", slot + ": " + file});
  REQUIRE_MESSAGE(commit.exit == 0, commit.err);
  auto close = ws.swarm({"close", "--slot", slot, "--result", "success"});
  REQUIRE_MESSAGE(close.exit == 0, close.err);
}

// `script` run by bash in `cwd`, with swarm on PATH and the workspace's
// environment, but without $SWARM_WORKSPACE unless `with_workspace`.
RunResult bash(const SwarmWorkspace& ws, const std::string& script, const fs::path& cwd, bool with_workspace) {
  Command c = ws.command({}, kHostA, cwd);
  c.args = {"/bin/bash", "-c", script};
  c.env["PATH"] = fs::path(swarm_binary()).parent_path().string() + ":/usr/bin:/bin";
  if (!with_workspace) c.env["SWARM_WORKSPACE"] = "";
  return run(c, 60s);
}


int lines_with(const std::string& text, const std::string& part) {
  int n = 0;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) n += l.find(part) != std::string::npos ? 1 : 0;
  return n;
}

int lines_starting(const std::string& text, const std::string& prefix) {
  int n = 0;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) n += l.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("Loop_ARefusedLandIsFixedBySyncResolveCommitCloseLand") {
  // the conflict comes home with sync (exit 3, paths named); commit and close wait until it is resolved; the
  // commit that resolves it has both parents and ends the merge; the land then goes through.
  SwarmWorkspace ws;
  finish(ws, "left", "same.txt", "left\n");
  finish(ws, "right", "same.txt", "right\n");
  REQUIRE(ws.swarm({"land", "--slot", "left"}).exit == 0);
  REQUIRE(ws.swarm({"land", "--slot", "right"}).exit == 3);

  REQUIRE(ws.swarm({"join", "--slot", "right", "--task", "T-right"}).exit == 0);
  const fs::path wt = ws.worktree("right");
  auto sync = ws.swarm({"sync", "--slot", "right"});
  CHECK(sync.exit == 3);
  CHECK(sync.err.find("same.txt") != std::string::npos);
  CHECK(fs::exists(wt / ".git/MERGE_HEAD"));
  CHECK(read_file(wt / "same.txt").find("<<<<<<<") != std::string::npos);
  // Unresolved: commit refuses naming the path, close --result success refuses, nothing changes.
  const std::string before = hub_git(ws, {"rev-parse", "swarm/right"});
  auto early = ws.swarm({"commit", "--slot", "right", "-m", "too early"});
  CHECK(early.exit == 3);
  CHECK(early.err.find("same.txt") != std::string::npos);
  auto closing = ws.swarm({"close", "--slot", "right", "--result", "success"});
  CHECK(closing.exit == 3);
  CHECK(closing.err.find("merge in progress") != std::string::npos);
  CHECK(hub_git(ws, {"rev-parse", "swarm/right"}) == before);

  write_file(wt / "same.txt", "left and right\n");
  auto commit = ws.swarm({"commit", "--slot", "right", "-m", "right: merge main"});
  REQUIRE_MESSAGE(commit.exit == 0, commit.err);
  CHECK(!fs::exists(wt / ".git/MERGE_HEAD"));
  const std::string parents = hub_git(ws, {"rev-list", "--parents", "-n", "1", "swarm/right"});
  CHECK(std::count(parents.begin(), parents.end(), ' ') == 2);  // the commit and its two parents
  CHECK(hub_git(ws, {"merge-base", "--is-ancestor", "main", "swarm/right"}).empty());
  REQUIRE(ws.swarm({"close", "--slot", "right", "--result", "success"}).exit == 0);
  auto land = ws.swarm({"land", "--slot", "right"});
  CHECK_MESSAGE(land.exit == 0, land.err);
  CHECK(hub_git(ws, {"show", "main:same.txt"}) == "left and right");
  auto synced = ws.swarm({"log", "--slot", "right", "--kind", "sync", "--json"});
  CHECK(synced.out.find("\"how\":\"conflict\"") != std::string::npos);
}

TEST_CASE("Loop_SyncFastForwardsOrMergesCleanlyAndPushes") {
  SwarmWorkspace ws;
  finish(ws, "first", "a.txt", "a\n");
  REQUIRE(ws.swarm({"land", "--slot", "first"}).exit == 0);
  // A slot with nothing of its own is fast-forwarded; one with its own commit gets a clean merge.
  REQUIRE(ws.swarm({"join", "--slot", "idle", "--task", "T-i", "--base", "main~1"}).exit == 0);
  auto ff = ws.swarm({"sync", "--slot", "idle", "--json"});
  REQUIRE_MESSAGE(ff.exit == 0, ff.err);
  CHECK(field(json_of(ff), "how") == "fast-forward");
  CHECK(fs::exists(ws.worktree("idle") / "a.txt"));
  CHECK(field(json_of(ws.swarm({"sync", "--slot", "idle", "--json"})), "how") == "up-to-date");

  REQUIRE(ws.swarm({"join", "--slot", "busy", "--task", "T-b", "--base", "main~1"}).exit == 0);
  write_file(ws.worktree("busy") / "b.txt", "b\n");
  REQUIRE(ws.swarm({"commit", "--slot", "busy", "-m", "b"}).exit == 0);
  auto merged = ws.swarm({"sync", "--slot", "busy", "--json"});
  REQUIRE_MESSAGE(merged.exit == 0, merged.err);
  auto doc = json_of(merged);
  CHECK(field(doc, "how") == "merge");
  CHECK(field(doc, "to") == hub_git(ws, {"rev-parse", "swarm/busy"}));  // pushed
  CHECK(hub_git(ws, {"rev-list", "--parents", "-n", "1", "swarm/busy"}).size() == 3 * 40 + 2);
  // Uncommitted tracked changes are never merged over.
  write_file(ws.worktree("busy") / "b.txt", "changed\n");
  auto dirty = ws.swarm({"sync", "--slot", "busy"});
  CHECK(dirty.exit == 3);
  CHECK(dirty.err.find("b.txt") != std::string::npos);
  CHECK(read_file(ws.worktree("busy") / "b.txt") == "changed\n");
  CHECK(ws.swarm({"sync", "--slot", "busy", "--onto", "no-such-branch"}).exit == 4);
  CHECK(ws.swarm({"sync", "--slot", "busy", "--onto", "bad..name"}).exit == 2);
}

TEST_CASE("Loop_LandSlotRefusesAFailedOrLiveSlotUnlessForced") {
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "failed", "--task", "T-f"}).exit == 0);
  write_file(ws.worktree("failed") / "f.txt", "f\n");
  REQUIRE(ws.swarm({"commit", "--slot", "failed", "-m", "f"}).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "failed", "--result", "fail"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "live", "--task", "T-l"}).exit == 0);
  write_file(ws.worktree("live") / "l.txt", "l\n");
  REQUIRE(ws.swarm({"commit", "--slot", "live", "-m", "l"}).exit == 0);
  const std::string main_before = hub_git(ws, {"rev-parse", "main"});

  auto failed = ws.swarm({"land", "--slot", "failed"});
  CHECK(failed.exit == 3);
  CHECK(failed.err.find("last close was fail") != std::string::npos);
  CHECK(failed.err.find("--force") != std::string::npos);
  auto live = ws.swarm({"land", "--slot", "live"});
  CHECK(live.exit == 3);
  CHECK(live.err.find("still at work") != std::string::npos);
  CHECK(hub_git(ws, {"rev-parse", "main"}) == main_before);
  CHECK(ws.swarm({"log", "--kind", "land", "--kind", "land.refused"}).out.empty());  // refused before any act

  auto forced = ws.swarm({"land", "--slot", "failed", "--force", "--json"});
  REQUIRE_MESSAGE(forced.exit == 0, forced.err);
  auto event = ws.swarm({"log", "--slot", "failed", "--kind", "land", "--json"});
  CHECK(event.out.find("\"forced\":true") != std::string::npos);
  CHECK(ws.swarm({"land", "--ready", "--force"}).exit == 2);  // --force is for one named slot
}

TEST_CASE("Loop_CloseInsideItsWorktreeSaysWhereToGoAndLaterVerbsWork") {
  // the shell's folder is removed by close: close says where to go and exits 0; later verbs from the removed
  // folder work with $SWARM_WORKSPACE or --workspace, and without them say how (exit 6), never "cannot get
  // current path" (9).
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "here", "--task", "T-h"}).exit == 0);
  write_file(ws.worktree("here") / "h.txt", "h\n");
  const std::string tail =
      "swarm commit -m h >/dev/null && swarm close --result success; echo \"close=$?\"; "
      "swarm status --json >/dev/null; echo \"plain=$?\"; "
      "swarm --workspace " + ws.root().string() + " branches >/dev/null; echo \"flag=$?\"; "
      "SWARM_WORKSPACE=" + ws.root().string() + " swarm status >/dev/null; echo \"env=$?\"";
  auto r = bash(ws, tail, ws.worktree("here"), false);
  INFO(r.out << r.err);
  CHECK(r.out.find("close=0") != std::string::npos);
  CHECK(r.err.find("cd '" + ws.root().string() + "'") != std::string::npos);
  CHECK(r.out.find("plain=6") != std::string::npos);
  CHECK(r.err.find("SWARM_WORKSPACE") != std::string::npos);
  CHECK(r.err.find("cannot get current path") == std::string::npos);
  CHECK(r.out.find("flag=0") != std::string::npos);
  CHECK(r.out.find("env=0") != std::string::npos);
  CHECK(!fs::exists(ws.worktree("here")));
}

TEST_CASE("Loop_ARefusedForceJoinChangesNothing") {
  // a half-salvaged mark planted next to the worktree makes join --force refuse: the live session, its task lease
  // and its worktree stay as they were, and nothing is journaled.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  write_file(ws.worktree("s") / "work.txt", "uncommitted\n");
  const std::string session = ws.swarm({"status", "--slot", "s", "--json"}).out;
  const std::string lease = ws.swarm({"lease", "show", "task.T-1", "--json"}).out;
  write_file(ws.root() / ".swarm/slots/s/salvaging", "planted\n");
  for (const std::string task : {"T-1", "T-2"}) {
    auto forced = ws.swarm({"join", "--slot", "s", "--task", task, "--force"});
    CHECK(forced.exit == 3);
    CHECK(forced.err.find("half salvaged") != std::string::npos);
  }
  auto after = json_of(ws.swarm({"status", "--slot", "s", "--json"}));
  auto was = json_of(RunResult{0, session, "", {}});
  const cJSON* now_row = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(after.get(), "sessions"), 0);
  const cJSON* was_row = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(was.get(), "sessions"), 0);
  REQUIRE(now_row != nullptr);
  REQUIRE(was_row != nullptr);
  CHECK(number_of(now_row, "revision") == number_of(was_row, "revision"));
  CHECK(text_of(now_row, "task_id") == "T-1");
  auto lease_now = json_of(ws.swarm({"lease", "show", "task.T-1", "--json"}));
  auto lease_was = json_of(RunResult{0, lease, "", {}});
  const cJSON* l_now = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(lease_now.get(), "leases"), 0);
  const cJSON* l_was = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(lease_was.get(), "leases"), 0);
  REQUIRE(l_now != nullptr);
  REQUIRE(l_was != nullptr);
  CHECK(text_of(l_now, "state") == "held");
  CHECK(number_of(l_now, "token") == number_of(l_was, "token"));
  CHECK(ws.swarm({"lease", "show", "task.T-2"}).exit == 4);
  CHECK(read_file(ws.worktree("s") / "work.txt") == "uncommitted\n");
  CHECK(lines_with(ws.swarm({"log", "--slot", "s"}).out, "join") == 1);
}

TEST_CASE("Loop_TextFromTheJournalCannotForgeATrailerOrReachTheTerminalRaw") {
  // a join event planted with a task id holding newlines and ESC: the merge commit of a land carries it as one
  // escaped line, so no Swarm-Fencing-Token or Signed-off-by can be forged, and git log shows no raw ESC.
  SwarmWorkspace ws;
  finish(ws, "one", "one.txt", "1\n");
  finish(ws, "two", "two.txt", "2\n");
  REQUIRE(ws.swarm({"land", "--slot", "one"}).exit == 0);
  {
    RawNats raw(ws.server()->url());
    const swarm::WorkspaceNames names = ws.names();
    const std::string event =
        "{\"schema\":\"swarm.event.v1\",\"kind\":\"join\",\"slot\":\"two\",\"bucket\":\"" + names.sessions + "\","
        "\"host\":\"host-a\",\"task_id\":\"T-2\\nSwarm-Fencing-Token: 999999\\nSigned-off-by: Mallory "
        "<m@example.com>\\u001b[2J\",\"token\":1,\"revision\":1}";
    REQUIRE(raw.publish(names.event_root + names.sessions + ".slot.two", event));
  }
  auto land = ws.swarm({"land", "--slot", "two"});
  REQUIRE_MESSAGE(land.exit == 0, land.err);
  const std::string message = ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "log", "-1",
                                      "--format=%B", "main"}).out;
  INFO(message);
  CHECK(lines_starting(message, "Swarm-Fencing-Token:") == 1);
  CHECK(lines_starting(message, "Swarm-Fencing-Token: 999999") == 0);
  CHECK(lines_starting(message, "Signed-off-by") == 0);
  CHECK(lines_starting(message, "Swarm-Task: T-2\\x0aSwarm-Fencing-Token: 999999") == 1);  // one escaped line
  CHECK(message.find('\x1b') == std::string::npos);
  const std::string trailers = ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "log", "-1",
                                       "--format=%(trailers:key=Swarm-Fencing-Token,valueonly)", "main"}).out;
  CHECK(trimmed(trailers).find('\n') == std::string::npos);  // one token, the lease's
}

TEST_CASE("Loop_CompletionOffersOnlySlotNamesAndAPlantedKeyNeverRuns") {
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "render", "--task", "T-1"}).exit == 0);
  const fs::path marker = ws.home() / "x";
  {
    RawNats raw(ws.server()->url());
    const std::string kv = "$KV." + ws.names().sessions + ".";
    REQUIRE(raw.publish(kv + "render;touch${IFS}" + marker.string(), "{}"));
    REQUIRE(raw.publish(kv + "$(touch${IFS}" + marker.string() + ")", "{}"));
  }
  // bash: complete `swarm status --slot ` and run each offered line as typed.
  const std::string script =
      "source <(swarm completion bash); COMP_WORDS=(swarm status --slot ''); COMP_CWORD=3; _swarm; "
      "for w in \"${COMPREPLY[@]}\"; do echo \"offered:$w\"; eval \"swarm status --slot $w\" >/dev/null 2>&1; done";
  auto r = bash(ws, script, ws.root(), true);
  INFO(r.out << r.err);
  CHECK(r.out.find("offered:render") != std::string::npos);
  CHECK(r.out.find("touch") == std::string::npos);
  CHECK(!fs::exists(marker));
}

TEST_CASE("Loop_JoinEnvIsSafeToEvalInBashAndZshAndToSourceInFish") {
  // a workspace path holding ', \' and $(...) comes back as itself in each shell, and runs nothing.
  TempDir dir("swarm-env");
  const fs::path odd = dir.path() / "it's a \\' $(touch pwned) `touch pwned2` ws";
  fs::create_directories(odd);
  NatsServer server;
  Command up{{swarm_binary(), "up", "--nats-url", server.url()}, {{"HOME", dir.path().string()}}, odd};
  up.env.insert(kHostA.begin(), kHostA.end());
  REQUIRE_MESSAGE(run(up).exit == 0, run(up).err);
  Command join{{swarm_binary(), "join", "--slot", "s", "--task", "T-1", "--env"}, up.env, odd};
  auto env = run(join);
  REQUIRE_MESSAGE(env.exit == 0, env.err);
  const fs::path script = dir.path() / "env.sh";
  write_file(script, env.out);
  const std::string want = (odd / ".swarm/slots/s/wt").string();
  struct Shell {
    const char* path;
    std::string line;
  };
  for (const Shell& sh : {Shell{"/bin/bash", "eval \"$(cat " + script.string() + ")\"; printf '%s' \"$SWARM_WORKTREE\""},
                          Shell{"/usr/bin/zsh", "eval \"$(cat " + script.string() + ")\"; printf '%s' \"$SWARM_WORKTREE\""},
                          Shell{"/usr/bin/fish", "cat " + script.string() + " | source; printf '%s' \"$SWARM_WORKTREE\""}}) {
    if (::access(sh.path, X_OK) != 0) FAIL(sh.path << " is not installed: scripts/setup.sh --tests installs it");
    auto r = run(Command{{sh.path, "-c", sh.line}, {{"HOME", dir.path().string()}}, dir.path()});
    INFO(sh.path << ": " << r.err);
    CHECK(r.out == want);
  }
  CHECK(!fs::exists(dir.path() / "pwned"));
  CHECK(!fs::exists(dir.path() / "pwned2"));
  CHECK(!fs::exists(odd / "pwned"));
}

TEST_CASE("Loop_AWaiterIsToldItsRealPlaceAndATerminalSeesItMove") {
  // four waiters behind a holder are told places 1, 2, 3 and 4 (not the count of waiters); on a terminal the
  // last one's line moves up when one ahead of it leaves.
  SwarmWorkspace ws;
  Process holder(ws.command({"lock", "q", "--ttl", "5s", "--", "sleep", "30"}));
  REQUIRE(eventually([&] { return ws.swarm({"lease", "show", "q"}).out.find("held") != std::string::npos; }));
  std::vector<std::unique_ptr<Process>> waiters;
  for (int i = 1; i <= 3; ++i) {
    waiters.push_back(std::make_unique<Process>(ws.command({"lock", "q", "--ttl", "5s", "--", "true"})));
    REQUIRE(eventually([&] { return ws.swarm({"lease", "show", "q", "--json"}).out.find(
                                        "\"waiters\":" + std::to_string(i)) != std::string::npos; }));
  }
  const std::string line = "stty cols 200 rows 24; exec " + swarm_binary() + " lock q --ttl 5s -- true";
  Command fourth{{"/usr/bin/script", "-qefc", line, "/dev/null"}, kHostA, ws.root()};
  fourth.env["SWARM_WORKSPACE"] = ws.root().string();
  fourth.env["HOME"] = ws.home().string();
  fourth.env["TERM"] = "xterm";
  Process tty(fourth);
  REQUIRE(eventually([&] { return ws.swarm({"lease", "show", "q", "--json"}).out.find("\"waiters\":4") !=
                                  std::string::npos; }));
  std::this_thread::sleep_for(1500ms);  // each has said its place (after 300 ms)
  waiters[1]->signal(SIGTERM);          // place 2 leaves the line
  auto left = waiters[1]->wait(20s);
  CHECK(left.err.find("place 2 in line") != std::string::npos);
  std::this_thread::sleep_for(2500ms);  // the terminal's line is redrawn each second
  holder.signal(SIGTERM);
  holder.wait(20s);
  auto first = waiters[0]->wait(30s);
  auto third = waiters[2]->wait(30s);
  auto last = tty.wait(30s);
  CHECK(first.err.find("place 1 in line") != std::string::npos);
  CHECK(third.err.find("place 3 in line") != std::string::npos);
  INFO(last.out);
  CHECK(last.out.find("place 4 in line") != std::string::npos);
  CHECK(last.out.find("place 3 in line") != std::string::npos);
  CHECK(last.exit == 0);
}

TEST_CASE("Loop_LandReadySaysEachOutcomeOnceAsItHappensWithTheCheckLabelled") {
  SwarmWorkspace ws;
  finish(ws, "a", "a.txt", "a\n");
  finish(ws, "b", "same.txt", "b\n");
  finish(ws, "c", "same.txt", "c\n");  // conflicts with b
  auto ready = ws.swarm({"land", "--ready", "--", "/bin/sh", "-c", "echo checking $SWARM_LAND_SLOT"});
  CHECK(ready.exit == 3);
  INFO(ready.out << ready.err);
  CHECK(ready.err.find("[a] checking a") != std::string::npos);
  CHECK(ready.err.find("[b] checking b") != std::string::npos);
  CHECK(ready.out.find("landed a on main") != std::string::npos);
  CHECK(lines_with(ready.out + ready.err, "refused c") == 1);  // one message per refusal
  CHECK(ready.out.find("checking") == std::string::npos);
  // As it happens: the first line is out before the last land ends.
  finish(ws, "d", "d.txt", "d\n");
  finish(ws, "e", "e.txt", "e\n");
  Process slow(ws.command({"land", "--ready", "--", "/bin/sh", "-c",
                           "[ \"$SWARM_LAND_SLOT\" = e ] && sleep 3; exit 0"}));
  // c (still refused) first, then d, both said while e's check still runs.
  auto first = slow.read_line(2500ms);
  REQUIRE(first.has_value());
  CHECK(first->find("refused c") != std::string::npos);
  auto second = slow.read_line(2500ms);
  REQUIRE(second.has_value());
  CHECK(second->find("landed d") != std::string::npos);
  auto rest = slow.wait(30s);
  CHECK(rest.out.find("landed e") != std::string::npos);
}

TEST_CASE("Loop_StatusGivesTheTaskAtLeastTheHostsWidthAndWatchSumsUpOnce") {
  SwarmWorkspace ws;
  const std::string host = "build-host-with-a-very-long-name-number-07";
  auto env = kHostA;
  env["SWARM_HOST"] = host;
  REQUIRE(ws.swarm({"join", "--slot", "agent-1", "--task", "a-long-task-id-from-the-tracker-with-detail-1"}, env)
              .exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "agent-2", "--task", "T-2"}, env).exit == 0);
  env["COLUMNS"] = "80";
  auto status = ws.swarm({"status"}, env);
  REQUIRE(status.exit == 0);
  INFO(status.out);
  std::istringstream in(status.out);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  const auto task_at = header.find("TASK"), host_at = header.find("HOST"), age_at = header.find("AGE");
  CHECK(host_at - task_at >= age_at - host_at);           // the task's column is at least the host's
  CHECK(row.find("-07") != std::string::npos);            // the host cut in the middle keeps its end
  CHECK(row.find("build-") != std::string::npos);
  for (std::string l; std::getline(in, l);) CHECK(swarm::display_width(l) <= 80);
  // --slot is repeatable; a missing one is named.
  auto two = ws.swarm({"status", "--slot", "agent-1", "--slot", "agent-2", "--json"});
  CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(json_of(two).get(), "sessions")) == 2);
  auto missing = ws.swarm({"status", "--slot", "agent-1", "--slot", "nobody"});
  CHECK(missing.exit == 4);
  CHECK(missing.err.find("nobody") != std::string::npos);
  // --watch in a short terminal: one summary, of every session.
  for (int i = 3; i <= 30; ++i)
    REQUIRE(ws.swarm({"join", "--slot", "agent-" + std::to_string(i), "--task", "T-" + std::to_string(i)}).exit == 0);
  const std::string line = "stty cols 100 rows 12; timeout -s INT 3 " + swarm_binary() + " status --watch";
  Command c{{"/usr/bin/script", "-qefc", line, "/dev/null"}, kHostA, ws.root()};
  c.env["SWARM_WORKSPACE"] = ws.root().string();
  c.env["HOME"] = ws.home().string();
  c.env["TERM"] = "xterm";
  auto watch = run(c, 30s);
  // Each frame draws the summary once: as many summaries as frames, all alike.
  const int frames = lines_with(watch.out, "swarm status --watch");
  CHECK(frames >= 1);
  CHECK(lines_with(watch.out, "sessions:") == frames);
  CHECK(lines_with(watch.out, "30 sessions: 30 fresh") == frames);
}

TEST_CASE("Loop_LogAnswersWhatLandedOnABranchAndFollowsOnlyNewActs") {
  SwarmWorkspace ws;
  finish(ws, "a", "a.txt", "a\n");
  finish(ws, "b", "b.txt", "b\n");
  REQUIRE(ws.swarm({"land", "--slot", "a"}).exit == 0);
  REQUIRE(ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "branch", "release", "main~1"}).exit == 0);
  REQUIRE(ws.swarm({"land", "--slot", "b", "--onto", "release"}).exit == 0);
  auto on_main = ws.swarm({"log", "--onto", "main"});
  CHECK(lines_with(on_main.out, "land ") == 1);
  CHECK(on_main.out.find("slot/a") != std::string::npos);
  CHECK(on_main.out.find("slot/b") == std::string::npos);
  auto on_release = ws.swarm({"log", "--onto", "release", "-n", "1", "--json"});
  CHECK(on_release.out.find("\"slot\":\"b\"") != std::string::npos);
  CHECK(ws.swarm({"log", "-n", "0"}).exit == 2);  // 0 only with --follow

  Process follow(ws.command({"log", "-f", "-n", "0"}));
  std::this_thread::sleep_for(1s);
  REQUIRE(ws.swarm({"join", "--slot", "new", "--task", "T-new"}).exit == 0);
  // The join's grant of its task lease comes first, then the join itself.
  bool heard = false;
  for (int i = 0; i < 5 && !heard; ++i) {
    auto line = follow.read_line(10s);
    if (!line) break;
    heard = line->find("slot/new") != std::string::npos;
  }
  CHECK(heard);
  follow.signal(SIGINT);
  auto rest = follow.wait(10s);
  CHECK(rest.out.find("slot/a") == std::string::npos);  // nothing of the past
}

TEST_CASE("Loop_HelpListsEveryExitCodeAndRecoveryListHasAHeader") {
  SwarmWorkspace ws;
  auto help = ws.swarm({"--help"});
  for (int code = 0; code <= 9; ++code)
    CHECK_MESSAGE(help.out.find(std::to_string(code) + " ") != std::string::npos, code);
  CHECK(help.out.find("9 the local filesystem refused") != std::string::npos);
  REQUIRE(ws.swarm({"join", "--slot", "r", "--task", "T-r"}).exit == 0);
  write_file(ws.worktree("r") / "left.txt", "left behind\n");
  REQUIRE(ws.swarm({"close", "--slot", "r", "--result", "fail"}).exit == 0);
  auto list = ws.swarm({"recovery", "list"});
  CHECK(list.out.rfind("SALVAGED", 0) == 0);
  auto prune = ws.swarm({"recovery", "prune", "--older-than", "0s", "--dry-run"});
  CHECK(prune.out.find("1 folder ") != std::string::npos);
}

TEST_CASE("Loop_ABinaryConflictIsNotResolvedUntilTheAgentSaysSo") {
  // a binary file changed on both sides: sync leaves one side's bytes with no markers; commit refuses (exit 3,
  // naming it) until the agent chooses (git add), so the other side's change is never dropped silently.
  SwarmWorkspace ws;
  auto binary = [](const fs::path& wt, char fill) { write_file(wt / "blob.bin", std::string(1, '\0') + std::string(64, fill)); };
  for (const auto& [slot, fill] : {std::pair<std::string, char>{"left", 'l'}, {"right", 'r'}}) {
    REQUIRE(ws.swarm({"join", "--slot", slot, "--task", "T-" + slot}).exit == 0);
    binary(ws.worktree(slot), fill);
    REQUIRE(ws.swarm({"commit", "--slot", slot, "-m", slot}).exit == 0);
    REQUIRE(ws.swarm({"close", "--slot", slot, "--result", "success"}).exit == 0);
  }
  REQUIRE(ws.swarm({"land", "--slot", "left"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "right", "--task", "T-right"}).exit == 0);
  CHECK(ws.swarm({"sync", "--slot", "right"}).exit == 3);
  auto early = ws.swarm({"commit", "--slot", "right", "-m", "merge"});
  CHECK(early.exit == 3);
  CHECK(early.err.find("blob.bin") != std::string::npos);
  REQUIRE(ws.git({"add", "blob.bin"}, ws.worktree("right")).exit == 0);  // the agent keeps its side
  auto chosen = ws.swarm({"commit", "--slot", "right", "-m", "merge: keep ours"});
  CHECK_MESSAGE(chosen.exit == 0, chosen.err);
}

TEST_CASE("Loop_AForcedJoinThatFailsAfterWritingPutsTheLiveSessionBack") {
  // a --force join whose worktree step fails after its record was written (a folder where leaf.pid goes): the
  // live session is back with its token, its task lease kept, its worktree untouched.
  SwarmWorkspace ws;
  auto join = ws.swarm({"join", "--slot", "s", "--task", "T-1", "--json"});
  REQUIRE(join.exit == 0);
  const double token = number(json_of(join), "session_token");
  write_file(ws.worktree("s") / "work.txt", "in progress\n");
  fs::remove(ws.root() / ".swarm/slots/s/leaf.pid");
  fs::create_directories(ws.root() / ".swarm/slots/s/leaf.pid/in-the-way");
  auto forced = ws.swarm({"join", "--slot", "s", "--task", "T-1", "--force"});
  CHECK(forced.exit != 0);
  auto status = json_of(ws.swarm({"status", "--slot", "s", "--json"}));
  const cJSON* row = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(status.get(), "sessions"), 0);
  REQUIRE(row != nullptr);
  CHECK(number_of(row, "session_token") == token);
  CHECK(ws.swarm({"lease", "show", "task.T-1"}).out.find("held") != std::string::npos);
  CHECK(read_file(ws.worktree("s") / "work.txt") == "in progress\n");
}

TEST_CASE("Loop_ABranchThatMovedSinceItsCloseIsNotReady") {
  // commits pushed after a success close (a session since evicted) were never said to be done: land --slot
  // refuses without --force.
  SwarmWorkspace ws;
  finish(ws, "moved", "a.txt", "a\n");
  REQUIRE(ws.swarm({"join", "--slot", "moved", "--task", "T-m"}).exit == 0);
  write_file(ws.worktree("moved") / "b.txt", "b\n");
  REQUIRE(ws.swarm({"commit", "--slot", "moved", "-m", "after the close"}).exit == 0);
  REQUIRE(ws.swarm({"evict", "--slot", "moved"}).exit == 0);
  auto r = ws.swarm({"land", "--slot", "moved"});
  CHECK(r.exit == 3);
  CHECK(r.err.find("moved since its last close") != std::string::npos);
  CHECK(ws.swarm({"land", "--slot", "moved", "--force"}).exit == 0);
}

TEST_CASE("Loop_KeepingOneSideResolvesATextConflict") {
  // a text conflict resolved by keeping one side whole (git checkout --ours): no marker is left, so commit
  // finishes the merge; the markers sync left name the two branches, not commit ids.
  SwarmWorkspace ws;
  for (const std::string slot : {"left", "right"}) {
    REQUIRE(ws.swarm({"join", "--slot", slot, "--task", "T-" + slot}).exit == 0);
    write_file(ws.worktree(slot) / "shared.txt", "from " + slot + "\n");
    REQUIRE(ws.swarm({"commit", "--slot", slot, "-m", slot}).exit == 0);
    REQUIRE(ws.swarm({"close", "--slot", slot, "--result", "success"}).exit == 0);
  }
  REQUIRE(ws.swarm({"land", "--slot", "left"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "right", "--task", "T-right"}).exit == 0);
  CHECK(ws.swarm({"sync", "--slot", "right"}).exit == 3);
  const std::string marked = read_file(ws.worktree("right") / "shared.txt");
  CHECK(marked.find("<<<<<<< swarm/right") != std::string::npos);
  CHECK(marked.find(">>>>>>> main") != std::string::npos);
  REQUIRE(ws.git({"checkout", "--ours", "shared.txt"}, ws.worktree("right")).exit == 0);
  CHECK(read_file(ws.worktree("right") / "shared.txt") == "from right\n");
  auto commit = ws.swarm({"commit", "--slot", "right", "-m", "merge: keep mine"});
  CHECK_MESSAGE(commit.exit == 0, commit.err);
  CHECK(ws.git({"rev-list", "--parents", "-n", "1", "HEAD"}, ws.worktree("right")).out.find(' ') !=
        ws.git({"rev-list", "--parents", "-n", "1", "HEAD"}, ws.worktree("right")).out.rfind(' '));  // two parents
}

TEST_CASE("Loop_AMergeHeadThatNamesNoCommitIsExit3NamingIt") {
  // a MERGE_HEAD naming a blob, or an object the clone lacks: commit is exit 3 naming the file and what it
  // names (never exit 1), and nothing is committed.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-s"}).exit == 0);
  write_file(ws.worktree("s") / "a.txt", "a\n");
  const std::string blob = ws.git({"hash-object", "-w", "a.txt"}, ws.worktree("s")).out.substr(0, 40);
  const std::string before = ws.git({"rev-parse", "HEAD"}, ws.worktree("s")).out;
  for (const std::string& named : {blob, std::string("0123456789abcdef0123456789abcdef01234567")}) {
    CAPTURE(named);
    write_file(ws.worktree("s") / ".git/MERGE_HEAD", named + "\n");
    auto commit = ws.swarm({"commit", "--slot", "s", "-m", "merge"});
    CHECK(commit.exit == 3);
    CHECK(commit.err.find("MERGE_HEAD") != std::string::npos);
    CHECK(commit.err.find(named) != std::string::npos);
    CHECK(ws.git({"rev-parse", "HEAD"}, ws.worktree("s")).out == before);
  }
}
