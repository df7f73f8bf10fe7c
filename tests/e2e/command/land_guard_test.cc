// What never reaches the onto branch, through the real binary: work a check
// refused (its refusal stands at that head, for every later land, with or
// without a check, until the branch moves or a land is forced), work that
// skipped the workspace's required check without saying so, and a tree no
// checkout can write. And what a check never gets: the lander's credentials,
// or a relative path to .swarm/'s secrets.
#include <doctest/doctest.h>

#include <fstream>

#include "e2e/command/land_support.h"
#include "e2e/swarm_fixture.h"
#include "support/json_fields.h"
#include "swarm/landing/check.h"

using namespace testing;
using namespace testing::land;
namespace fs = std::filesystem;

namespace {

// A check that fails when the tree has a file named BAD, counting its runs in `count`.
std::vector<std::string> bad_file_check(const fs::path& count) {
  return {"/bin/sh", "-c", "echo run >> " + count.string() + "; test ! -e BAD"};
}

std::vector<std::string> with_check(std::vector<std::string> args, const std::vector<std::string>& check) {
  args.push_back("--");
  args.insert(args.end(), check.begin(), check.end());
  return args;
}

int runs_of(const fs::path& count) {
  std::ifstream in(count);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// `script` run by sh in `dir`: its stdout, without the last newline.
std::string shell(const fs::path& dir, const std::string& script) {
  auto r = run({{"/bin/sh", "-c", script}, {}, dir});
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  std::string text = r.out;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// A commit in the clone at `dir` (made with plain git, as an agent may),
// now its HEAD, whose tree holds `name` twice: a link, and a folder with a
// file in it.
std::string commit_bad_tree(const fs::path& dir, const std::string& name) {
  const std::string tree = shell(dir, "link=$(printf target | git hash-object -w --stdin); "
                                      "file=$(echo x | git hash-object -w --stdin); "
                                      "sub=$(printf '100644 blob %s\\tinner.txt\\n' $file | git mktree); "
                                      "{ git ls-tree HEAD; printf '120000 blob %s\\t" + name +
                                      "\\n040000 tree %s\\t" + name + "\\n' $link $sub; } | git mktree");
  const std::string commit =
      shell(dir, "git -c user.name=agent -c user.email=a@example.com commit-tree " + tree + " -p HEAD -m 'bad tree'");
  shell(dir, "git update-ref HEAD " + commit);
  return commit;
}

}  // namespace

// A slot a check refused is refused by every later land at that head
// (plain `land --ready` included), shown as refused, until its branch
// moves past the head or a land is forced.
TEST_CASE("LandGuard_ARefusalStandsUntilTheBranchMoves") {
  SwarmWorkspace ws;
  finish(ws, "p1", "p1.txt", "1\n");
  finish(ws, "p3", "BAD", "broken\n");
  finish(ws, "p4", "BAD", "broken too\n");
  const fs::path count = ws.home() / "runs";
  auto first = ws.swarm(with_check({"land", "--ready"}, bad_file_check(count)));
  CHECK(first.exit == 3);
  CHECK(first.out.find("landed p1") != std::string::npos);
  CHECK(first.out.find("refused p3") != std::string::npos);
  const std::string main_after = hub_tip(ws, "main");

  // The Quick start's plain form: no check given, and p3 is refused again (nothing ran, nothing moved).
  const int runs = runs_of(count);
  auto plain = ws.swarm({"land", "--ready"});
  CHECK(plain.exit == 3);
  CHECK(plain.out.find("refused p3") != std::string::npos);
  CHECK(plain.out.find("--force") != std::string::npos);
  CHECK(hub_tip(ws, "main") == main_after);
  CHECK(runs_of(count) == runs);
  auto one = ws.swarm({"land", "--slot", "p3"});
  CHECK(one.exit == 3);
  CHECK(one.err.find("refused") != std::string::npos);
  CHECK(hub_tip(ws, "main") == main_after);

  auto branches = ws.swarm({"branches", "--json"});
  REQUIRE_MESSAGE(branches.exit == 0, branches.err);
  auto doc = json_of(branches);
  const cJSON* p3 = row_of(doc, "p3");
  REQUIRE(p3 != nullptr);
  const cJSON* refused = cJSON_GetObjectItemCaseSensitive(p3, "refused");
  REQUIRE(cJSON_IsObject(refused));
  CHECK(text_of(refused, "reason") == "check");
  CHECK(text_of(refused, "head") == hub_tip(ws, "swarm/p3"));
  CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(row_of(doc, "p1"), "refused")));
  auto text = ws.swarm({"branches"});
  CHECK(text.out.find("refused") != std::string::npos);

  // Its agent fixes it: the branch moves past the refused head and lands.
  REQUIRE(ws.swarm({"join", "--slot", "p3", "--task", "T-p3"}).exit == 0);
  fs::remove(ws.worktree("p3") / "BAD");
  REQUIRE(ws.swarm({"commit", "--slot", "p3", "-m", "fix"}).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "p3", "--result", "success"}).exit == 0);
  // p4 still stands refused; --force lands it anyway, journaled as forced.
  auto again = ws.swarm({"land", "--ready", "--json"});
  CHECK(again.exit == 3);
  CHECK(again.out.find("\"slot\":\"p3\",\"onto\":\"main\",\"outcome\":\"landed\"") != std::string::npos);
  auto forced = ws.swarm({"land", "--slot", "p4", "--force", "--json"});
  REQUIRE_MESSAGE(forced.exit == 0, forced.err);
  CHECK(json_true(json_of(forced), "forced"));
  CHECK(ws.swarm({"log", "--slot", "p4", "--kind", "land", "--json"}).out.find("\"forced\":true") !=
        std::string::npos);
}

// `up --check` names a check every land runs; `--no-check` skips it,
// journaled as forced; `up --check ''` removes it.
TEST_CASE("LandGuard_TheWorkspaceCheckRunsOnEveryLand") {
  SwarmWorkspace ws;
  const fs::path count = ws.home() / "runs";
  const std::string line = "/bin/sh -c 'echo run >> " + count.string() + "; test ! -e BAD'";
  auto up = ws.swarm({"up", "--check", line, "--json"});
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  CHECK(field(json_of(up), "check") == line);
  CHECK(read_file(ws.root() / ".swarm/config.json").find("\"check\"") != std::string::npos);
  // A check that cannot be split is bad input, before anything changes.
  auto unterminated = ws.swarm({"up", "--check", "make 'test"});
  CHECK(unterminated.exit == 2);
  CHECK(unterminated.err.find("never closed") != std::string::npos);

  finish(ws, "good", "good.txt", "good\n");
  finish(ws, "bad", "BAD", "bad\n");
  finish(ws, "skip", "BAD", "bad, landed anyway\n");
  auto good = ws.swarm({"land", "--slot", "good"});
  REQUIRE_MESSAGE(good.exit == 0, good.err);
  CHECK(runs_of(count) == 1);
  auto bad = ws.swarm({"land", "--slot", "bad"});
  CHECK(bad.exit == 3);
  CHECK(runs_of(count) == 2);
  CHECK(hub_git(ws, {"ls-tree", "--name-only", "main"}).find("BAD") == std::string::npos);
  auto skipped = ws.swarm({"land", "--slot", "skip", "--no-check", "--json"});
  REQUIRE_MESSAGE(skipped.exit == 0, skipped.err);
  CHECK(runs_of(count) == 2);
  auto log = ws.swarm({"log", "--slot", "skip", "--kind", "land", "--json"});
  CHECK(log.out.find("\"forced\":true") != std::string::npos);
  CHECK(log.out.find("\"no_check\":true") != std::string::npos);

  // Removed: lands run no check any more (and up says none).
  auto removed = ws.swarm({"up", "--check", "", "--json"});
  REQUIRE_MESSAGE(removed.exit == 0, removed.err);
  CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(json_of(removed).get(), "check")));
  finish(ws, "later", "later.txt", "later\n");
  REQUIRE(ws.swarm({"land", "--slot", "later"}).exit == 0);
  CHECK(runs_of(count) == 2);
}

// Without a check, a branch whose tree no checkout can write (a link and a
// folder at one path) is refused as `checkout` and the onto branch stays;
// in a batch, only it is left out.
TEST_CASE("LandGuard_ATreeThatCannotBeCheckedOutIsRefused") {
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "bad", "--task", "T-bad"}).exit == 0);
  const std::string commit = commit_bad_tree(ws.worktree("bad"), "cfg");
  auto close = ws.swarm({"close", "--slot", "bad", "--result", "success"});
  REQUIRE_MESSAGE(close.exit == 0, close.err);
  REQUIRE(hub_tip(ws, "swarm/bad") == commit);
  finish(ws, "fine", "fine.txt", "fine\n");
  const std::string before = hub_tip(ws, "main");

  auto alone = ws.swarm({"land", "--slot", "bad", "--json"});
  CHECK(alone.exit == 3);
  CHECK(alone.err.find("cannot be checked out") != std::string::npos);
  CHECK(alone.err.find("cfg") != std::string::npos);
  CHECK(hub_tip(ws, "main") == before);
  CHECK(ws.swarm({"log", "--slot", "bad", "--kind", "land.refused", "--json"}).out.find("\"reason\":\"checkout\"") !=
        std::string::npos);

  auto ready = ws.swarm({"land", "--ready", "--json"});
  CHECK(ready.exit == 3);
  CHECK(ready.out.find("\"slot\":\"fine\",\"onto\":\"main\",\"outcome\":\"landed\"") != std::string::npos);
  CHECK(hub_git(ws, {"ls-tree", "--name-only", "main"}).find("cfg") == std::string::npos);
}

// The batch form: the bad tree is bisected out; the good ones land.
TEST_CASE("LandGuard_ABatchLeavesOutATreeThatCannotBeCheckedOut") {
  SwarmWorkspace ws;
  // First in the batch: a fast-forward, whose tree the batch's check-out test refuses.
  REQUIRE(ws.swarm({"join", "--slot", "bad", "--task", "T-bad"}).exit == 0);
  commit_bad_tree(ws.worktree("bad"), "cfg");
  REQUIRE(ws.swarm({"close", "--slot", "bad", "--result", "success"}).exit == 0);
  finish(ws, "a", "a.txt", "a\n");
  finish(ws, "c", "c.txt", "c\n");
  auto land = ws.swarm({"land", "--ready", "--batch", "8", "--json"});
  CHECK(land.exit == 3);
  auto doc = json_of(land);
  std::map<std::string, std::string> outcome, reason;
  const cJSON* row = nullptr;
  cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(doc.get(), "lands")) {
    outcome[text_of(row, "slot")] = text_of(row, "outcome");
    reason[text_of(row, "slot")] = text_of(row, "reason");
  }
  CHECK(outcome["a"] == "landed");
  CHECK(outcome["c"] == "landed");
  CHECK(outcome["bad"] == "refused");
  CHECK(reason["bad"] == "checkout");
  const std::string tree = hub_git(ws, {"ls-tree", "--name-only", "main"});
  CHECK(tree.find("cfg") == std::string::npos);
  CHECK(tree.find("c.txt") != std::string::npos);
}

// An onto branch that already holds such a tree (pushed around swarm):
// a join is exit 3 naming the path, and leaves no slot behind.
TEST_CASE("LandGuard_AJoinOfAnUncheckableOntoBranchNamesThePath") {
  SwarmWorkspace ws;
  const fs::path clone = ws.home() / "clone";
  REQUIRE(ws.git({"clone", "-q", (ws.root() / ".swarm/hub.git").string(), clone.string()}).exit == 0);
  commit_bad_tree(clone, "cfg");
  REQUIRE(ws.git({"push", "-q", "origin", "HEAD:main"}, clone).exit == 0);
  auto join = ws.swarm({"join", "--slot", "j", "--task", "T-j"});
  CHECK(join.exit == 3);
  CHECK(join.err.find("cfg") != std::string::npos);
  CHECK(join.err.find("cannot be checked out") != std::string::npos);
  CHECK_FALSE(fs::exists(ws.worktree("j")));
  CHECK(ws.swarm({"status", "--slot", "j"}).exit != 0);
}

// A check runs with no NATS_* or SWARM_* variable of the lander (its
// credentials, its session), in a folder outside the workspace.
TEST_CASE("LandGuard_ACheckGetsNoSecret") {
  SwarmWorkspace ws;
  finish(ws, "s", "s.txt", "s\n");
  const fs::path seen = ws.home() / "seen";
  const std::vector<std::string> check = {
      "/bin/sh", "-c",
      "env > " + seen.string() + ".env; pwd -P > " + seen.string() + ".pwd; "
      "for up in .. ../.. ../../.. ../../../..; do cat $up/serve/token $up/nats/token $up/.swarm/serve/token "
      "2>/dev/null; done > " + seen.string() + ".leak; true"};
  auto env = kHostA;
  env["NATS_USER"] = "lander";
  env["NATS_PASSWORD"] = "nats-secret-value";
  env["SWARM_HUB_PASSWORD"] = "hub-secret-value";
  env["SWARM_HUB_USERNAME"] = "hub-user";
  env["SWARM_WORKSPACE"] = ws.root().string();
  auto land = ws.swarm(with_check({"land", "--slot", "s"}, check), env);
  REQUIRE_MESSAGE(land.exit == 0, land.err);
  const std::string vars = read_file(seen.string() + ".env");
  CHECK(vars.find("SWARM_LAND_SLOT=s") != std::string::npos);
  CHECK(vars.find("SWARM_FENCING_TOKEN=") != std::string::npos);
  CHECK(vars.find("NATS_") == std::string::npos);
  CHECK(vars.find("secret-value") == std::string::npos);
  CHECK(vars.find("SWARM_HUB_") == std::string::npos);
  CHECK(vars.find("SWARM_WORKSPACE") == std::string::npos);
  std::string pwd = read_file(seen.string() + ".pwd");
  const std::string root = fs::weakly_canonical(ws.root()).string();
  CAPTURE(pwd);
  CHECK(pwd.rfind(root + "/", 0) != 0);
  CHECK(read_file(seen.string() + ".leak").empty());
}

// A batch and its retries run the check as a single land does: no NATS or
// hub credential, and no variable that names one (a GitHub or cloud token,
// an ssh agent) in any of its runs.
TEST_CASE("LandGuard_ABatchAndItsRetriesGetNoCredentialEither") {
  SwarmWorkspace ws;
  finish(ws, "b1", "b1.txt", "one\n");
  finish(ws, "b2", "b2.txt", "two\n");
  const fs::path seen = ws.home() / "runs";
  fs::create_directories(seen);
  // Each run keeps its environment; the first fails, so the batch is retried.
  const std::vector<std::string> check = {
      "/bin/sh", "-c",
      "env > " + seen.string() + "/run.$$.env; if [ ! -e " + seen.string() + "/failed ]; then touch " +
          seen.string() + "/failed; exit 1; fi; true"};
  auto env = kHostA;
  env["NATS_PASSWORD"] = "nats-secret-value";
  env["SWARM_HUB_PASSWORD"] = "hub-secret-value";
  env["GITHUB_TOKEN"] = "gh-secret-value";
  env["AWS_SECRET_ACCESS_KEY"] = "aws-secret-value";
  env["OPENAI_API_KEY"] = "api-secret-value";
  env["SSH_AUTH_SOCK"] = "/tmp/agent-secret-value";
  env["GIT_AUTHOR_NAME"] = "kept-author";
  auto land = ws.swarm(with_check({"land", "--ready", "--batch", "8", "--retries", "1"}, check), env);
  REQUIRE_MESSAGE(land.exit == 0, land.err);
  int runs = 0;
  for (const auto& entry : fs::directory_iterator(seen)) {
    if (entry.path().extension() != ".env") continue;
    ++runs;
    const std::string vars = read_file(entry.path());
    CAPTURE(entry.path());
    CHECK(vars.find("secret-value") == std::string::npos);
    CHECK(vars.find("kept-author") != std::string::npos);
  }
  CHECK(runs >= 2);  // the failed run and its retry at least
}

// Which names count as a credential: words of the name, not parts of words.
TEST_CASE("LandGuard_CredentialNamesAreWithheldByTheirWords") {
  for (const char* name : {"NATS_URL", "SWARM_SESSION", "GITHUB_TOKEN", "GH_TOKEN", "AWS_REGION", "NPM_TOKEN",
                           "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SSH_AUTH_SOCK", "DB_PASSWORD", "my_secret",
                           "GOOGLE_APPLICATION_CREDENTIALS", "DOCKER_AUTH_CONFIG", "PGPASS_FILE_PASS"}) {
    CAPTURE(name);
    CHECK(swarm::withheld_from_checks(name));
  }
  for (const char* name : {"PATH", "HOME", "GIT_AUTHOR_NAME", "KEYBOARD_LAYOUT", "LANG", "TOKENIZERS_PARALLELISM",
                           "PASSAGE", "CC", "MAKEFLAGS"}) {
    CAPTURE(name);
    CHECK_FALSE(swarm::withheld_from_checks(name));
  }
}
