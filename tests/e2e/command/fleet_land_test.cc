// Landing for a fleet, through the real binary: conflicts foreseen between
// unlanded slot branches (and with the onto branch) by `branches` and at
// each `commit`, the fast lane, flaky checks retried, and batches bisected
// down to their culprits, with a lander killed in the middle of it.
#include <doctest/doctest.h>

#include <signal.h>

#include <cmath>
#include <fstream>
#include <set>

#include "e2e/command/land_support.h"
#include "e2e/swarm_fixture.h"

using namespace testing;
using namespace testing::land;
namespace fs = std::filesystem;

namespace {

// join `slot`, write each file, commit: a slot at work (not closed).
RunResult work(const SwarmWorkspace& ws, const std::string& slot, const std::map<std::string, std::string>& files) {
  auto join = ws.swarm({"join", "--slot", slot, "--task", "T-" + slot});
  REQUIRE_MESSAGE(join.exit == 0, join.err);
  for (const auto& [name, text] : files) write_file(ws.worktree(slot) / name, text);
  return ws.swarm({"commit", "--slot", slot, "-m", slot, "--json"});
}

// The `conflicts` (branches) or `overlaps` (commit) of `row` as "with:path,path;...".
std::string overlaps_of(const cJSON* row, const char* member) {
  std::string out;
  const cJSON* item = nullptr;
  cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(row, member)) {
    out += (out.empty() ? "" : ";") + text_of(item, "with") + ":";
    const cJSON* path = nullptr;
    std::string paths;
    cJSON_ArrayForEach(path, cJSON_GetObjectItemCaseSensitive(item, "paths")) {
      paths += (paths.empty() ? "" : ",") + std::string(cJSON_IsString(path) ? path->valuestring : "?");
    }
    out += paths;
  }
  return out;
}

// Lines of a file (0 when it is not there): how often a check ran.
int lines_in(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) ++n;
  return n;
}

// A check that counts its runs in `count` and fails when any CULPRIT-* file is in the tree.
std::vector<std::string> culprit_check(const fs::path& count) {
  return {"/bin/sh", "-c", "echo \"$SWARM_LAND_SLOT\" >> " + count.string() + "; ! ls CULPRIT-* >/dev/null 2>&1"};
}

// `n` finished slots s00.., each adding its own file; those in `culprits`
// also add a CULPRIT file.
void finish_many(const SwarmWorkspace& ws, int n, const std::set<int>& culprits) {
  for (int i = 0; i < n; ++i) {
    char name[8];
    std::snprintf(name, sizeof name, "s%02d", i);
    auto join = ws.swarm({"join", "--slot", name, "--task", std::string("T-") + name});
    REQUIRE_MESSAGE(join.exit == 0, join.err);
    write_file(ws.worktree(name) / (std::string(name) + ".txt"), name);
    if (culprits.count(i)) write_file(ws.worktree(name) / ("CULPRIT-" + std::string(name)), "bad\n");
    auto commit = ws.swarm({"commit", "--slot", name, "-m", name});
    REQUIRE_MESSAGE(commit.exit == 0, commit.err);
    auto close = ws.swarm({"close", "--slot", name});
    REQUIRE_MESSAGE(close.exit == 0, close.err);
  }
}

}  // namespace

TEST_CASE("Fleet_ConflictsAreForeseenAtCommitAndInBranches") {
  SwarmWorkspace ws;
  // Slot d starts from main as it is now; x changes main.txt and lands first.
  auto d_join = ws.swarm({"join", "--slot", "d", "--task", "T-d"});
  REQUIRE_MESSAGE(d_join.exit == 0, d_join.err);
  finish(ws, "x", "main.txt", "x\n");
  REQUIRE(ws.swarm({"land", "--slot", "x"}).exit == 0);

  auto a = work(ws, "a", {{"shared.txt", "from a\n"}});
  REQUIRE_MESSAGE(a.exit == 0, a.err);
  CHECK(overlaps_of(json_of(a).get(), "overlaps").empty());
  // b changes what a changed: told at once, naming a and the path.
  auto b = work(ws, "b", {{"shared.txt", "from b\n"}});
  REQUIRE_MESSAGE(b.exit == 0, b.err);
  CHECK(overlaps_of(json_of(b).get(), "overlaps") == "swarm/a:shared.txt");
  CHECK(b.err.find("conflicts with slot a on shared.txt") != std::string::npos);
  // c changes another file; e and f change one file the same way: no conflict.
  auto c = work(ws, "c", {{"other.txt", "c\n"}});
  CHECK(overlaps_of(json_of(c).get(), "overlaps").empty());
  CHECK(c.err.find("conflicts") == std::string::npos);
  REQUIRE(work(ws, "e", {{"same.txt", "same\n"}}).exit == 0);
  auto f = work(ws, "f", {{"same.txt", "same\n"}});
  CHECK(overlaps_of(json_of(f).get(), "overlaps").empty());
  // d changes what main changed since d started: a conflict with main.
  write_file(ws.worktree("d") / "main.txt", "d\n");
  auto d = ws.swarm({"commit", "--slot", "d", "-m", "d", "--json"});
  REQUIRE_MESSAGE(d.exit == 0, d.err);
  CHECK(overlaps_of(json_of(d).get(), "overlaps") == "main:main.txt");
  CHECK(d.err.find("conflicts with the onto branch main on main.txt") != std::string::npos);

  auto branches = ws.swarm({"branches", "--json"});
  REQUIRE_MESSAGE(branches.exit == 0, branches.err);
  auto doc = json_of(branches);
  CHECK(overlaps_of(row_of(doc, "a"), "conflicts") == "swarm/b:shared.txt");
  CHECK(overlaps_of(row_of(doc, "b"), "conflicts") == "swarm/a:shared.txt");
  CHECK(overlaps_of(row_of(doc, "c"), "conflicts").empty());
  CHECK(overlaps_of(row_of(doc, "d"), "conflicts") == "main:main.txt");
  CHECK(overlaps_of(row_of(doc, "e"), "conflicts").empty());
  CHECK(overlaps_of(row_of(doc, "x"), "conflicts").empty());  // landed: nothing to foresee
  auto text = ws.swarm({"branches"});
  CHECK(text.out.find("conflicts with slot b on shared.txt") != std::string::npos);

  // The journal has it: one overlap event for b's commit, naming a.
  auto log = ws.swarm({"log", "--kind", "overlap", "--json"});
  CHECK(log.out.find("\"slot\":\"b\"") != std::string::npos);
  CHECK(log.out.find("\"with\":\"swarm/a\"") != std::string::npos);
  CHECK(log.out.find("\"slot\":\"c\"") == std::string::npos);
}

TEST_CASE("Fleet_AHighPrioritySlotLandsFirst") {
  SwarmWorkspace ws;
  finish(ws, "n1", "n1.txt", "1\n");
  REQUIRE(ws.swarm({"join", "--slot", "hot", "--task", "T-hot"}).exit == 0);
  write_file(ws.worktree("hot") / "hot.txt", "fix\n");
  REQUIRE(ws.swarm({"commit", "--slot", "hot", "-m", "fix"}).exit == 0);
  // Only work that lands has a lane: refused before anything is done.
  auto wrong = ws.swarm({"close", "--slot", "hot", "--result", "fail", "--priority", "high"});
  CHECK(wrong.exit == 2);
  CHECK(wrong.err.find("--priority high") != std::string::npos);
  CHECK(fs::exists(ws.worktree("hot")));
  CHECK(ws.swarm({"close", "--slot", "hot", "--priority", "urgent"}).exit == 2);
  REQUIRE(ws.swarm({"close", "--slot", "hot", "--priority", "high"}).exit == 0);
  finish(ws, "n2", "n2.txt", "2\n");

  auto branches = json_of(ws.swarm({"branches", "--json"}));
  CHECK(text_of(row_of(branches, "hot"), "priority") == "high");
  CHECK(text_of(row_of(branches, "n1"), "priority") == "normal");
  auto land = ws.swarm({"land", "--ready"});
  REQUIRE_MESSAGE(land.exit == 0, land.err);
  const auto hot = land.out.find("landed hot"), n1 = land.out.find("landed n1"), n2 = land.out.find("landed n2");
  REQUIRE(hot != std::string::npos);
  REQUIRE(n1 != std::string::npos);
  REQUIRE(n2 != std::string::npos);
  CHECK(hot < n1);
  CHECK(n1 < n2);
}

TEST_CASE("Fleet_AFlakyCheckIsRetriedOnTheSameTreeAndJournaled") {
  SwarmWorkspace ws;
  finish(ws, "flaky", "f.txt", "f\n");
  // Fails its first run under each lease, passes the next: flaky.
  const fs::path runs = ws.home() / "runs";
  fs::create_directories(runs);
  const std::vector<std::string> check = {
      "/bin/sh", "-c",
      "r=" + runs.string() + "/$SWARM_FENCING_TOKEN; echo \"$(git rev-parse HEAD 2>/dev/null) $(ls)\" >> $r.trees; "
      "if [ -e $r ]; then exit 0; fi; touch $r; touch left-behind; exit 1"};
  std::vector<std::string> once = {"land", "--slot", "flaky", "--"};
  once.insert(once.end(), check.begin(), check.end());
  auto refused = ws.swarm(once);
  CHECK(refused.exit == 3);
  CHECK(hub_tip(ws, "main") != hub_tip(ws, "swarm/flaky"));
  // --retries without a check, --batch without --ready: bad input.
  CHECK(ws.swarm({"land", "--slot", "flaky", "--retries", "1"}).exit == 2);
  CHECK(ws.swarm({"land", "--slot", "flaky", "--batch", "4"}).exit == 2);
  CHECK(ws.swarm({"land", "--ready", "--batch", "0"}).exit == 2);

  // Refused at this head, it stays refused: the retry is a forced land.
  std::vector<std::string> retried = {"land", "--slot", "flaky", "--retries", "2", "--force", "--json", "--"};
  retried.insert(retried.end(), check.begin(), check.end());
  auto landed = ws.swarm(retried);
  REQUIRE_MESSAGE(landed.exit == 0, landed.err);
  auto doc = json_of(landed);
  CHECK(field(doc, "check") == "flaky");
  CHECK(number(doc, "check_attempts") == 2);
  auto log = ws.swarm({"log", "--slot", "flaky", "--kind", "land", "--json"});
  CHECK(log.out.find("\"flaky\":true") != std::string::npos);
  CHECK(log.out.find("\"check_attempts\":2") != std::string::npos);
  // The retry ran on the same tree, without what the failed run left behind.
  int trees = 0;
  for (const auto& entry : fs::directory_iterator(runs)) {
    if (entry.path().extension() != ".trees") continue;
    std::ifstream in(entry.path());
    std::string first, second;
    std::getline(in, first);
    if (!std::getline(in, second)) continue;
    ++trees;
    CHECK(first == second);
    CHECK(second.find("left-behind") == std::string::npos);
  }
  CHECK(trees == 1);
}

TEST_CASE("Fleet_ABatchIsBisectedAndOnlyTheCulpritsAreRefused") {
  struct Case {
    std::set<int> culprits;
  };
  for (const Case& c : {Case{{}}, Case{{5}}, Case{{3, 12}}}) {
    CAPTURE(c.culprits.size());
    SwarmWorkspace ws;
    const int n = 16;
    finish_many(ws, n, c.culprits);
    const std::string before = hub_tip(ws, "main");
    const fs::path count = ws.home() / "checks";
    std::vector<std::string> args = {"land", "--ready", "--batch", "16", "--json", "--"};
    for (const auto& a : culprit_check(count)) args.push_back(a);
    auto land = ws.swarm(args);
    CHECK(land.exit == (c.culprits.empty() ? 0 : 3));
    auto doc = json_of(land);
    REQUIRE(doc);
    int landed = 0, refused = 0;
    const cJSON* row = nullptr;
    std::string batch;
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(doc.get(), "lands")) {
      const std::string slot = text_of(row, "slot");
      const bool culprit = c.culprits.count(std::stoi(slot.substr(1))) != 0;
      CAPTURE(slot);
      CHECK(text_of(row, "outcome") == (culprit ? "refused" : "landed"));
      if (culprit) CHECK(text_of(row, "reason") == "check");
      if (batch.empty()) batch = text_of(row, "batch");
      CHECK(text_of(row, "batch") == batch);
      (culprit ? refused : landed) += 1;
    }
    CHECK(landed == n - static_cast<int>(c.culprits.size()));
    CHECK(refused == static_cast<int>(c.culprits.size()));
    // Checks against the bound: one for a clean batch, 1 + 2*log2(N) per culprit.
    const int checks = lines_in(count);
    std::ifstream ran(count);
    const std::string runs((std::istreambuf_iterator<char>(ran)), std::istreambuf_iterator<char>());
    MESSAGE("culprits ", c.culprits.size(), ": ", checks, " checks for ", n, " slots:\n", runs);
    if (c.culprits.empty()) CHECK(checks == 1);
    else CHECK(checks <= 1 + 2 * static_cast<int>(c.culprits.size()) * 4);
    // Exactly the good ones are in main, each by its own merge; the onto branch moved once.
    const std::string tree = hub_git(ws, {"ls-tree", "--name-only", "main"});
    CHECK(tree.find("CULPRIT") == std::string::npos);
    for (int i = 0; i < n; ++i) {
      char name[16];
      std::snprintf(name, sizeof name, "s%02d.txt", i);
      CHECK((tree.find(name) != std::string::npos) == (c.culprits.count(i) == 0));
    }
    const std::string reflog = hub_git(ws, {"rev-list", "--first-parent", "--count", before + "..main"});
    CHECK(std::stoi(reflog) == landed);
    auto refusals = ws.swarm({"log", "--kind", "land.refused", "--json"});
    if (!c.culprits.empty()) CHECK(refusals.out.find("\"convicted_by\"") != std::string::npos);
  }
}

TEST_CASE("Fleet_ALanderKilledMidBisectionLeavesOntoUnchanged") {
  SwarmWorkspace ws;
  finish_many(ws, 8, {6});
  const std::string before = hub_tip(ws, "main");
  const fs::path count = ws.home() / "checks";
  std::vector<std::string> args = {"land", "--ready", "--batch", "8", "--ttl", "2s", "--"};
  for (const auto& a : culprit_check(count)) args.push_back(a);
  auto env = kHostA;
  env["SWARM_TEST_LAND_STOP"] = "bisect";
  Process lander(ws.command(args, env));
  REQUIRE(stopped_within(lander.pid(), std::chrono::seconds(30)));
  lander.signal(SIGKILL);
  lander.wait();
  CHECK(hub_tip(ws, "main") == before);
  CHECK(ws.swarm({"log", "--kind", "land", "--json"}).out.empty());
  // The next lander (within the killed one's TTL) lands the batch whole, but for its culprit.
  auto again = ws.swarm(args);
  CHECK(again.exit == 3);
  CHECK(again.out.find("refused s06") != std::string::npos);
  const std::string tree = hub_git(ws, {"ls-tree", "--name-only", "main"});
  CHECK(tree.find("s07.txt") != std::string::npos);
  CHECK(tree.find("CULPRIT") == std::string::npos);
}

TEST_CASE("Fleet_ABranchMadeFromABatchMateStandsOnItsOwn") {
  // y starts from x's branch and carries the culprit; y is in the fast lane,
  // so the batch holds y first: x is in the candidate only through y, and
  // must still land on its own when y is convicted.
  SwarmWorkspace ws;
  finish(ws, "x", "x.txt", "x\n");
  auto join = ws.swarm({"join", "--slot", "y", "--task", "T-y", "--base", "swarm/x"});
  REQUIRE_MESSAGE(join.exit == 0, join.err);
  write_file(ws.worktree("y") / "CULPRIT-y", "bad\n");
  REQUIRE(ws.swarm({"commit", "--slot", "y", "-m", "y"}).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "y", "--priority", "high"}).exit == 0);
  std::vector<std::string> args = {"land", "--ready", "--batch", "4", "--json", "--"};
  for (const auto& a : culprit_check(ws.home() / "checks")) args.push_back(a);
  auto land = ws.swarm(args);
  CHECK(land.exit == 3);
  auto doc = json_of(land);
  const cJSON* row = nullptr;
  std::map<std::string, std::string> outcome;
  cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(doc.get(), "lands")) {
    outcome[text_of(row, "slot")] = text_of(row, "outcome");
  }
  CHECK(outcome["y"] == "refused");
  CHECK(outcome["x"] == "landed");
  const std::string tree = hub_git(ws, {"ls-tree", "--name-only", "main"});
  CHECK(tree.find("x.txt") != std::string::npos);
  CHECK(tree.find("CULPRIT") == std::string::npos);
}
