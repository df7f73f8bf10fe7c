// The trust boundaries of swarm's own folders (adr/0018), each tried with the
// attack planted: .swarm/ entries replaced by symbolic or hard links, a trash
// or slot folder swapped while doctor works, a path the filesystem refuses.
#include <doctest/doctest.h>

#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "e2e/swarm_fixture.h"

using namespace testing;
namespace fs = std::filesystem;

namespace {

// A folder outside the workspace with files in it: what an attack would harm.
struct Victim {
  TempDir dir{"swarm-victim"};
  Victim() {
    write_file(dir / "precious.txt", "keep me\n");
    write_file(dir / "sub/deep.txt", "keep me too\n");
    // Names of the shapes swarm deletes or moves, should it ever look here.
    write_file(dir / "s.20261122T100000.123Z.1/inside.txt", "trash-shaped\n");
    write_file(dir / "wt/file.txt", "worktree-shaped\n");
  }
  fs::path path() const { return dir.path(); }
  // Every file as it was planted.
  bool intact() const {
    return read_file(dir / "precious.txt") == "keep me\n" && read_file(dir / "sub/deep.txt") == "keep me too\n" &&
           read_file(dir / "s.20261122T100000.123Z.1/inside.txt") == "trash-shaped\n" &&
           read_file(dir / "wt/file.txt") == "worktree-shaped\n";
  }
};

void replace_with_link(const fs::path& path, const fs::path& target) {
  std::error_code ec;
  fs::remove_all(path, ec);
  fs::create_directory_symlink(target, path);
}

}  // namespace

TEST_CASE("Trust_ATrashThatIsALinkIsReportedAndNothingItNamesIsDeleted") {
  // .swarm/trash made a link to a folder elsewhere: doctor --fix reports it and deletes nothing there.
  SwarmWorkspace ws;
  Victim victim;
  replace_with_link(ws.root() / ".swarm/trash", victim.path());
  auto r = ws.swarm({"doctor", "--fix", "--json"});
  CHECK(r.exit == 8);
  CHECK(r.out.find("unsafe_path") != std::string::npos);
  CHECK(r.out.find(".swarm/trash") != std::string::npos);
  CHECK(victim.intact());
  // Verbs that would use it refuse before changing anything (exit 2, naming it).
  auto join = ws.swarm({"join", "--slot", "s", "--task", "T-1"});
  CHECK(join.exit == 2);
  CHECK(join.err.find(".swarm/trash") != std::string::npos);
  CHECK(ws.swarm({"status", "--slot", "s"}).exit == 4);  // no record was left behind
  CHECK(victim.intact());
}

TEST_CASE("Trust_ASlotFolderThatIsALinkIsNoOrphanAndIsNeverEmptied") {
  // .swarm/slots/evil made a link to a folder elsewhere: reported, never salvaged into .swarm/recovery/.
  SwarmWorkspace ws;
  Victim victim;
  fs::create_directories(ws.root() / ".swarm/slots");
  fs::create_directory_symlink(victim.path(), ws.root() / ".swarm/slots/evil");
  auto r = ws.swarm({"doctor", "--fix"});
  CHECK(r.exit == 8);
  CHECK(r.out.find("[unsafe_path]") != std::string::npos);
  CHECK(r.out.find("evil") != std::string::npos);
  CHECK(r.out.find("orphan_folder") == std::string::npos);
  CHECK(victim.intact());
  CHECK(fs::is_symlink(ws.root() / ".swarm/slots/evil"));
  std::error_code ec;
  const bool nothing_recovered = !fs::exists(ws.root() / ".swarm/recovery") || fs::is_empty(ws.root() / ".swarm/recovery", ec);
  CHECK(nothing_recovered);
  // A verb on that slot refuses, naming it.
  auto join = ws.swarm({"join", "--slot", "evil", "--task", "T-1"});
  CHECK(join.exit == 2);
  CHECK(join.err.find("evil") != std::string::npos);
  CHECK(victim.intact());
}

TEST_CASE("Trust_CrumbsThatAreLinksAreReplacedNeverWrittenThrough") {
  // leaf.pid and the salvaging mark planted as links: join --force and close replace them, the targets stay.
  SwarmWorkspace ws;
  Victim victim;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  const fs::path folder = ws.root() / ".swarm/slots/s";
  fs::remove(folder / "leaf.pid");
  fs::create_symlink(victim.path() / "precious.txt", folder / "leaf.pid");
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1", "--force"}).exit == 0);
  CHECK(victim.intact());
  CHECK_FALSE(fs::is_symlink(folder / "leaf.pid"));
  fs::create_symlink(victim.path() / "sub/deep.txt", folder / "salvaging");
  write_file(ws.worktree("s") / "scratch.txt", "uncommitted\n");
  auto close = ws.swarm({"close", "--slot", "s", "--result", "fail"});
  CHECK_MESSAGE(close.exit == 0, close.err);
  CHECK(victim.intact());
  CHECK_FALSE(fs::exists(folder));
}

TEST_CASE("Trust_ALockFileThatIsALinkIsRefusedAndItsTargetKept") {
  // .swarm/locks/slot.<slot> as a link: commit refuses (exit 2, naming it) instead of truncating the target.
  SwarmWorkspace ws;
  Victim victim;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  const fs::path lock = ws.root() / ".swarm/locks/slot.s";
  fs::remove(lock);
  fs::create_symlink(victim.path() / "precious.txt", lock);
  write_file(ws.worktree("s") / "a.txt", "a\n");
  auto r = ws.swarm({"commit", "--slot", "s", "-m", "a"});
  CHECK(r.exit == 2);
  CHECK(r.err.find("slot.s") != std::string::npos);
  CHECK(victim.intact());
  CHECK(ws.swarm({"renew", "--slot", "s"}).exit == 0);  // renew takes no lock file
  CHECK(victim.intact());
}

TEST_CASE("Trust_AWorktreeThatIsALinkIsRefusedAndNothingIsMovedOutOfIt") {
  // the slot's wt replaced by a link to another folder: close and commit refuse; the folder keeps its files.
  SwarmWorkspace ws;
  Victim victim;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  replace_with_link(ws.worktree("s"), victim.path());
  auto close = ws.swarm({"close", "--slot", "s", "--result", "fail"});
  CHECK(close.exit == 2);
  CHECK(close.err.find("slots/s/wt") != std::string::npos);
  CHECK(ws.swarm({"commit", "--slot", "s", "-m", "x"}).exit == 2);
  CHECK(ws.swarm({"status", "--slot", "s"}).exit == 0);  // the session stands
  CHECK(victim.intact());
  auto doctor = ws.swarm({"doctor", "--fix"});
  CHECK(doctor.out.find("[unsafe_path]") != std::string::npos);
  CHECK(victim.intact());
}

TEST_CASE("Trust_OnlyTrashEntriesOfSwarmsShapeAreDeleted") {
  // a folder someone put in .swarm/trash under another name is left alone.
  SwarmWorkspace ws;
  write_file(ws.root() / ".swarm/trash/not-ours/file.txt", "mine\n");
  write_file(ws.root() / ".swarm/trash/s.20261122T100000.123Z.77/old.txt", "salvaged already\n");
  auto r = ws.swarm({"doctor", "--fix"});
  CHECK(read_file(ws.root() / ".swarm/trash/not-ours/file.txt") == "mine\n");
  CHECK_FALSE(fs::exists(ws.root() / ".swarm/trash/s.20261122T100000.123Z.77"));
}

TEST_CASE("Trust_AnOrphanSwappedForALinkWhileDoctorFixesIt") {
  // race, through the real binary: an orphan slot folder is swapped for a link to another folder (and back)
  // while `doctor --fix` lists, salvages and removes it, 25 times; the other folder never loses a file.
  SwarmWorkspace ws;
  Victim victim;
  const fs::path slot = ws.root() / ".swarm/slots/x";
  const fs::path aside = ws.root() / ".swarm/slots/x-real";
  for (int round = 0; round < 25; ++round) {
    std::error_code ec;
    fs::remove_all(slot, ec);
    fs::remove_all(aside, ec);
    write_file(slot / "beside.txt", "the orphan's file\n");
    std::atomic<bool> stop{false};
    std::thread swapper([&] {
      while (!stop) {
        if (::rename(slot.c_str(), aside.c_str()) != 0) continue;
        ::symlink(victim.path().c_str(), slot.c_str());
        ::usleep(static_cast<useconds_t>(50 + round * 20));
        ::unlink(slot.c_str());
        ::rename(aside.c_str(), slot.c_str());
      }
    });
    auto r = ws.swarm({"doctor", "--fix"});
    stop = true;
    swapper.join();
    CHECK_MESSAGE((r.exit == 0 || r.exit == 8), "exit " << r.exit << ": " << r.err);
    REQUIRE(victim.intact());
  }
}

TEST_CASE("Trust_AHardLinkIsNoFileOfSwarmsOwn") {
  // a lock file planted as a hard link to a file elsewhere: refused (exit 2), the file keeps its bytes.
  SwarmWorkspace ws;
  Victim victim;
  fs::create_directories(ws.root() / ".swarm/locks");
  fs::create_hard_link(victim.path() / "precious.txt", ws.root() / ".swarm/locks/slot.evil");
  auto r = ws.swarm({"join", "--slot", "evil", "--task", "T-1"});
  CHECK(r.exit == 2);
  CHECK(r.err.find("slot.evil") != std::string::npos);
  CHECK(r.err.find("hard link") != std::string::npos);
  CHECK(victim.intact());
}

TEST_CASE("Trust_FilesTheEmbeddedServerOpensByPathAreNeverLinks") {
  // nats.log planted as a link: up refuses (exit 2) before the server would append to what it names; doctor says so.
  SwarmWorkspace ws({.embedded = true});
  Victim victim;
  REQUIRE(ws.swarm({"down"}).exit == 0);
  const fs::path log = ws.root() / ".swarm/nats/nats.log";
  fs::remove(log);
  fs::create_symlink(victim.path() / "precious.txt", log);
  auto up = ws.swarm({"up"});
  CHECK(up.exit == 2);
  CHECK(up.err.find("nats.log") != std::string::npos);
  CHECK(victim.intact());
  CHECK(ws.swarm({"doctor"}).out.find("[unsafe_path]") != std::string::npos);
  fs::remove(log);
  CHECK(ws.swarm({"up"}).exit == 0);
  CHECK(victim.intact());
}

TEST_CASE("Trust_TheHubsRepackLockIsNeverFollowed") {
  // the repack's lock file in the hub planted as a link: the repack refuses, and creates nothing where it points.
  SwarmWorkspace ws;
  TempDir elsewhere{"swarm-elsewhere"};
  const fs::path target = elsewhere / "created-by-repack";
  fs::create_symlink(target, ws.root() / ".swarm/hub.git/swarm-repack.lock");
  auto r = ws.swarm({"_repack-hub"});
  CHECK(r.exit == 2);
  CHECK_FALSE(fs::exists(target));
}

TEST_CASE("Trust_AFilesystemRefusalIsExit9NamingThePath") {
  // a workspace path under a file: the filesystem refuses, exit 9 naming it (not an internal error).
  SwarmWorkspace ws({.up = false});
  write_file(ws.root() / "plain-file", "x\n");
  auto r = ws.swarm({"up", "--workspace", (ws.root() / "plain-file/ws").string(), "--nats-url", ws.server()->url()});
  CHECK(r.exit == 9);
  CHECK(r.err.find("plain-file") != std::string::npos);
}
