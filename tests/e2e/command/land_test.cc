// Landing finished work, through the real binary: slot branches as the
// worktree has them, `branches`, `land` and `land --ready`, bases, and the
// faults of a land (a lander killed at each stage, a push from outside the
// queue, two hosts through one remote hub).
#include <doctest/doctest.h>

#include <signal.h>

#include <fstream>
#include <thread>

#include "e2e/command/land_support.h"
#include "e2e/swarm_fixture.h"
#include "support/git_servers.h"
#include "support/json_fields.h"

using namespace testing;
using namespace testing::land;
namespace fs = std::filesystem;


TEST_CASE("Land_PlainGitCommitsAreOnTheSlotBranch") {
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "render", "--task", "T-1"}).exit == 0);
  write_file(ws.worktree("render") / "plain.txt", "by plain git\n");
  REQUIRE(plain_commit(ws, ws.worktree("render"), "plain commit").exit == 0);
  const std::string head = ws.git({"rev-parse", "HEAD"}, ws.worktree("render")).out;
  auto close = ws.swarm({"close", "--result", "success", "--json"}, kHostA, ws.worktree("render"));
  REQUIRE_MESSAGE(close.exit == 0, close.err);
  CHECK(hub_tip(ws, "swarm/render") + "\n" == head);
  CHECK(hub_git(ws, {"for-each-ref", "refs/recovery"}).empty());  // nothing off the branch to keep

  // A plain commit, then `swarm commit` with nothing new: pushed too.
  REQUIRE(ws.swarm({"join", "--slot", "api", "--task", "T-2"}).exit == 0);
  write_file(ws.worktree("api") / "api.txt", "api\n");
  REQUIRE(plain_commit(ws, ws.worktree("api"), "api by git").exit == 0);
  auto commit = ws.swarm({"commit", "--slot", "api", "-m", "nothing new", "--json"});
  CHECK(commit.exit == 0);
  CHECK(json_true(json_of(commit), "pushed"));
  CHECK(hub_tip(ws, "swarm/api") + "\n" == ws.git({"rev-parse", "HEAD"}, ws.worktree("api")).out);
}

TEST_CASE("Land_ADivergedBranchIsNamedAndNothingIsLost") {
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "render", "--task", "T-1"}).exit == 0);
  write_file(ws.worktree("render") / "a.txt", "a\n");
  REQUIRE(ws.swarm({"commit", "--slot", "render", "-m", "a"}).exit == 0);
  // Someone pushes to swarm/render from elsewhere; the agent commits on its own.
  push_by_hand(ws, "render", "other", "b.txt", "b\n", "from elsewhere");
  const std::string theirs = hub_tip(ws, "swarm/render");
  write_file(ws.worktree("render") / "c.txt", "c\n");
  REQUIRE(plain_commit(ws, ws.worktree("render"), "mine").exit == 0);
  std::string mine = ws.git({"rev-parse", "HEAD"}, ws.worktree("render")).out;
  mine.pop_back();

  auto commit = ws.swarm({"commit", "--slot", "render", "-m", "nothing new"});
  CHECK(commit.exit == 0);  // the local commit stands: a warning
  CHECK(commit.err.find("diverged") != std::string::npos);
  CHECK(commit.err.find(mine) != std::string::npos);
  CHECK(commit.err.find(theirs) != std::string::npos);

  auto success = ws.swarm({"close", "--slot", "render", "--result", "success"});
  CHECK(success.exit == 3);
  CHECK(success.err.find(mine) != std::string::npos);
  CHECK(success.err.find(theirs) != std::string::npos);
  CHECK(fs::exists(ws.worktree("render") / "c.txt"));  // nothing changed
  CHECK(ws.swarm({"status", "--slot", "render"}).exit == 0);
  CHECK(hub_tip(ws, "swarm/render") == theirs);

  auto fail = ws.swarm({"close", "--slot", "render", "--result", "fail", "--json"});
  CHECK_MESSAGE(fail.exit == 0, fail.err);
  CHECK(fail.err.find("diverged") != std::string::npos);
  CHECK(hub_tip(ws, "swarm/render") == theirs);
  CHECK(hub_git(ws, {"for-each-ref", "--format=%(objectname)", "refs/recovery"}).find(mine) != std::string::npos);
}

TEST_CASE("Land_BranchesShowsStateResultAheadAndLanded") {
  SwarmWorkspace ws;
  finish(ws, "done", "done.txt", "done\n");
  REQUIRE(ws.swarm({"join", "--slot", "busy", "--task", "T-busy"}).exit == 0);
  write_file(ws.worktree("busy") / "x.txt", "x\n");
  REQUIRE(ws.swarm({"commit", "--slot", "busy", "-m", "x"}).exit == 0);
  write_file(ws.worktree("busy") / "y.txt", "y\n");
  REQUIRE(ws.swarm({"commit", "--slot", "busy", "-m", "y"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "broke", "--task", "T-broke"}).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "broke", "--result", "fail"}).exit == 0);

  auto json = ws.swarm({"branches", "--json"});
  REQUIRE_MESSAGE(json.exit == 0, json.err);
  auto doc = json_of(json);
  REQUIRE(doc);
  CHECK(field(doc, "schema") == "swarm.branches.v1");
  CHECK(field(doc, "onto") == "main");
  const cJSON* done = row_of(doc, "done");
  const cJSON* busy = row_of(doc, "busy");
  REQUIRE(done != nullptr);
  REQUIRE(busy != nullptr);
  CHECK(text_of(done, "result") == "success");
  CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(done, "state")));
  CHECK(number_of(done, "ahead") == 1);
  CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(done, "landed")));
  CHECK(text_of(done, "head") == hub_tip(ws, "swarm/done"));
  CHECK(text_of(done, "committed_at").size() == 24);
  CHECK(text_of(busy, "state") == "fresh");
  CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(busy, "result")));
  CHECK(number_of(busy, "ahead") == 2);
  // A slot that never committed: its branch (if pushed) is the onto branch's tip, landed.
  if (const cJSON* broke = row_of(doc, "broke")) CHECK(text_of(broke, "result") == "fail");

  auto text = ws.swarm({"branches"});
  CHECK(text.exit == 0);
  CHECK(text.out.find("SLOT") == 0);
  CHECK(text.out.find("done                 -       success  normal 1      no") != std::string::npos);

  REQUIRE(ws.swarm({"land", "--slot", "done"}).exit == 0);
  doc = json_of(ws.swarm({"branches", "--json"}));
  CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(row_of(doc, "done"), "landed")));
  CHECK(number_of(row_of(doc, "done"), "ahead") == 0);
  CHECK(ws.swarm({"branches", "--onto", "nosuch", "--json"}).exit == 4);
  CHECK(ws.swarm({"branches", "--onto", "a..b"}).exit == 2);
}

TEST_CASE("Land_FastForwardThenAMergeCommitWithTrailers") {
  SwarmWorkspace ws;
  finish(ws, "one", "one.txt", "1\n");
  finish(ws, "two", "two.txt", "2\n");
  const std::string two_head = hub_tip(ws, "swarm/two");

  auto first = ws.swarm({"land", "--slot", "one", "--json"});
  REQUIRE_MESSAGE(first.exit == 0, first.err);
  auto doc = json_of(first);
  CHECK(field(doc, "schema") == "swarm.land.v1");
  CHECK(field(doc, "outcome") == "landed");
  CHECK(field(doc, "how") == "fast-forward");
  CHECK(hub_tip(ws, "main") == hub_tip(ws, "swarm/one"));

  auto second = ws.swarm({"land", "--slot", "two", "--json"});
  REQUIRE_MESSAGE(second.exit == 0, second.err);
  doc = json_of(second);
  CHECK(field(doc, "how") == "merge");
  CHECK(field(doc, "to") == hub_tip(ws, "main"));
  CHECK(field(doc, "from") == hub_tip(ws, "swarm/one"));
  const std::string token = std::to_string(static_cast<long long>(number(doc, "fencing_token")));
  auto trailer = [&](const std::string& key) {
    return hub_git(ws, {"log", "-1", "--format=%(trailers:key=" + key + ",valueonly)", "main"});
  };
  CHECK(trailer("Swarm-Slot") == "two\n\n");
  CHECK(trailer("Swarm-Task") == "T-two\n\n");
  CHECK(trailer("Swarm-Fencing-Token") == token + "\n\n");
  CHECK(hub_git(ws, {"log", "-1", "--format=%P", "main"}) == hub_tip(ws, "swarm/one") + " " + two_head + "\n");
  CHECK(hub_tip(ws, "swarm/two") == two_head);  // the slot branch is never changed by landing

  // Again: nothing to do, exit 0.
  auto again = ws.swarm({"land", "--slot", "two"});
  CHECK(again.exit == 0);
  CHECK(again.out.find("already") != std::string::npos);

  auto log = ws.swarm({"log", "--slot", "two", "--kind", "land", "--json"});
  CHECK(log.out.find("\"kind\":\"land\"") != std::string::npos);
  CHECK(log.out.find("\"to\":\"" + hub_tip(ws, "main") + "\"") != std::string::npos);
  CHECK(log.out.find("\"token\":" + token) != std::string::npos);
}

TEST_CASE("Land_AConflictIsRefusedNamingItsPathsAndMovesNothing") {
  SwarmWorkspace ws;
  finish(ws, "left", "same.txt", "left\n");
  finish(ws, "right", "same.txt", "right\n");
  REQUIRE(ws.swarm({"land", "--slot", "left"}).exit == 0);
  const std::string before = hub_tip(ws, "main");
  const std::string right = hub_tip(ws, "swarm/right");
  auto refused = ws.swarm({"land", "--slot", "right"});
  CHECK(refused.exit == 3);
  CHECK(refused.err.find("same.txt") != std::string::npos);
  CHECK(refused.out.empty());
  CHECK(hub_tip(ws, "main") == before);
  CHECK(hub_tip(ws, "swarm/right") == right);
  auto json = ws.swarm({"land", "--slot", "right", "--json"});
  CHECK(json.exit == 3);
  CHECK(json.out.empty());
  CHECK(json.err.find("swarm.error.v1") != std::string::npos);
  auto log = ws.swarm({"log", "--slot", "right", "--kind", "land.refused", "--json"});
  CHECK(log.out.find("\"reason\":\"conflict\"") != std::string::npos);
  CHECK(log.out.find("\"paths\":[\"same.txt\"]") != std::string::npos);
}

TEST_CASE("Land_ACheckRunsOnTheMergedTreeAndAFailureMovesNothing") {
  SwarmWorkspace ws;
  finish(ws, "one", "one.txt", "1\n");
  finish(ws, "two", "two.txt", "2\n");
  REQUIRE(ws.swarm({"land", "--slot", "one"}).exit == 0);
  const fs::path seen = ws.home() / "seen.txt";
  // The check sees both slots' files, its slot and token; its output goes to stderr.
  auto ok = ws.swarm({"land", "--slot", "two", "--json", "--", "/bin/sh", "-c",
                      "ls one.txt two.txt && echo \"$SWARM_LAND_SLOT $SWARM_LAND_ONTO $SWARM_FENCING_TOKEN\" > " +
                          seen.string() + " && echo check-output"});
  REQUIRE_MESSAGE(ok.exit == 0, ok.err);
  CHECK(ok.err.find("check-output") != std::string::npos);
  CHECK(ok.out.find("check-output") == std::string::npos);
  const std::string token = std::to_string(static_cast<long long>(number(json_of(ok), "fencing_token")));
  CHECK(read_file(seen) == "two main " + token + "\n");

  finish(ws, "three", "three.txt", "3\n");
  const std::string before = hub_tip(ws, "main");
  auto bad = ws.swarm({"land", "--slot", "three", "--", "/bin/sh", "-c", "echo tests-failed; exit 4"});
  CHECK(bad.exit == 3);
  CHECK(bad.err.find("tests-failed") != std::string::npos);
  CHECK(bad.err.find("exit 4") != std::string::npos);
  CHECK(hub_tip(ws, "main") == before);
  auto log = ws.swarm({"log", "--slot", "three", "--kind", "land.refused", "--json"});
  CHECK(log.out.find("\"reason\":\"check\"") != std::string::npos);
  CHECK(log.out.find("\"status\":4") != std::string::npos);
  // A check that cannot run is refused before anything is waited for or written.
  auto missing = ws.swarm({"land", "--slot", "three", "--", "/no/such/check"});
  CHECK(missing.exit == 2);
  CHECK(ws.swarm({"lease", "show", "land.main"}).out.find("held") == std::string::npos);
}

TEST_CASE("Land_ReadyLandsInCloseOrderAndReportsEachRefusal") {
  SwarmWorkspace ws;
  finish(ws, "c", "c.txt", "c\n");
  finish(ws, "a", "same.txt", "a\n");
  finish(ws, "b", "same.txt", "b\n");  // conflicts with a
  REQUIRE(ws.swarm({"join", "--slot", "failed", "--task", "T-f"}).exit == 0);
  write_file(ws.worktree("failed") / "f.txt", "f\n");
  REQUIRE(ws.swarm({"commit", "--slot", "failed", "-m", "f"}).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "failed", "--result", "fail"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "live", "--task", "T-l"}).exit == 0);
  write_file(ws.worktree("live") / "l.txt", "l\n");
  REQUIRE(ws.swarm({"commit", "--slot", "live", "-m", "l"}).exit == 0);

  auto ready = ws.swarm({"land", "--ready", "--json"});
  CHECK(ready.exit == 3);  // b was refused
  auto doc = json_of(ready);
  REQUIRE_MESSAGE(doc, ready.err);
  std::vector<std::string> order, outcomes;
  const cJSON* land = nullptr;
  cJSON_ArrayForEach(land, cJSON_GetObjectItemCaseSensitive(doc.get(), "lands")) {
    order.push_back(text_of(land, "slot"));
    outcomes.push_back(text_of(land, "outcome"));
  }
  CHECK(order == std::vector<std::string>{"c", "a", "b"});
  CHECK(outcomes == std::vector<std::string>{"landed", "landed", "refused"});
  CHECK(ready.err.find("same.txt") != std::string::npos);
  auto files = hub_git(ws, {"ls-tree", "--name-only", "main"});
  CHECK(files.find("c.txt") != std::string::npos);
  CHECK(files.find("f.txt") == std::string::npos);  // failed: not landed
  CHECK(files.find("l.txt") == std::string::npos);  // live: not closed
  CHECK(read_file(ws.root() / ".swarm/hub.git/HEAD").find("main") != std::string::npos);

  // Once more: only b is left, still refused; nothing else moves.
  const std::string tip = hub_tip(ws, "main");
  auto again = ws.swarm({"land", "--ready"});
  CHECK(again.exit == 3);
  CHECK(hub_tip(ws, "main") == tip);
}

TEST_CASE("Land_APushFromOutsideTheQueueIsMergedAgainAndNothingIsLost") {
  SwarmWorkspace ws;
  finish(ws, "slot", "slot.txt", "slot\n");
  const fs::path outside = ws.home() / "outside";
  REQUIRE(ws.git({"clone", "-q", (ws.root() / ".swarm/hub.git").string(), outside.string()}).exit == 0);
  write_file(outside / "outside.txt", "outside\n");
  REQUIRE(plain_commit(ws, outside, "outside the queue").exit == 0);
  // The check pushes to main from outside the first time it runs.
  const fs::path once = ws.home() / "pushed-once";
  auto land = ws.swarm({"land", "--slot", "slot", "--json", "--", "/bin/sh", "-c",
                        "test -e " + once.string() + " || { touch " + once.string() + " && HOME=" +
                            ws.home().string() + " git -C " + outside.string() + " push -q origin HEAD:main; }"});
  REQUIRE_MESSAGE(land.exit == 0, land.err);
  auto doc = json_of(land);
  CHECK(number(doc, "attempts") == 2);
  auto files = hub_git(ws, {"ls-tree", "--name-only", "main"});
  CHECK(files.find("outside.txt") != std::string::npos);
  CHECK(files.find("slot.txt") != std::string::npos);
}

TEST_CASE("Land_ALandedSlotRejoinedStartsFromOntoAndBaseKeepsAnUnlandedBranch") {
  SwarmWorkspace ws;
  finish(ws, "one", "one.txt", "1\n");
  finish(ws, "two", "two.txt", "2\n");
  REQUIRE(ws.swarm({"land", "--ready"}).exit == 0);
  auto rejoin = ws.swarm({"join", "--slot", "one", "--task", "T-again", "--json"});
  REQUIRE_MESSAGE(rejoin.exit == 0, rejoin.err);
  CHECK(field(json_of(rejoin), "started_from") == "onto");
  CHECK(fs::exists(ws.worktree("one") / "two.txt"));  // what landed since
  // Its first commit moves swarm/one forward (a fast-forward from the landed tip).
  write_file(ws.worktree("one") / "more.txt", "more\n");
  auto commit = ws.swarm({"commit", "--slot", "one", "-m", "more", "--json"});
  CHECK(json_true(json_of(commit), "pushed"));
  REQUIRE(ws.swarm({"close", "--slot", "one", "--result", "success"}).exit == 0);

  // An unlanded branch replaced by --base is kept under refs/recovery/ first.
  const std::string unlanded = hub_tip(ws, "swarm/one");
  auto based = ws.swarm({"join", "--slot", "one", "--task", "T-base", "--base", "main", "--json"});
  REQUIRE_MESSAGE(based.exit == 0, based.err);
  auto doc = json_of(based);
  CHECK(field(doc, "started_from") == "base");
  const std::string kept = field(doc, "kept_ref");
  CHECK(kept.rfind("refs/recovery/one-", 0) == 0);
  CHECK(hub_tip(ws, kept) == unlanded);
  CHECK(hub_tip(ws, "swarm/one") == hub_tip(ws, "main"));
  CHECK(!fs::exists(ws.worktree("one") / "more.txt"));
  // Refusals: a ref the hub lacks (exit 4, nothing left), a slot with a worktree (exit 3).
  CHECK(ws.swarm({"join", "--slot", "x", "--task", "T-x", "--base", "nosuch"}).exit == 4);
  CHECK(ws.swarm({"status", "--slot", "x"}).exit == 4);
  CHECK(!fs::exists(ws.worktree("x")));
  CHECK(ws.swarm({"join", "--slot", "one", "--task", "T-base", "--base", "main", "--force"}).exit == 3);
  CHECK(ws.swarm({"join", "--slot", "y", "--task", "T-y", "--base", "-x"}).exit == 2);
}

TEST_CASE("Land_BadInputIsRefusedBeforeAnyIo") {
  SwarmWorkspace ws;
  CHECK(ws.swarm({"land"}).exit == 2);
  CHECK(ws.swarm({"land", "--slot", "a", "--ready"}).exit == 2);
  CHECK(ws.swarm({"land", "--slot", "a.b"}).exit == 2);
  for (const char* onto : {"a..b", "-x", "a b", "x.lock", "a:b", "", "HEAD", "@", "refs/heads/main", "x.lock/y",
                           "x/y.lock/z", "swarm/other"})
    CHECK_MESSAGE(ws.swarm({"land", "--slot", "a", "--onto", onto}).exit == 2, onto);
  CHECK(ws.swarm({"land", "--slot", "a", "--ttl", "0s"}).exit == 2);
  CHECK(ws.swarm({"land", "--slot", "a", "--wait", "soon"}).exit == 2);
  CHECK(ws.swarm({"land", "--slot", "nosuch"}).exit == 4);
  finish(ws, "s", "s.txt", "s\n");
  CHECK(ws.swarm({"land", "--slot", "s", "--onto", "nosuch"}).exit == 4);
}

TEST_CASE("Land_ALanderKilledAtAnyStageLeavesOntoUnchangedOrLanded") {
  SwarmWorkspace ws;
  finish(ws, "first", "first.txt", "1\n");
  finish(ws, "second", "second.txt", "2\n");
  REQUIRE(ws.swarm({"land", "--slot", "first"}).exit == 0);
  const std::string before = hub_tip(ws, "main");
  struct Stage {
    const char* name;
    bool landed;  // where a kill there leaves main
  };
  for (Stage stage : {Stage{"merged", false}, Stage{"before-push", false}, Stage{"after-push", true}}) {
    CAPTURE(stage.name);
    auto env = kHostA;
    env["SWARM_TEST_LAND_STOP"] = stage.name;
    Process lander(ws.command({"land", "--slot", "second", "--ttl", "2s"}, env));
    REQUIRE(stopped_within(lander.pid(), std::chrono::seconds(20)));
    lander.signal(SIGKILL);
    lander.wait();
    if (stage.landed) {
      CHECK(hub_tip(ws, "main") != before);
      CHECK(hub_git(ws, {"log", "-1", "--format=%P", "main"}).find(hub_tip(ws, "swarm/second")) != std::string::npos);
    } else {
      CHECK(hub_tip(ws, "main") == before);
    }
    // The next lander goes on within the killed one's TTL.
    auto next = ws.swarm({"land", "--slot", "second", "--json"});
    REQUIRE_MESSAGE(next.exit == 0, next.err);
    CHECK(next.took < std::chrono::seconds(6));
    CHECK(field(json_of(next), "outcome") == (stage.landed ? "already-landed" : "landed"));
    CHECK(hub_git(ws, {"ls-tree", "--name-only", "main"}).find("second.txt") != std::string::npos);
    if (!stage.landed) {
      // Back to before for the next stage: main moved only by the lands above.
      REQUIRE(ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "update-ref", "refs/heads/main", before}).exit == 0);
    }
  }
  // During the check and while waiting in line.
  {
    const std::string start = hub_tip(ws, "main");
    finish(ws, "third", "third.txt", "3\n");
    const fs::path marker = ws.home() / "checking";
    Process lander(ws.command({"land", "--slot", "third", "--ttl", "2s", "--", "/bin/sh", "-c",
                               "touch " + marker.string() + "; sleep 30"}));
    for (int i = 0; i < 200 && !fs::exists(marker); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    REQUIRE(fs::exists(marker));
    Process waiter(ws.command({"land", "--slot", "third"}));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    waiter.signal(SIGKILL);  // killed while waiting in line
    waiter.wait();
    lander.signal(SIGKILL);  // killed during the check
    lander.wait();
    CHECK(hub_tip(ws, "main") == start);
    auto next = ws.swarm({"land", "--slot", "third", "--json"});
    REQUIRE_MESSAGE(next.exit == 0, next.err);
    CHECK(next.took < std::chrono::seconds(6));
    CHECK(field(json_of(next), "outcome") == "landed");
  }
}

namespace {

// Hosts A and B share `hub` (a remote one) and a cluster; each finishes
// slots, then both land --ready at once: every slot lands exactly once.
void two_hosts_land(const NatsCluster& cluster, SwarmWorkspace& a, SwarmWorkspace& b, const std::string& hub,
                    const fs::path& hub_path) {
  auto up_a = up_on_cluster(a, cluster, {"--hub", hub}, kHostA, [](int exit) { return exit == 7; });
  REQUIRE_MESSAGE(up_a.exit == 0, up_a.err);
  auto up_b = up_on_cluster(b, cluster, {"--hub", hub}, kHostB, [](int exit) { return exit == 7; });
  REQUIRE_MESSAGE(up_b.exit == 0, up_b.err);
  finish(a, "ui", "ui.txt", "ui\n", kHostA);
  finish(b, "api", "api.txt", "api\n", kHostB);
  finish(b, "db", "db.txt", "db\n", kHostB);
  // Both hosts land at once: one at a time through lease land.<onto>, each
  // a compare-and-swap on the hub.
  Process land_a(a.command({"land", "--ready", "--json"}, kHostA));
  Process land_b(b.command({"land", "--ready", "--json"}, kHostB));
  auto ra = land_a.wait();
  auto rb = land_b.wait();
  CHECK_MESSAGE(ra.exit == 0, ra.err);
  CHECK_MESSAGE(rb.exit == 0, rb.err);
  const std::string onto = field(json_of(ra), "onto");
  auto files = hub_git(a, {"ls-tree", "--name-only", onto}, hub_path);
  for (const char* f : {"ui.txt", "api.txt", "db.txt"}) CHECK_MESSAGE(files.find(f) != std::string::npos, f);
  // Each slot landed once: as many land events as slots, whoever landed it.
  auto log = a.swarm({"log", "--kind", "land", "--json"}, kHostA);
  std::size_t lands = 0;
  for (auto at = log.out.find("\"kind\":\"land\""); at != std::string::npos; at = log.out.find("\"kind\":\"land\"", at + 1))
    ++lands;
  CHECK(lands == 3);
  auto branches = b.swarm({"branches", "--json"}, kHostB);
  REQUIRE_MESSAGE(branches.exit == 0, branches.err);
  for (const char* s : {"ui", "api", "db"})
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(row_of(json_of(branches), s), "landed")));
  // The next land of A after B moved the branch: merged on B's lands, fetched anew.
  finish(a, "late", "late.txt", "late\n", kHostA);
  auto late = a.swarm({"land", "--slot", "late", "--json"}, kHostA);
  CHECK_MESSAGE(late.exit == 0, late.err);
  CHECK(hub_git(a, {"ls-tree", "--name-only", onto}, hub_path).find("late.txt") != std::string::npos);
}

}  // namespace

TEST_CASE("Land_TwoHostsLandThroughOneRemoteHub") {
  NatsCluster cluster;
  SwarmWorkspace a({.up = false, .git_repo = true, .own_server = false});
  SwarmWorkspace b({.up = false, .own_server = false});
  SUBCASE("git daemon") {
    GitDaemon daemon;
    daemon.make_repository("app.git");
    two_hosts_land(cluster, a, b, daemon.url("app.git"), daemon.path("app.git"));
  }
  SUBCASE("sshd") {
    SshServer sshd;
    const auto path = sshd.make_repository("app.git");
    sshd.install_client(a.home());
    sshd.install_client(b.home());
    two_hosts_land(cluster, a, b, sshd.url("app.git"), path);
  }
}

TEST_CASE("Land_ALinkPlantedForTheCheckoutIsNeverFollowed") {
  SwarmWorkspace ws;
  finish(ws, "one", "one.txt", "1\n");
  const fs::path elsewhere = ws.home() / "project";
  fs::create_directories(elsewhere);
  write_file(elsewhere / "keep.txt", "mine\n");
  REQUIRE(ws.git({"init", "-q", elsewhere.string()}).exit == 0);
  const fs::path checkout = ws.land_checkout();
  fs::create_directories(checkout.parent_path());
  SUBCASE("the checkout folder is a link") {
    fs::create_directory_symlink(elsewhere, checkout);
  }
  SUBCASE("its .git is a gitdir file") {
    fs::create_directories(checkout);
    write_file(checkout / ".git", "gitdir: " + (elsewhere / ".git").string() + "\n");
  }
  const std::string before = hub_tip(ws, "main");
  auto land = ws.swarm({"land", "--slot", "one", "--", "/bin/true"});
  if (fs::is_symlink(checkout)) {
    // The folder itself is a link: refused (exit 2, naming it), never followed.
    CHECK(land.exit == 2);
    CHECK(land.err.find("onto-main") != std::string::npos);
    CHECK(hub_tip(ws, "main") == before);
  } else {
    // A .git of another repository's: swarm's own is made in its place, and the land goes on.
    CHECK_MESSAGE(land.exit == 0, land.err);
    CHECK(fs::is_directory(fs::symlink_status(checkout / ".git")));
  }
  CHECK(read_file(elsewhere / "keep.txt") == "mine\n");
  CHECK(ws.git({"rev-parse", "-q", "--verify", "HEAD"}, elsewhere).out.empty());  // no commit checked out there
}

TEST_CASE("Land_ReviewFindingsStayFixed") {
  SwarmWorkspace ws;
  const fs::path victim = ws.home() / "victim";
  fs::create_directories(victim);
  write_file(victim / "precious.txt", "precious\n");

  SUBCASE("a worktree set elsewhere in the checkout's config is never used, nothing outside touched") {
    finish(ws, "a1", "f1.txt", "1\n");
    REQUIRE(ws.swarm({"land", "--slot", "a1", "--", "/bin/true"}).exit == 0);
    REQUIRE(ws.git({"-C", ws.land_checkout().string(), "config", "core.worktree", victim.string()}).exit == 0);
    finish(ws, "a2", "f2.txt", "2\n");
    auto land = ws.swarm({"land", "--slot", "a2", "--", "/bin/sh", "-c", "test -f f2.txt"});
    CHECK_MESSAGE(land.exit == 0, land.err);  // the checkout's config is swarm's again
    CHECK(read_file(victim / "precious.txt") == "precious\n");
    CHECK(!fs::exists(victim / "f2.txt"));
  }
  SUBCASE("a link a check left in the checkout is never written through") {
    finish(ws, "b1", "d/one.txt", "1\n");
    REQUIRE(ws.swarm({"land", "--slot", "b1", "--", "/bin/true"}).exit == 0);
    fs::remove_all(ws.land_checkout() / "d");
    fs::create_directory_symlink(victim, ws.land_checkout() / "d");
    finish(ws, "b2", "d/two.txt", "2\n");
    auto land = ws.swarm({"land", "--slot", "b2", "--", "/bin/sh", "-c", "test -f d/two.txt && test ! -L d"});
    CHECK_MESSAGE(land.exit == 0, land.err);
    CHECK(!fs::exists(victim / "two.txt"));
    CHECK(!fs::exists(victim / "one.txt"));
    CHECK(read_file(victim / "precious.txt") == "precious\n");
  }
  SUBCASE("a checkout a killed land left without its alternates works again") {
    finish(ws, "c1", "c1.txt", "1\n");
    REQUIRE(ws.swarm({"land", "--slot", "c1", "--", "/bin/true"}).exit == 0);
    fs::remove(ws.land_checkout() / ".git/objects/info/alternates");
    finish(ws, "c2", "c2.txt", "2\n");
    auto land = ws.swarm({"land", "--slot", "c2", "--", "/bin/true"});
    CHECK_MESSAGE(land.exit == 0, land.err);
  }
  SUBCASE("close pushes a branch the hub lost or moved back") {
    const std::string hub = (ws.root() / ".swarm/hub.git").string();
    for (const char* how : {"rewound", "deleted"}) {
      CAPTURE(how);
      const std::string slot = std::string("r-") + how;
      REQUIRE(ws.swarm({"join", "--slot", slot, "--task", "T-" + slot}).exit == 0);
      write_file(ws.worktree(slot) / "one.txt", "1\n");
      REQUIRE(ws.swarm({"commit", "--slot", slot, "-m", "1"}).exit == 0);
      write_file(ws.worktree(slot) / "two.txt", "2\n");
      REQUIRE(ws.swarm({"commit", "--slot", slot, "-m", "2"}).exit == 0);
      const std::string head = hub_tip(ws, "swarm/" + slot);
      if (std::string(how) == "rewound")
        REQUIRE(ws.git({"--git-dir", hub, "update-ref", "refs/heads/swarm/" + slot, "swarm/" + slot + "~1"}).exit == 0);
      else
        REQUIRE(ws.git({"--git-dir", hub, "branch", "-q", "-D", "swarm/" + slot}).exit == 0);
      auto close = ws.swarm({"close", "--slot", slot, "--result", "success"});
      CHECK_MESSAGE(close.exit == 0, close.err);
      CHECK(hub_tip(ws, "swarm/" + slot) == head);
    }
  }
  SUBCASE("a session token that is not the slot's refuses the land") {
    REQUIRE(ws.swarm({"join", "--slot", "live", "--task", "T-live"}).exit == 0);
    write_file(ws.worktree("live") / "l.txt", "l\n");
    REQUIRE(ws.swarm({"commit", "--slot", "live", "-m", "l"}).exit == 0);
    const std::string before = hub_tip(ws, "main");
    auto env = kHostA;
    env["SWARM_SESSION"] = "999999";
    CHECK(ws.swarm({"land", "--slot", "live"}, env).exit == 3);
    CHECK(ws.swarm({"land", "--slot", "live", "--session", "999999"}).exit == 3);
    CHECK(hub_tip(ws, "main") == before);
  }
  SUBCASE("land --ready reports a slot that failed and lands the others") {
    finish(ws, "r1", "r1.txt", "1\n");
    finish(ws, "r2", "r2.txt", "2\n");
    finish(ws, "r3", "r3.txt", "3\n");
    const std::string hub = (ws.root() / ".swarm/hub.git").string();
    auto ready = ws.swarm({"land", "--ready", "--json", "--", "/bin/sh", "-c",
                           "[ \"$SWARM_LAND_SLOT\" != r1 ] || git --git-dir=" + hub + " branch -q -D swarm/r2"});
    CHECK(ready.exit == 3);
    auto doc = json_of(ready);
    REQUIRE_MESSAGE(doc, ready.err);
    std::vector<std::string> outcomes;
    const cJSON* land = nullptr;
    cJSON_ArrayForEach(land, cJSON_GetObjectItemCaseSensitive(doc.get(), "lands")) {
      outcomes.push_back(text_of(land, "slot") + ":" + text_of(land, "outcome"));
    }
    CHECK(outcomes == std::vector<std::string>{"r1:landed", "r2:failed", "r3:landed"});
  }
  SUBCASE("a conflict path that is no UTF-8 comes escaped, JSON stays valid") {
    const std::string bad = std::string("bad\xff\x9b.txt");
    finish(ws, "k1", bad, "k1\n");
    finish(ws, "k2", bad, "k2\n");
    REQUIRE(ws.swarm({"land", "--slot", "k1"}).exit == 0);
    auto refused = ws.swarm({"land", "--ready", "--json"});
    CHECK(refused.exit == 3);
    CHECK(refused.out.find("\xff") == std::string::npos);
    CHECK(refused.out.find("bad\\\\xff") != std::string::npos);  // the JSON text of "bad\\xff"
    auto log = ws.swarm({"log", "--slot", "k2", "--json"});
    CHECK(log.out.find("\xff") == std::string::npos);
  }
  SUBCASE("a relative check is the merged tree's own") {
    finish(ws, "s1", "ci.sh", "#!/bin/sh\ntest -f s1.txt || exit 5\n");
    finish(ws, "s2", "s2.txt", "2\n");
    REQUIRE(ws.swarm({"land", "--slot", "s1"}).exit == 0);
    // Not in the merged tree: refused as a failed check (127), after the merge, as a shell would.
    auto missing = ws.swarm({"land", "--slot", "s2", "--", "./no-such-check.sh"});
    CHECK(missing.exit == 3);
    auto log = ws.swarm({"log", "--slot", "s2", "--kind", "land.refused", "--json"});
    CHECK(log.out.find("\"status\":127") != std::string::npos);
  }
}
