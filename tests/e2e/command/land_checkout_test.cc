// The land checkout (onto-<branch>/, kept outside the workspace) is swarm's, whatever a check
// did to it: links a check leaves in its .git or its worktree, and hard links
// to files elsewhere, are never written through by the next land; a tree that
// once could not be checked out never sticks; a check that cannot be executed
// is 126 and one that is not there 127, as a shell says.
#include <doctest/doctest.h>

#include <fstream>

#include "e2e/swarm_fixture.h"

using namespace testing;
namespace fs = std::filesystem;

namespace {

std::string hub_git(const SwarmWorkspace& ws, const std::vector<std::string>& args) {
  std::vector<std::string> full = {"--git-dir", (ws.root() / ".swarm/hub.git").string()};
  full.insert(full.end(), args.begin(), args.end());
  std::string out = ws.git(full).out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// join, let `work` change the worktree, commit, close --result success.
void finish(const SwarmWorkspace& ws, const std::string& slot, const std::function<void(const fs::path&)>& work) {
  auto join = ws.swarm({"join", "--slot", slot, "--task", "T-" + slot});
  REQUIRE_MESSAGE(join.exit == 0, join.err);
  work(ws.worktree(slot));
  auto commit = ws.swarm({"commit", "--slot", slot, "-m", slot});
  REQUIRE_MESSAGE(commit.exit == 0, commit.err);
  auto close = ws.swarm({"close", "--slot", slot, "--result", "success"});
  REQUIRE_MESSAGE(close.exit == 0, close.err);
}

void add_file(const SwarmWorkspace& ws, const std::string& slot, const std::string& name) {
  finish(ws, slot, [&](const fs::path& wt) { write_file(wt / name, name + "\n"); });
}

// Every file below `dir` with its content (links as "-> target").
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    const auto rel = fs::relative(it->path(), dir).string();
    if (it->is_symlink()) out[rel] = "-> " + fs::read_symlink(it->path()).string();
    else if (it->is_regular_file()) out[rel] = read_file(it->path());
  }
  return out;
}

}  // namespace

TEST_CASE("LandCheckout_WhatACheckPlantsIsNeverWrittenThrough") {
  // a check replaces the checkout's .git/HEAD, index, config, refs and objects/info/alternates with links into
  // another repository, and a tracked file with a hard link to a file outside: the next land (with a check)
  // changes nothing of the other repository or the outside file, and lands.
  SwarmWorkspace ws;
  const fs::path victim = ws.home() / "victim";
  REQUIRE(ws.git({"init", "-q", victim.string()}).exit == 0);
  write_file(victim / "v.txt", "victim\n");
  ws.git({"add", "v.txt"}, victim);
  REQUIRE(ws.git({"-c", "user.name=v", "-c", "user.email=v@v", "commit", "-q", "-m", "v"}, victim).exit == 0);
  const fs::path outside = ws.home() / "outside.txt";
  write_file(outside, "outside\n");
  const auto victim_before = snapshot(victim / ".git");

  add_file(ws, "one", "one.txt");
  const fs::path v = victim / ".git";
  const std::string plant =
      "set -e; g=.git; "
      "rm -f $g/HEAD && ln -s " + (v / "HEAD").string() + " $g/HEAD; "
      "rm -f $g/index && ln -s " + (v / "index").string() + " $g/index; "
      "rm -f $g/config && ln -s " + (v / "config").string() + " $g/config; "
      "rm -rf $g/refs && ln -s " + (v / "refs").string() + " $g/refs; "
      "mkdir -p $g/objects/info && rm -f $g/objects/info/alternates && "
      "ln -s " + (v / "objects/info/alternates-planted").string() + " $g/objects/info/alternates; "
      "rm -f one.txt && ln " + outside.string() + " one.txt";
  auto first = ws.swarm({"land", "--slot", "one", "--", "/bin/sh", "-c", plant});
  REQUIRE_MESSAGE(first.exit == 0, first.err);

  finish(ws, "two", [](const fs::path& wt) {
    write_file(wt / "one.txt", "changed by two\n");
    write_file(wt / "two.txt", "two\n");
  });
  auto second = ws.swarm({"land", "--slot", "two", "--", "/bin/sh", "-c", "cat one.txt two.txt"});
  CHECK_MESSAGE(second.exit == 0, second.err);
  CHECK(second.err.find("changed by two") != std::string::npos);
  CHECK(read_file(outside) == "outside\n");
  CHECK(snapshot(victim / ".git") == victim_before);
  CHECK(!fs::exists(v / "objects/info/alternates-planted"));
  CHECK(hub_git(ws, {"show", "main:one.txt"}) == "changed by two");
}

TEST_CASE("LandCheckout_ALinkThatBecomesAFolderLandsAndLaterLandsGoOn") {
  // main tracks a link; a slot turns it into a folder: the land with a check goes through, and so does the next.
  SwarmWorkspace ws;
  finish(ws, "link", [](const fs::path& wt) {
    write_file(wt / "target.txt", "t\n");
    fs::create_symlink("target.txt", wt / "lnk");
  });
  REQUIRE(ws.swarm({"land", "--slot", "link", "--", "true"}).exit == 0);
  finish(ws, "folder", [](const fs::path& wt) {
    fs::remove(wt / "lnk");
    fs::create_directories(wt / "lnk");
    write_file(wt / "lnk/inside.txt", "inside\n");
  });
  auto turned = ws.swarm({"land", "--slot", "folder", "--", "/bin/sh", "-c", "cat lnk/inside.txt"});
  CHECK_MESSAGE(turned.exit == 0, turned.err);
  add_file(ws, "after", "after.txt");
  auto after = ws.swarm({"land", "--slot", "after", "--", "/bin/sh", "-c", "ls after.txt lnk/inside.txt"});
  CHECK_MESSAGE(after.exit == 0, after.err);
  CHECK(hub_git(ws, {"show", "main:lnk/inside.txt"}) == "inside");
}

TEST_CASE("LandCheckout_ACheckThatCannotBeExecutedIs126AndOneNotThere127") {
  SwarmWorkspace ws;
  finish(ws, "s", [](const fs::path& wt) {
    fs::create_directories(wt / "ci");
    write_file(wt / "ci/check.sh", "#!/bin/sh\nexit 0\n");  // not executable
  });
  auto not_executable = ws.swarm({"land", "--slot", "s", "--", "./ci/check.sh"});
  CHECK(not_executable.exit == 3);
  CHECK(not_executable.err.find("exit 126") != std::string::npos);
  // Refused at this head, it stays refused unless a land is forced.
  auto missing = ws.swarm({"land", "--slot", "s", "--force", "--", "./ci/missing.sh"});
  CHECK(missing.exit == 3);
  CHECK(missing.err.find("exit 127") != std::string::npos);
  auto log = ws.swarm({"log", "--slot", "s", "--kind", "land.refused", "--json"});
  CHECK(log.out.find("\"status\":126") != std::string::npos);
  CHECK(log.out.find("\"status\":127") != std::string::npos);
}

TEST_CASE("LandCheckout_ATreeThatCannotBeCheckedOutIsARefusedLandNeverAStuckCheckout") {
  // a slot branch whose tree holds a ".git" entry (made by git mktree, pushed by hand): no checkout takes it, so
  // the land is refused (reason checkout, exit 3) and main stays; the next land with a check goes on.
  SwarmWorkspace ws;
  add_file(ws, "good", "good.txt");
  REQUIRE(ws.swarm({"land", "--slot", "good", "--", "true"}).exit == 0);
  const std::string blob = hub_git(ws, {"hash-object", "-w", "--stdin"});  // the empty blob, from no input
  std::string listing = hub_git(ws, {"ls-tree", "main"}) + "\n100644 blob " + blob + "\t.git\n";
  const fs::path list_file = ws.home() / "tree.txt";
  write_file(list_file, listing);
  Command mktree{{"/bin/sh", "-c", "git --git-dir " + (ws.root() / ".swarm/hub.git").string() + " mktree < " +
                                       list_file.string()}, {{"HOME", ws.home().string()}}, ws.root()};
  auto tree = run(mktree);
  REQUIRE(tree.exit == 0);
  std::string tree_id = tree.out.substr(0, 40);
  const std::string commit = hub_git(ws, {"-c", "user.name=m", "-c", "user.email=m@m", "commit-tree", "-p", "main",
                                          "-m", "a tree no checkout takes", tree_id});
  REQUIRE(hub_git(ws, {"update-ref", "refs/heads/swarm/evil", commit}).empty());
  const std::string before = hub_git(ws, {"rev-parse", "main"});
  auto evil = ws.swarm({"land", "--slot", "evil", "--force", "--", "true"});
  CHECK(evil.exit == 3);
  CHECK(evil.err.find("cannot be checked out") != std::string::npos);
  CHECK(hub_git(ws, {"rev-parse", "main"}) == before);
  CHECK(ws.swarm({"log", "--slot", "evil", "--kind", "land.refused", "--json"}).out.find("\"reason\":\"checkout\"") !=
        std::string::npos);
  add_file(ws, "next", "next.txt");
  auto next = ws.swarm({"land", "--slot", "next", "--", "/bin/sh", "-c", "test -f next.txt"});
  CHECK_MESSAGE(next.exit == 0, next.err);
}

TEST_CASE("LandCheckout_AFifoACheckLeavesNeverHangsTheNextLand") {
  // a check that puts a FIFO where a tracked file goes: the next land removes it and goes on (a write to it
  // would wait for a reader for ever, the lease renewed all the while).
  SwarmWorkspace ws;
  add_file(ws, "one", "one.txt");
  REQUIRE(ws.swarm({"land", "--slot", "one", "--", "/bin/sh", "-c", "rm one.txt && mkfifo one.txt"}).exit == 0);
  finish(ws, "two", [](const fs::path& wt) { write_file(wt / "one.txt", "changed\n"); });
  Process next(ws.command({"land", "--slot", "two", "--", "/bin/sh", "-c", "cat one.txt"}));
  auto r = next.wait(std::chrono::seconds(30));
  CHECK_MESSAGE(r.exit == 0, r.err);
  CHECK(r.err.find("changed") != std::string::npos);
}

TEST_CASE("LandCheckout_BuildOutputItsLinksIncludedStays") {
  // what a check builds (ignored files, links among them) is there for the next land's check: only the paths
  // the checkout writes are made safe.
  SwarmWorkspace ws;
  finish(ws, "ignore", [](const fs::path& wt) { write_file(wt / ".gitignore", "out/\n"); });
  REQUIRE(ws.swarm({"land", "--slot", "ignore", "--", "/bin/sh", "-c",
                    "mkdir -p out && echo built > out/artifact && ln -sf artifact out/latest"}).exit == 0);
  add_file(ws, "next", "next.txt");
  auto r = ws.swarm({"land", "--slot", "next", "--", "/bin/sh", "-c", "test -L out/latest && cat out/latest"});
  CHECK_MESSAGE(r.exit == 0, r.err);
  CHECK(r.err.find("built") != std::string::npos);
}
