// The slot lifecycle through the real binary: join, commit, status, close, evict.
#include <doctest/doctest.h>

#include <thread>

#include "e2e/swarm_fixture.h"
#include "kv/bucket.h"
#include "support/json_fields.h"

using namespace testing;
using namespace std::chrono_literals;

namespace {

// The record of `slot` as `status --slot --json` reports it.
swarm::Json session_json(const SwarmWorkspace& ws, const std::string& slot) {
  auto r = ws.swarm({"status", "--slot", slot, "--json"});
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  auto doc = json_of(r);
  REQUIRE(doc);
  cJSON* sessions = cJSON_GetObjectItem(doc.get(), "sessions");
  REQUIRE(cJSON_GetArraySize(sessions) == 1);
  return swarm::Json::copy(cJSON_GetArrayItem(sessions, 0));
}

}  // namespace

TEST_CASE("Lifecycle_JoinCommitStatusCloseEvict") {
  // three slots join, commit, show in status; one closes with success, one is evicted.
  SwarmWorkspace ws;
  for (std::string slot : {"a", "b", "c"}) {
    auto r = ws.swarm({"join", "--slot", slot, "--task", "T-" + slot});
    REQUIRE_MESSAGE(r.exit == 0, r.err);
    CHECK(r.out == ws.worktree(slot).string() + "\n");  // stdout is the path alone
    CHECK(std::filesystem::exists(ws.worktree(slot) / ".git"));
    CHECK(read_file(ws.root() / ".swarm/slots" / slot / "leaf.pid").size() > 1);
    write_file(ws.worktree(slot) / ("work-" + slot + ".txt"), "made by " + slot + "\n");
    auto c = ws.swarm({"commit", "--slot", slot, "-m", "work of " + slot});
    REQUIRE_MESSAGE(c.exit == 0, c.err);
    CHECK(c.err.empty());  // pushed and renewed: no warning
  }

  auto status = ws.swarm({"status", "--json"});
  REQUIRE(status.exit == 0);
  auto doc = json_of(status);
  REQUIRE(doc);
  CHECK(field(doc, "schema") == "swarm.status.v1");
  cJSON* sessions = cJSON_GetObjectItem(doc.get(), "sessions");
  REQUIRE(cJSON_GetArraySize(sessions) == 3);
  for (int i = 0; i < 3; ++i) {
    cJSON* s = cJSON_GetArrayItem(sessions, i);
    CHECK(testing::text_of(s, "state") == "fresh");
    CHECK(testing::text_of(s, "host") == "host-a");
    CHECK(testing::text_of(s, "host_id") == "id-a");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(s, "local")));
    CHECK(testing::number_of(s, "age_seconds") < 30);
    CHECK(testing::number_of(s, "revision") > 0);
  }
  auto human = ws.swarm({"status"});
  CHECK(human.out.find("SLOT") != std::string::npos);
  CHECK(human.out.find("T-b") != std::string::npos);

  auto closed = ws.swarm({"close", "--slot", "a", "--result", "success"});
  REQUIRE_MESSAGE(closed.exit == 0, closed.err);
  CHECK_FALSE(std::filesystem::exists(ws.worktree("a")));
  CHECK_FALSE(std::filesystem::exists(ws.root() / ".swarm/slots/a"));
  CHECK(ws.swarm({"status", "--slot", "a"}).exit == 4);

  auto evicted = ws.swarm({"evict", "--slot", "b"});
  REQUIRE_MESSAGE(evicted.exit == 0, evicted.err);
  CHECK(evicted.out.find("task T-b") != std::string::npos);  // says what it removed
  CHECK(ws.swarm({"status", "--slot", "b"}).exit == 4);
  CHECK(ws.swarm({"evict", "--slot", "b"}).exit == 4);
  CHECK(ws.swarm({"status", "--slot", "c"}).exit == 0);
}

TEST_CASE("Commit_PushesTheSlotBranchToTheHub") {
  // the hub's swarm/<slot> branch, read back with the real git CLI, has the commit and the file.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "render", "--task", "T-42"}).exit == 0);
  write_file(ws.worktree("render") / "src/tile.cc", "int tile;\n");
  write_file(ws.worktree("render") / "notes.md", "untracked too\n");
  auto c = ws.swarm({"commit", "--slot", "render", "-m", "render: tile cache"});
  REQUIRE_MESSAGE(c.exit == 0, c.err);
  auto hub = (ws.root() / ".swarm/hub.git").string();
  auto log = ws.git({"--git-dir", hub, "log", "--format=%s", "swarm/render"});
  REQUIRE(log.exit == 0);
  CHECK(log.out.find("render: tile cache") == 0);
  CHECK(ws.git({"--git-dir", hub, "show", "swarm/render:src/tile.cc"}).out == "int tile;\n");
  CHECK(ws.git({"--git-dir", hub, "show", "swarm/render:notes.md"}).out == "untracked too\n");
  // The commit's parent is the hub's default branch: the branch started there.
  auto parent = ws.git({"--git-dir", hub, "rev-parse", "swarm/render~1"});
  auto main_tip = ws.git({"--git-dir", hub, "rev-parse", "HEAD"});
  CHECK(parent.out == main_tip.out);
  // The commit id printed is the hub's tip.
  auto tip = ws.git({"--git-dir", hub, "rev-parse", "swarm/render"});
  CHECK(tip.out.substr(0, 12) == c.out.substr(0, 12));
}

TEST_CASE("Commit_OnlyNamedPathsAndDeletions") {
  // with paths, only they are committed (deletions too); the rest stays uncommitted.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  auto wt = ws.worktree("s");
  write_file(wt / "keep.txt", "1\n");
  write_file(wt / "gone.txt", "2\n");
  REQUIRE(ws.swarm({"commit", "--slot", "s", "-m", "two files"}).exit == 0);
  std::filesystem::remove(wt / "gone.txt");
  write_file(wt / "keep.txt", "changed\n");
  write_file(wt / "later.txt", "not yet\n");
  auto c = ws.swarm({"commit", "--slot", "s", "-m", "delete one", "gone.txt"}, kHostA, wt);
  REQUIRE_MESSAGE(c.exit == 0, c.err);
  auto files = ws.git({"ls-tree", "--name-only", "HEAD"}, wt);
  CHECK(files.out == "keep.txt\n");
  CHECK(ws.git({"show", "HEAD:keep.txt"}, wt).out == "1\n");
  auto status = ws.git({"status", "--porcelain"}, wt);
  CHECK(status.out.find(" M keep.txt") != std::string::npos);
  CHECK(status.out.find("?? later.txt") != std::string::npos);
  // Nothing left to commit is not an error, and still renews.
  REQUIRE(ws.swarm({"commit", "--slot", "s", "-m", "all"}).exit == 0);
  auto again = ws.swarm({"commit", "--slot", "s", "-m", "nothing"});
  CHECK(again.exit == 0);
  CHECK(again.out.find("nothing to commit") != std::string::npos);
}

TEST_CASE("Commit_RenewsTheRecord") {
  // a commit bumps the record's revision and last_renewed.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  auto before = session_json(ws, "s");
  std::this_thread::sleep_for(20ms);
  write_file(ws.worktree("s") / "f.txt", "x\n");
  REQUIRE(ws.swarm({"commit", "--slot", "s", "-m", "f"}).exit == 0);
  auto after = session_json(ws, "s");
  CHECK(number(after, "revision") > number(before, "revision"));
  CHECK(field(after, "last_renewed") > field(before, "last_renewed"));
  CHECK(field(after, "started_at") == field(before, "started_at"));
  auto renewed = ws.swarm({"renew", "--slot", "s"});
  REQUIRE(renewed.exit == 0);
  CHECK(number(session_json(ws, "s"), "revision") > number(after, "revision"));
}

TEST_CASE("Commit_RejectedPushIsAWarningAndTheCommitStands") {
  // when the hub's branch moved on, the push is refused: exit 0, a warning, the local commit kept.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  // Someone else pushes another history to swarm/s in the hub.
  auto other = ws.root() / "other";
  REQUIRE(ws.git({"clone", "-q", (ws.root() / ".swarm/hub.git").string(), other.string()}).exit == 0);
  write_file(other / "theirs.txt", "theirs\n");
  REQUIRE(ws.git({"-c", "user.name=o", "-c", "user.email=o@o", "commit", "-q", "-a", "--allow-empty", "-m", "theirs"}, other)
              .exit == 0);
  REQUIRE(ws.git({"push", "-q", "origin", "HEAD:refs/heads/swarm/s"}, other).exit == 0);

  write_file(ws.worktree("s") / "mine.txt", "mine\n");
  auto c = ws.swarm({"commit", "--slot", "s", "-m", "mine"});
  CHECK(c.exit == 0);
  CHECK(c.err.find("warning: push failed") != std::string::npos);
  CHECK(c.out.find("not pushed") != std::string::npos);
  CHECK(ws.git({"log", "-1", "--format=%s"}, ws.worktree("s")).out == "mine\n");
}

TEST_CASE("Join_ReplacesAStaleSessionOfThisHost") {
  // in a 6s-TTL workspace a session older than 4s is stale: join takes it without --force.
  SwarmWorkspace ws({.up_args = {"--ttl", "6s"}});
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  auto first = session_json(ws, "s");
  CHECK(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 3);  // still fresh
  std::this_thread::sleep_for(4100ms);  // stale at 4s; the server drops it at 6s
  CHECK(field(session_json(ws, "s"), "state") == "stale");
  auto r = ws.swarm({"join", "--slot", "s", "--task", "T-2"});
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  auto second = session_json(ws, "s");
  CHECK(field(second, "task_id") == "T-2");
  CHECK(field(second, "started_at") != field(first, "started_at"));
  CHECK(field(second, "state") == "fresh");
}

TEST_CASE("Join_ExpiredSessionLeavesTheWorktreeToResume") {
  // after the record expires, join takes the slot again and keeps the uncommitted work.
  SwarmWorkspace ws({.up_args = {"--ttl", "2s"}});
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  write_file(ws.worktree("s") / "wip.txt", "work in progress\n");
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (ws.swarm({"status", "--slot", "s"}).exit == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(250ms);
  REQUIRE(ws.swarm({"status", "--slot", "s"}).exit == 4);
  auto r = ws.swarm({"join", "--slot", "s", "--task", "T-1"});
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  CHECK(r.err.find("reusing the existing worktree") != std::string::npos);
  CHECK(read_file(ws.worktree("s") / "wip.txt") == "work in progress\n");
}

TEST_CASE("Join_ForceTakesALiveSessionOfThisHost") {
  // --force replaces a fresh session of this host and keeps its worktree.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  write_file(ws.worktree("s") / "wip.txt", "keep me\n");
  auto first = session_json(ws, "s");
  auto refused = ws.swarm({"join", "--slot", "s", "--task", "T-1"});
  CHECK(refused.exit == 3);
  CHECK(refused.err.find("--force") != std::string::npos);
  auto forced = ws.swarm({"join", "--slot", "s", "--task", "T-9", "--force"});
  REQUIRE_MESSAGE(forced.exit == 0, forced.err);
  auto second = session_json(ws, "s");
  CHECK(field(second, "task_id") == "T-9");
  CHECK(number(second, "revision") > number(first, "revision"));
  CHECK(read_file(ws.worktree("s") / "wip.txt") == "keep me\n");
}

TEST_CASE("Join_SixteenConcurrentJoinsHaveOneWinner") {
  // 16 processes join one slot at once: exactly one exit 0, fifteen exit 3, one worktree.
  SwarmWorkspace ws;
  std::vector<Process> processes;
  for (int i = 0; i < 16; ++i) processes.emplace_back(ws.command({"join", "--slot", "hot", "--task", "T-1"}));
  int winners = 0, conflicts = 0;
  for (auto& p : processes) {
    auto r = p.wait();
    if (r.exit == 0) ++winners;
    else if (r.exit == 3) ++conflicts;
    else FAIL("unexpected exit " << r.exit << ": " << r.err);
  }
  CHECK(winners == 1);
  CHECK(conflicts == 15);
  CHECK(std::filesystem::exists(ws.worktree("hot") / ".git"));
  CHECK(ws.git({"status", "--porcelain"}, ws.worktree("hot")).out.empty());
}

TEST_CASE("Close_ArtifactGate") {
  // success is refused for a slot that never committed (exit 3, nothing removed) unless --no-artifact.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  auto refused = ws.swarm({"close", "--slot", "s"});
  CHECK(refused.exit == 3);
  CHECK(refused.err.find("not committed since it was taken up") != std::string::npos);
  CHECK(std::filesystem::exists(ws.worktree("s")));
  CHECK(ws.swarm({"status", "--slot", "s"}).exit == 0);
  CHECK(ws.swarm({"close", "--slot", "s", "--result", "success", "--no-artifact"}).exit == 0);
  CHECK(ws.swarm({"status", "--slot", "s"}).exit == 4);

  REQUIRE(ws.swarm({"join", "--slot", "t", "--task", "T-2"}).exit == 0);
  write_file(ws.worktree("t") / "result.txt", "done\n");
  REQUIRE(ws.swarm({"commit", "--slot", "t", "-m", "result"}).exit == 0);
  CHECK(ws.swarm({"close", "--slot", "t", "--result", "success"}).exit == 0);
  CHECK(ws.swarm({"close", "--slot", "t"}).exit == 4);

  // After a close, a new session of the slot on the same task resumes its
  // branch from the hub, but the closed run's commit is not an artifact of
  // the new one.
  REQUIRE(ws.swarm({"join", "--slot", "t", "--task", "T-2"}).exit == 0);
  CHECK(read_file(ws.worktree("t") / "result.txt") == "done\n");
  auto again = ws.swarm({"close", "--slot", "t"});
  CHECK(again.exit == 3);
  CHECK(again.err.find("not committed since it was taken up") != std::string::npos);
  write_file(ws.worktree("t") / "result.txt", "done again\n");
  REQUIRE(ws.swarm({"commit", "--slot", "t", "-m", "second result"}).exit == 0);
  CHECK(ws.swarm({"close", "--slot", "t"}).exit == 0);

  // An agent that restarts (--force, or after its record expired) carries its
  // unclosed run on: the commit before the restart counts.
  REQUIRE(ws.swarm({"join", "--slot", "u", "--task", "T-4"}).exit == 0);
  write_file(ws.worktree("u") / "u.txt", "u\n");
  REQUIRE(ws.swarm({"commit", "--slot", "u", "-m", "before the restart"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "u", "--task", "T-4", "--force"}).exit == 0);
  CHECK(ws.swarm({"close", "--slot", "u"}).exit == 0);
}

TEST_CASE("Close_SalvagesUncommittedFilesBeforeRemoving") {
  // modified and untracked files are copied with their relative paths to .swarm/recovery/.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  auto wt = ws.worktree("s");
  write_file(wt / "tracked.txt", "v1\n");
  REQUIRE(ws.swarm({"commit", "--slot", "s", "-m", "v1"}).exit == 0);
  write_file(wt / "tracked.txt", "v2 uncommitted\n");
  write_file(wt / "deep/new/file.txt", "new\n");
  // An untracked nested repository is copied whole, its history included.
  REQUIRE(ws.git({"init", "-q", (wt / "dep").string()}).exit == 0);
  write_file(wt / "dep/p.txt", "nested\n");
  auto r = ws.swarm({"close", "--slot", "s", "--result", "fail"});
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  CHECK_FALSE(std::filesystem::exists(wt));
  auto recovery = ws.root() / ".swarm/recovery";
  REQUIRE(std::filesystem::exists(recovery));
  auto folder = std::filesystem::directory_iterator(recovery)->path();
  CHECK(folder.filename().string().rfind("s-", 0) == 0);
  CHECK(read_file(folder / "tracked.txt") == "v2 uncommitted\n");
  CHECK(read_file(folder / "deep/new/file.txt") == "new\n");
  CHECK(read_file(folder / "MANIFEST").find("M tracked.txt") != std::string::npos);
  CHECK(read_file(folder / "dep/p.txt") == "nested\n");
  CHECK(std::filesystem::exists(folder / "dep/.git/HEAD"));

  // --keep-worktree keeps the folder and salvages nothing.
  REQUIRE(ws.swarm({"join", "--slot", "k", "--task", "T-2"}).exit == 0);
  write_file(ws.worktree("k") / "x.txt", "x\n");
  REQUIRE(ws.swarm({"close", "--slot", "k", "--result", "fail", "--keep-worktree"}).exit == 0);
  CHECK(read_file(ws.worktree("k") / "x.txt") == "x\n");
}

TEST_CASE("Cwd_PrintsTheWorktreeWithoutNats") {
  // cwd answers from the filesystem: it works with the server gone.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  ws.server()->stop();
  auto r = ws.swarm({"cwd", "--slot", "s"});
  CHECK(r.exit == 0);
  CHECK(r.out == ws.worktree("s").string() + "\n");
  CHECK(ws.swarm({"cwd", "--slot", "nope"}).exit == 4);
}

TEST_CASE("Close_PreservesUnpushedCommitsInTheHub") {
  // commits the hub never got (a refused push) go to refs/recovery/<slot>-<time> before the worktree is removed.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  auto other = ws.root() / "other";
  REQUIRE(ws.git({"clone", "-q", (ws.root() / ".swarm/hub.git").string(), other.string()}).exit == 0);
  REQUIRE(ws.git({"-c", "user.name=o", "-c", "user.email=o@o", "commit", "-q", "--allow-empty", "-m", "theirs"}, other)
              .exit == 0);
  REQUIRE(ws.git({"push", "-q", "origin", "HEAD:refs/heads/swarm/s"}, other).exit == 0);
  write_file(ws.worktree("s") / "mine.txt", "only here\n");
  auto c = ws.swarm({"commit", "--slot", "s", "-m", "mine, never pushed"});
  REQUIRE(c.exit == 0);
  REQUIRE(c.err.find("push failed") != std::string::npos);

  auto closed = ws.swarm({"close", "--slot", "s", "--result", "fail", "--json"});
  REQUIRE_MESSAGE(closed.exit == 0, closed.err);
  std::string prefix = field(json_of(closed), "recovery_ref");
  CHECK(prefix.rfind("refs/recovery/s-", 0) == 0);
  std::string ref = prefix + "/heads/swarm/s";
  CHECK_FALSE(std::filesystem::exists(ws.worktree("s")));
  auto hub = (ws.root() / ".swarm/hub.git").string();
  CHECK(ws.git({"--git-dir", hub, "log", "-1", "--format=%s", ref}).out == "mine, never pushed\n");
  CHECK(ws.git({"--git-dir", hub, "show", ref + ":mine.txt"}).out == "only here\n");
}

TEST_CASE("Close_PushedCommitsNeedNoRecoveryRef") {
  // when the hub has every commit, close adds no recovery ref.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  write_file(ws.worktree("s") / "f.txt", "f\n");
  REQUIRE(ws.swarm({"commit", "--slot", "s", "-m", "f"}).exit == 0);
  auto closed = ws.swarm({"close", "--slot", "s", "--json"});
  REQUIRE(closed.exit == 0);
  CHECK(cJSON_IsNull(cJSON_GetObjectItem(json_of(closed).get(), "recovery_ref")));
  CHECK(ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "for-each-ref", "refs/recovery"}).out.empty());
}

TEST_CASE("Commit_NamedPathsAreLiteralAndLeaveOtherStagedWorkAlone") {
  // like `git commit PATH`: "a*" names the file a*, never ab; what the agent staged itself stays staged, uncommitted.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  auto wt = ws.worktree("s");
  for (const char* name : {"a*", "ab", "one.txt", "two.txt"}) write_file(wt / name, std::string(name) + "\n");
  REQUIRE(ws.git({"add", "two.txt"}, wt).exit == 0);

  REQUIRE(ws.swarm({"commit", "--slot", "s", "-m", "star", "a*"}, kHostA, wt).exit == 0);
  CHECK(ws.git({"ls-tree", "--name-only", "HEAD"}, wt).out == "a*\n");
  REQUIRE(ws.swarm({"commit", "--slot", "s", "-m", "only one", "one.txt"}, kHostA, wt).exit == 0);
  CHECK(ws.git({"ls-tree", "--name-only", "HEAD"}, wt).out == "a*\none.txt\n");
  CHECK(ws.git({"diff", "--cached", "--name-only"}, wt).out == "two.txt\n");  // still staged
  CHECK(ws.git({"status", "--porcelain", "--", "ab"}, wt).out == "?? ab\n");

  // A deletion named literally is committed too; the staged file still waits.
  std::filesystem::remove(wt / "a*");
  REQUIRE(ws.swarm({"commit", "--slot", "s", "-m", "drop star", "a*"}, kHostA, wt).exit == 0);
  CHECK(ws.git({"ls-tree", "--name-only", "HEAD"}, wt).out == "one.txt\n");
  CHECK(ws.git({"diff", "--cached", "--name-only"}, wt).out == "two.txt\n");
  // A deletion staged with `git rm` is named by its path too; a folder with
  // glob characters in its name is taken literally.
  REQUIRE(ws.git({"rm", "-q", "one.txt"}, wt).exit == 0);
  write_file(wt / "dir[1]/x.txt", "x\n");
  REQUIRE(ws.swarm({"commit", "--slot", "s", "-m", "rm one, add dir[1]", "one.txt", "dir[1]"}, kHostA, wt).exit == 0);
  CHECK(ws.git({"ls-tree", "-r", "--name-only", "HEAD"}, wt).out == "dir[1]/x.txt\n");
  CHECK(ws.git({"diff", "--cached", "--name-only"}, wt).out == "two.txt\n");
  // With no paths, everything goes in, staged or not.
  REQUIRE(ws.swarm({"commit", "--slot", "s", "-m", "the rest"}).exit == 0);
  CHECK(ws.git({"ls-tree", "-r", "--name-only", "HEAD"}, wt).out == "ab\ndir[1]/x.txt\ntwo.txt\n");
  CHECK(ws.git({"status", "--porcelain"}, wt).out.empty());
}

TEST_CASE("Commit_KeepsTheHubAtFiftyPacksAndLosesNoObject") {
  // every push adds a pack; past 50 a background repack packs them into one, keeping unreachable objects too.
  SwarmWorkspace ws;
  const auto hub = (ws.root() / ".swarm/hub.git").string();
  auto packs = [&] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(ws.root() / ".swarm/hub.git/objects/pack"))
      n += e.path().extension() == ".pack" ? 1 : 0;
    return n;
  };
  // An object no ref names, in a pack of its own (what a push whose ref update is still on its way wrote).
  RunResult stray = run(Command{{"/bin/sh", "-c",
                                 "cd " + hub + " && oid=$(echo stray | git --git-dir . hash-object -w --stdin) && "
                                 "echo $oid | git --git-dir . pack-objects -q objects/pack/pack >/dev/null && "
                                 "git --git-dir . prune-packed && echo $oid"},
                                {},
                                {}});
  REQUIRE(stray.exit == 0);
  const std::string stray_oid = stray.out.substr(0, 40);
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  for (int i = 0; i < 55; ++i) {
    write_file(ws.worktree("s") / "f.txt", std::to_string(i) + "\n");
    REQUIRE(ws.swarm({"commit", "--slot", "s", "-m", "c" + std::to_string(i)}).exit == 0);
  }
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (packs() > 50 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(100ms);
  CHECK(packs() <= 50);
  CHECK(ws.git({"--git-dir", hub, "fsck", "--no-dangling"}).exit == 0);
  CHECK(ws.git({"--git-dir", hub, "rev-list", "--count", "swarm/s"}).out == "56\n");
  CHECK(ws.git({"--git-dir", hub, "cat-file", "-e", stray_oid}).exit == 0);
  // The repack is no verb of the user's.
  CHECK(ws.swarm({"--help"}).out.find("_repack-hub") == std::string::npos);
}

TEST_CASE("StatusJson_NewerWritersFieldsComeOutAsCJsonPrintsThem") {
  // status writes records by hand; one with fields of a newer writer still comes out in cJSON's form.
  SwarmWorkspace ws;
  {
    auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
    kv::Bucket::open(connection, ws.names().sessions)
        .create("n", R"({"slot":"n","host":"h","x_new" : [1.0, {"a" :  2}],"leaf_pid":7})");
  }
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  auto status = ws.swarm({"status", "--json"});
  REQUIRE(status.exit == 0);
  CHECK(status.out.find(R"({"slot":"n","host":"h","leaf_pid":7,"x_new":[1,{"a":2}],"session_token":)") !=
        std::string::npos);
  CHECK(status.out.find(R"({"slot":"s","task_id":"T-1","agent_id":"slot-s","host":"host-a")") != std::string::npos);
  CHECK(json_of(status));  // one valid document
}

TEST_CASE("StatusJson_ANewerWritersRecordKeepsItsTokenAndItsOwnFields") {
  // a record with a newer writer's fields that carries its session token (renewed) and a field named like one
  // status adds only sometimes (task_lease) keeps both: status replaces only what it writes itself.
  SwarmWorkspace ws;
  {
    auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
    kv::Bucket::open(connection, ws.names().sessions)
        .create("t", R"({"slot":"t","host":"h","session_token":5,"task_lease":"mine","x_new":1.0,"revision":99})");
  }
  auto status = ws.swarm({"status", "--json"});
  REQUIRE(status.exit == 0);
  auto doc = json_of(status);
  REQUIRE(doc);
  const cJSON* row = cJSON_GetArrayItem(cJSON_GetObjectItem(doc.get(), "sessions"), 0);
  REQUIRE(row != nullptr);
  CHECK(testing::number_of(row, "session_token") == 5);
  CHECK(testing::text_of(row, "task_lease") == "mine");
  CHECK(testing::number_of(row, "revision") == 1);  // status's own, not the record's 99
  CHECK(testing::number_of(row, "x_new") == 1);
}

TEST_CASE("Lifecycle_CommitTrailersNameTheSlotTaskAndSession") {
  SwarmWorkspace ws;
  auto join = ws.swarm({"join", "--slot", "render", "--task", "T-42", "--json"});
  REQUIRE(join.exit == 0);
  write_file(ws.worktree("render") / "f.txt", "f\n");
  REQUIRE(ws.swarm({"commit", "--slot", "render", "-m", "render: f"}).exit == 0);
  auto trailer = [&](const std::string& key) {
    return ws.git({"log", "-1", "--format=%(trailers:key=" + key + ",valueonly)"}, ws.worktree("render")).out;
  };
  CHECK(trailer("Swarm-Slot") == "render\n\n");
  CHECK(trailer("Swarm-Task") == "T-42\n\n");
  CHECK(trailer("Swarm-Session") ==
        std::to_string(static_cast<long long>(number(json_of(join), "session_token"))) + "\n\n");
  CHECK(ws.git({"log", "-1", "--format=%s"}, ws.worktree("render")).out == "render: f\n");
}

TEST_CASE("Lifecycle_TheSlotIsInferredInsideItsWorktreeOrFromSwarmSlot") {
  SwarmWorkspace ws;
  auto env = kHostA;
  env["SWARM_SLOT"] = "render";
  auto join = ws.swarm({"join", "--task", "T-1"}, env);
  REQUIRE_MESSAGE(join.exit == 0, join.err);
  CHECK(join.out == ws.worktree("render").string() + "\n");

  // Inside the worktree (or below it), with no --slot and no $SWARM_SLOT.
  std::filesystem::create_directories(ws.worktree("render") / "src");
  write_file(ws.worktree("render") / "src/f.txt", "f\n");
  auto commit = ws.swarm({"commit", "-m", "f"}, kHostA, ws.worktree("render") / "src");
  CHECK_MESSAGE(commit.exit == 0, commit.err);
  CHECK(ws.git({"log", "-1", "--format=%s", "swarm/render"}, ws.worktree("render")).out == "f\n");
  CHECK(ws.swarm({"renew"}, kHostA, ws.worktree("render")).exit == 0);
  CHECK(ws.swarm({"cwd"}, kHostA, ws.worktree("render") / "src").out == ws.worktree("render").string() + "\n");

  // An explicit --slot wins over $SWARM_SLOT; $SWARM_SLOT over the folder.
  auto other = kHostA;
  other["SWARM_SLOT"] = "nosuch";
  CHECK(ws.swarm({"renew", "--slot", "render"}, other).exit == 0);
  CHECK(ws.swarm({"renew"}, other, ws.worktree("render")).exit == 4);

  // No slot anywhere: exit 2 saying how to name one, in a workspace or not; a bad $SWARM_SLOT is exit 2.
  auto none = ws.swarm({"renew"});
  CHECK(none.exit == 2);
  CHECK(none.err.find("--slot") != std::string::npos);
  CHECK(ws.swarm({"renew"}, kHostA, ws.home()).exit == 2);
  auto bad = kHostA;
  bad["SWARM_SLOT"] = "a.b";
  CHECK(ws.swarm({"renew"}, bad).exit == 2);

  // close from inside the worktree it removes.
  auto close = ws.swarm({"close", "--result", "success"}, kHostA, ws.worktree("render") / "src");
  CHECK_MESSAGE(close.exit == 0, close.err);
  CHECK(!std::filesystem::exists(ws.worktree("render")));
  CHECK(ws.swarm({"status", "--slot", "render"}).exit == 4);
}

TEST_CASE("Close_AfterItsSessionExpiredIsNoSuccess") {
  // a session that expired may have been cut off half way: close --result success is exit 4 and changes
  // nothing (no close journaled, the folder kept); --result fail closes it; a join and close succeed.
  SwarmWorkspace ws({.up_args = {"--ttl", "2s"}});
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  write_file(ws.worktree("s") / "work.txt", "done?\n");
  REQUIRE(ws.swarm({"commit", "--slot", "s", "-m", "work"}).exit == 0);
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (ws.swarm({"status", "--slot", "s"}).exit == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(250ms);
  REQUIRE(ws.swarm({"status", "--slot", "s"}).exit == 4);
  auto success = ws.swarm({"close", "--slot", "s", "--result", "success"});
  CHECK(success.exit == 4);
  CHECK(success.err.find("expired") != std::string::npos);
  CHECK(std::filesystem::exists(ws.worktree("s") / "work.txt"));
  CHECK(ws.swarm({"log", "--slot", "s", "--kind", "close", "--json"}).out.empty());
  // Taken up again, it can say so.
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  auto again = ws.swarm({"close", "--slot", "s", "--result", "success", "--no-artifact"});
  CHECK_MESSAGE(again.exit == 0, again.err);
  // Expired again, fail is what it can be closed as.
  REQUIRE(ws.swarm({"join", "--slot", "t", "--task", "T-2"}).exit == 0);
  deadline = std::chrono::steady_clock::now() + 10s;
  while (ws.swarm({"status", "--slot", "t"}).exit == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(250ms);
  auto fail = ws.swarm({"close", "--slot", "t", "--result", "fail"});
  CHECK_MESSAGE(fail.exit == 0, fail.err);
  CHECK(ws.swarm({"log", "--slot", "t", "--kind", "close", "--json"}).out.find("\"result\":\"fail\"") !=
        std::string::npos);
}
