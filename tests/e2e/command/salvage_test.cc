// Removing a slot's folder never loses work: not to a join racing it, not to
// history outside swarm/<slot>, not to a kill half way, not to a broken repository.
#include <doctest/doctest.h>

#include <thread>

#include "e2e/swarm_fixture.h"
#include "swarm/base/file_lock.h"

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::string hub_of(const SwarmWorkspace& ws) { return (ws.root() / ".swarm/hub.git").string(); }

// The recovery folders salvaged from `slot`.
std::vector<fs::path> recoveries(const SwarmWorkspace& ws, const std::string& slot) {
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& dir : fs::directory_iterator(ws.root() / ".swarm/recovery", ec))
    if (dir.path().filename().string().rfind(slot + "-", 0) == 0) found.push_back(dir.path());
  return found;
}

void many_files(const fs::path& dir, int count) {
  for (int i = 0; i < count; ++i) write_file(dir / ("d" + std::to_string(i % 50)) / ("f" + std::to_string(i)), "x\n");
}

int count_files(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) ++n;
  return n;
}

const std::vector<std::string> kGitUser = {"-c", "user.name=t", "-c", "user.email=t@t"};

std::string trimmed_out(const RunResult& r) {
  std::string s = r.out;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

RunResult git_in(const SwarmWorkspace& ws, const fs::path& dir, std::vector<std::string> args) {
  args.insert(args.begin(), kGitUser.begin(), kGitUser.end());
  return ws.git(args, dir);
}

}  // namespace

TEST_CASE("Doctor_FixRacingAJoinNeverRemovesTheNewWorktree") {
  // doctor --fix salvaging a 3,000-file orphan folder while a join takes the slot: the join waits, gets a
  // worktree of its own, and the file the new agent writes there survives.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  many_files(ws.worktree("s") / "untracked", 3000);
  REQUIRE(ws.swarm({"evict", "--slot", "s"}).exit == 0);

  Process doctor(ws.command({"doctor", "--fix"}));
  std::this_thread::sleep_for(300ms);
  auto join = ws.swarm({"join", "--slot", "s", "--task", "T-2"});
  REQUIRE_MESSAGE(join.exit == 0, join.err);
  fs::path printed = join.out.substr(0, join.out.size() - 1);
  write_file(printed / "new-work.txt", "the new agent's\n");
  auto fixed = doctor.wait();
  CHECK((fixed.exit == 0 || fixed.exit == 8));
  CHECK(read_file(printed / "new-work.txt") == "the new agent's\n");
  CHECK(ws.git({"status", "--porcelain"}, printed).exit == 0);  // still a repository
  CHECK(ws.swarm({"status", "--slot", "s"}).exit == 0);
  // The old folder's files were salvaged (or, had doctor lost the race, are still in the worktree).
  int salvaged = 0;
  for (const auto& r : recoveries(ws, "s")) salvaged += count_files(r / "untracked");
  int kept = fs::exists(printed / "untracked") ? count_files(printed / "untracked") : 0;
  CHECK(salvaged + kept == 3000);
}

TEST_CASE("Close_RacingAJoinLeavesTheJoinAWorkingRepository") {
  // close --result success of a big worktree while a join of this host waits: the join's worktree is a
  // repository and its record stands.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  write_file(ws.worktree("s") / "done.txt", "done\n");
  REQUIRE(ws.swarm({"commit", "--slot", "s", "-m", "done"}).exit == 0);
  many_files(ws.worktree("s") / "scratch", 5000);
  Process close(ws.command({"close", "--slot", "s", "--result", "success"}));
  std::this_thread::sleep_for(200ms);
  auto join = ws.swarm({"join", "--slot", "s", "--task", "T-2", "--force"});
  auto closed = close.wait();
  REQUIRE_MESSAGE(closed.exit == 0, closed.err);
  if (join.exit == 0) {
    CHECK(ws.git({"rev-parse", "--abbrev-ref", "HEAD"}, ws.worktree("s")).out == "swarm/s\n");
    CHECK(ws.swarm({"status", "--slot", "s"}).exit == 0);
  } else {
    // The join came first and close then released it: either way one outcome, never a broken one.
    CHECK(ws.swarm({"status", "--slot", "s"}).exit == 4);
    CHECK_FALSE(fs::exists(ws.worktree("s")));
  }
  int salvaged = 0;
  for (const auto& r : recoveries(ws, "s")) salvaged += count_files(r / "scratch");
  CHECK(salvaged == 5000);
}

TEST_CASE("Join_WaitsForTheSlotsFolderLock") {
  // while another swarm process of this host holds the slot's folder, join waits, then goes on.
  SwarmWorkspace ws;
  auto lock = swarm::FileLock::try_acquire(swarm::SafeDir::open(ws.root() / ".swarm/locks"), "slot.s", "a test");
  REQUIRE(lock);
  Process join(ws.command({"join", "--slot", "s", "--task", "T-1"}));
  std::this_thread::sleep_for(500ms);
  CHECK_FALSE(fs::exists(ws.worktree("s")));
  lock.reset();
  auto r = join.wait();
  CHECK_MESSAGE(r.exit == 0, r.err);
  CHECK(r.err.find("waiting for another swarm process") != std::string::npos);
  CHECK(r.err.find("a test") != std::string::npos);
  CHECK(fs::exists(ws.worktree("s") / ".git"));

  // doctor --fix never waits: it leaves a held slot alone and says so.
  REQUIRE(ws.swarm({"evict", "--slot", "s"}).exit == 0);
  lock = swarm::FileLock::try_acquire(swarm::SafeDir::open(ws.root() / ".swarm/locks"), "slot.s", "another test");
  auto report = ws.swarm({"doctor", "--fix", "--json"});
  CHECK(report.exit == 8);
  CHECK(report.out.find("another swarm process is working on the slot") != std::string::npos);
  CHECK(fs::exists(ws.worktree("s") / ".git"));
}

TEST_CASE("Close_KeepsHistoryOutsideTheSlotBranchInTheHub") {
  // another local branch, a tag, a detached-HEAD commit, two stashes and an amended commit reach the hub
  // under refs/recovery/<slot>-<time>/ before close removes the worktree.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  auto wt = ws.worktree("s");
  write_file(wt / "base.txt", "base\n");
  REQUIRE(ws.swarm({"commit", "--slot", "s", "-m", "base"}).exit == 0);
  // A commit that is amended away: only HEAD's reflog remembers it.
  write_file(wt / "amended.txt", "first try\n");
  REQUIRE(git_in(ws, wt, {"add", "amended.txt"}).exit == 0);
  REQUIRE(git_in(ws, wt, {"commit", "-q", "-m", "first try"}).exit == 0);
  REQUIRE(git_in(ws, wt, {"commit", "-q", "--amend", "-m", "second try"}).exit == 0);
  REQUIRE(git_in(ws, wt, {"reset", "-q", "--hard", "HEAD~1"}).exit == 0);
  // Another branch, and a tag on it.
  REQUIRE(git_in(ws, wt, {"checkout", "-q", "-b", "feature"}).exit == 0);
  write_file(wt / "feature.txt", "feature\n");
  REQUIRE(git_in(ws, wt, {"add", "feature.txt"}).exit == 0);
  REQUIRE(git_in(ws, wt, {"commit", "-q", "-m", "feature work"}).exit == 0);
  REQUIRE(git_in(ws, wt, {"tag", "-a", "v1", "-m", "tagged"}).exit == 0);
  // A detached HEAD with a commit of its own.
  REQUIRE(git_in(ws, wt, {"checkout", "-q", "--detach", "swarm/s"}).exit == 0);
  write_file(wt / "detached.txt", "detached\n");
  REQUIRE(git_in(ws, wt, {"add", "detached.txt"}).exit == 0);
  REQUIRE(git_in(ws, wt, {"commit", "-q", "-m", "detached work"}).exit == 0);
  // Two stashes: the older one lives only in the stash's reflog.
  write_file(wt / "base.txt", "stash one\n");
  REQUIRE(git_in(ws, wt, {"stash", "-q"}).exit == 0);
  write_file(wt / "base.txt", "stash two\n");
  REQUIRE(git_in(ws, wt, {"stash", "-q"}).exit == 0);

  auto closed = ws.swarm({"close", "--slot", "s", "--result", "fail", "--json"});
  REQUIRE_MESSAGE(closed.exit == 0, closed.err);
  CHECK_FALSE(fs::exists(wt));
  std::string prefix = field(json_of(closed), "recovery_ref");
  REQUIRE(prefix.rfind("refs/recovery/s-", 0) == 0);
  auto show = [&](const std::string& rev) { return ws.git({"--git-dir", hub_of(ws), "show", rev}).out; };
  auto subject = [&](const std::string& rev) {
    return ws.git({"--git-dir", hub_of(ws), "log", "-1", "--format=%s", rev}).out;
  };
  CHECK(show(prefix + "/heads/feature:feature.txt") == "feature\n");
  CHECK(subject(prefix + "/tags/v1") == "feature work\n");
  CHECK(show(prefix + "/detached-HEAD:detached.txt") == "detached\n");
  CHECK(show(prefix + "/stash:base.txt") == "stash two\n");
  CHECK(show(prefix + "/stash-1:base.txt") == "stash one\n");
  // The amended-away commit is in some reflog ref.
  auto refs = ws.git({"--git-dir", hub_of(ws), "for-each-ref", "--format=%(refname)", prefix + "/"}).out;
  bool first_try = false;
  std::size_t at = 0;
  while (at < refs.size()) {
    auto end = refs.find('\n', at);
    first_try = first_try || subject(refs.substr(at, end - at)) == "first try\n";
    at = end + 1;
  }
  CHECK(first_try);
  // swarm/s was pushed: the hub has it, so it gets no recovery ref.
  CHECK(refs.find(prefix + "/heads/swarm/s\n") == std::string::npos);
}

TEST_CASE("Doctor_FixSalvagesAWorktreeWhoseObjectsAreGone") {
  // a worktree whose .git/objects were half deleted (a kill during an old close) is salvaged file by file with its
  // .git kept, and removed: never "left alone" forever.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  auto wt = ws.worktree("s");
  write_file(wt / "local.txt", "committed locally only\n");
  REQUIRE(git_in(ws, wt, {"add", "local.txt"}).exit == 0);
  REQUIRE(git_in(ws, wt, {"commit", "-q", "-m", "local"}).exit == 0);
  write_file(wt / "wip.txt", "uncommitted\n");
  REQUIRE(ws.swarm({"evict", "--slot", "s"}).exit == 0);
  for (const auto& e : fs::recursive_directory_iterator(wt / ".git/objects"))
    if (e.is_regular_file()) fs::remove(e.path());

  auto fix = ws.swarm({"doctor", "--fix", "--json"});
  CHECK_MESSAGE(fix.exit == 0, fix.out << fix.err);
  CHECK(fix.out.find("could not be read") != std::string::npos);
  CHECK_FALSE(fs::exists(ws.root() / ".swarm/slots/s"));
  auto found = recoveries(ws, "s");
  REQUIRE(found.size() == 1);
  CHECK(read_file(found[0] / "local.txt") == "committed locally only\n");
  CHECK(read_file(found[0] / "wip.txt") == "uncommitted\n");
  CHECK(fs::exists(found[0] / ".git/HEAD"));
  CHECK(ws.swarm({"doctor"}).exit == 0);
}

TEST_CASE("Removal_InterruptedAfterSalvageIsFinishedLater") {
  // what a killed removal left in .swarm/trash/ is reported, and finished by doctor --fix or by close.
  SwarmWorkspace ws;
  write_file(ws.root() / ".swarm/trash/s.20261123T000000.000Z.4242/wt/.git/objects/half", "x");
  auto report = ws.swarm({"doctor", "--json"});
  CHECK(report.exit == 8);
  CHECK(report.out.find("unfinished_removal") != std::string::npos);
  CHECK(ws.swarm({"doctor", "--fix"}).exit == 0);
  CHECK_FALSE(fs::exists(ws.root() / ".swarm/trash/s.20261123T000000.000Z.4242"));

  // close of a slot with no record and no folder finishes its leftover too.
  write_file(ws.root() / ".swarm/trash/t.20261123T000000.000Z.4242/wt/x", "x");
  auto closed = ws.swarm({"close", "--slot", "t", "--result", "fail"});
  CHECK_MESSAGE(closed.exit == 0, closed.err);
  CHECK_FALSE(fs::exists(ws.root() / ".swarm/trash/t.20261123T000000.000Z.4242"));
  CHECK(ws.swarm({"close", "--slot", "t", "--result", "fail"}).exit == 4);
  CHECK(ws.swarm({"doctor"}).exit == 0);
}

TEST_CASE("Doctor_OnlyFoldersNamedLikeSlotsAreSlots") {
  // plain files and oddly named folders in .swarm/slots/ are reported and never removed; files beside wt/ of a
  // slot that is removed are salvaged.
  SwarmWorkspace ws;
  write_file(ws.root() / ".swarm/slots/README.txt", "an operator's note\n");
  write_file(ws.root() / ".swarm/slots/not.a.slot/keep.txt", "keep\n");
  REQUIRE(ws.swarm({"join", "--slot", "dead", "--task", "T-1"}).exit == 0);
  write_file(ws.root() / ".swarm/slots/dead/notes.txt", "beside the worktree\n");
  REQUIRE(ws.swarm({"evict", "--slot", "dead"}).exit == 0);

  auto fix = ws.swarm({"doctor", "--fix", "--json"});
  CHECK_MESSAGE(fix.exit == 0, fix.out);  // strays are notices
  CHECK(fix.out.find("stray_entry") != std::string::npos);
  CHECK(fix.out.find("join --slot README.txt") == std::string::npos);
  CHECK(read_file(ws.root() / ".swarm/slots/README.txt") == "an operator's note\n");
  CHECK(read_file(ws.root() / ".swarm/slots/not.a.slot/keep.txt") == "keep\n");
  CHECK_FALSE(fs::exists(ws.root() / ".swarm/slots/dead"));
  auto found = recoveries(ws, "dead");
  REQUIRE(found.size() == 1);
  CHECK(read_file(found[0] / "beside-wt/notes.txt") == "beside the worktree\n");
}

TEST_CASE("Close_WithTheHubGoneIsExit6AndKeepsEverything") {
  // close needs the hub for salvage: without it, exit 6 naming the hub, and the record and worktree stay.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  write_file(ws.worktree("s") / "wip.txt", "wip\n");
  fs::rename(ws.root() / ".swarm/hub.git", ws.root() / "hub-moved");
  auto r = ws.swarm({"close", "--slot", "s", "--result", "fail"});
  CHECK(r.exit == 6);
  CHECK(r.err.find("hub.git") != std::string::npos);
  CHECK(r.err.find("unsupported URL") == std::string::npos);
  CHECK(read_file(ws.worktree("s") / "wip.txt") == "wip\n");
  CHECK(ws.swarm({"status", "--slot", "s"}).exit == 0);
}

TEST_CASE("Doctor_PointedAtAnotherServerRemovesNoFolder") {
  // doctor --fix reading another server's records (--nats-url, $NATS_URL) sees no record for this workspace's live
  // slots: it reports their folders, and removes none.
  SwarmWorkspace ws;
  // Another server with buckets of the same names (a workspace so named there), none of ws's records.
  SwarmWorkspace other({.up_args = {"--name", ws.names().workspace}});
  REQUIRE(ws.swarm({"join", "--slot", "live", "--task", "T-1"}).exit == 0);
  write_file(ws.worktree("live") / "notes.txt", "work in progress\n");
  auto fix = ws.swarm({"doctor", "--fix", "--json", "--nats-url", other.server()->url()});
  CHECK(fix.exit == 8);
  CHECK(fix.out.find("another server or bucket") != std::string::npos);
  CHECK(read_file(ws.worktree("live") / "notes.txt") == "work in progress\n");
  auto with_env = ws.command({"doctor", "--fix"});
  with_env.env["NATS_URL"] = other.server()->url();
  auto by_env = run(with_env);
  CHECK(by_env.exit == 8);
  CHECK(fs::exists(ws.worktree("live") / "notes.txt"));
  CHECK(ws.swarm({"doctor"}).exit == 0);  // the workspace's own server: healthy
}

TEST_CASE("Close_KeepsIgnoredFilesReflogsTagsAndNestedRepositories") {
  // ignored files, a commit only a branch's reflog remembers, and an annotated tag on a pushed commit are kept;
  // a worktree with a linked worktree is kept whole.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  auto wt = ws.worktree("s");
  write_file(wt / ".gitignore", "*.log\n");
  write_file(wt / "base.txt", "base\n");
  REQUIRE(ws.swarm({"commit", "--slot", "s", "-m", "base"}).exit == 0);
  write_file(wt / "results.log", "hours of results\n");
  write_file(wt / ".git/info/exclude", "secret.env\n");
  write_file(wt / "secret.env", "TOKEN=1\n");
  write_file(wt / "build/out.log", "ignored folder\n");
  // A commit that only refs/heads/tmp's reflog remembers, and an annotated tag on the pushed tip.
  REQUIRE(git_in(ws, wt, {"commit", "-q", "--allow-empty", "-m", "reflog only"}).exit == 0);
  auto lost_commit = trimmed_out(ws.git({"rev-parse", "HEAD"}, wt));
  REQUIRE(git_in(ws, wt, {"reset", "-q", "--hard", "HEAD~1"}).exit == 0);
  REQUIRE(git_in(ws, wt, {"update-ref", "refs/heads/tmp", lost_commit}).exit == 0);
  REQUIRE(git_in(ws, wt, {"update-ref", "refs/heads/tmp", "HEAD"}).exit == 0);
  REQUIRE(git_in(ws, wt, {"tag", "-a", "release-1", "-m", "the release notes"}).exit == 0);
  auto closed = ws.swarm({"close", "--slot", "s", "--result", "fail", "--json"});
  REQUIRE_MESSAGE(closed.exit == 0, closed.err);
  auto found = recoveries(ws, "s");
  REQUIRE(found.size() == 1);
  CHECK(read_file(found[0] / "results.log") == "hours of results\n");
  CHECK(read_file(found[0] / "secret.env") == "TOKEN=1\n");
  CHECK(read_file(found[0] / "build/out.log") == "ignored folder\n");
  std::string prefix = field(json_of(closed), "recovery_ref");
  REQUIRE(!prefix.empty());
  auto refs = ws.git({"--git-dir", hub_of(ws), "for-each-ref", "--format=%(objectname)", prefix + "/"}).out;
  CHECK(refs.find(lost_commit) != std::string::npos);
  CHECK(ws.git({"--git-dir", hub_of(ws), "cat-file", "-p", prefix + "/tags/release-1"}).out.find("the release notes") !=
        std::string::npos);

  // A linked worktree's history lives in .git/worktrees: the repository is kept whole.
  REQUIRE(ws.swarm({"join", "--slot", "l", "--task", "T-2"}).exit == 0);
  auto lwt = ws.worktree("l");
  REQUIRE(git_in(ws, lwt, {"worktree", "add", "-q", "--detach", (lwt / "linked").string()}).exit == 0);
  REQUIRE(git_in(ws, lwt / "linked", {"commit", "-q", "--allow-empty", "-m", "in the linked worktree"}).exit == 0);
  auto linked_commit = trimmed_out(ws.git({"rev-parse", "HEAD"}, lwt / "linked"));
  REQUIRE(ws.swarm({"close", "--slot", "l", "--result", "fail"}).exit == 0);
  auto kept = recoveries(ws, "l");
  REQUIRE(kept.size() == 1);
  CHECK(ws.git({"--git-dir", (kept[0] / ".git").string(), "cat-file", "-t", linked_commit}).out == "commit\n");
}

TEST_CASE("Join_AFileWhereTheSlotFolderShouldBeIsNamed") {
  // a plain file at .swarm/slots/<slot> is refused (exit 3) naming it; the file stays, nothing is left behind.
  SwarmWorkspace ws;
  write_file(ws.root() / ".swarm/slots/s", "an operator's file\n");
  auto r = ws.swarm({"join", "--slot", "s", "--task", "T-1"});
  CHECK(r.exit == 3);
  CHECK(r.err.find("is a file where the folder of slot s should be") != std::string::npos);
  CHECK(read_file(ws.root() / ".swarm/slots/s") == "an operator's file\n");
  CHECK(ws.swarm({"status", "--slot", "s"}).exit == 4);  // the record was undone
}

TEST_CASE("Join_NeverResumesAHalfSalvagedWorktree") {
  // a close killed while moving files out leaves the folder marked: join refuses it (exit 3, naming the fix),
  // doctor --fix finishes the salvage, and then join starts clean with every file kept in recovery.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  write_file(ws.worktree("s") / "kept.txt", "work\n");
  write_file(ws.worktree("s") / "moved.txt", "moved already\n");
  // What a close killed half way leaves: no record, one file moved, the mark.
  REQUIRE(ws.swarm({"evict", "--slot", "s"}).exit == 0);
  fs::create_directories(ws.root() / ".swarm/recovery/s-earlier");
  fs::rename(ws.worktree("s") / "moved.txt", ws.root() / ".swarm/recovery/s-earlier/moved.txt");
  write_file(ws.root() / ".swarm/slots/s/salvaging", "being moved\n");

  auto join = ws.swarm({"join", "--slot", "s", "--task", "T-1"});
  CHECK(join.exit == 3);
  CHECK(join.err.find("half salvaged") != std::string::npos);
  CHECK(join.err.find("swarm doctor --fix") != std::string::npos);
  CHECK(read_file(ws.worktree("s") / "kept.txt") == "work\n");  // the refusal touched nothing
  CHECK(ws.swarm({"status", "--slot", "s"}).exit == 4);         // and left no record

  auto fix = ws.swarm({"doctor", "--fix"});
  CHECK_MESSAGE(fix.exit == 0, fix.out);
  CHECK_FALSE(fs::exists(ws.root() / ".swarm/slots/s"));
  bool kept = false;
  for (const auto& entry : fs::recursive_directory_iterator(ws.root() / ".swarm/recovery"))
    kept = kept || (entry.path().filename() == "kept.txt" && read_file(entry.path()) == "work\n");
  CHECK(kept);
  CHECK(read_file(ws.root() / ".swarm/recovery/s-earlier/moved.txt") == "moved already\n");
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  CHECK_FALSE(fs::exists(ws.worktree("s") / "kept.txt"));
}
