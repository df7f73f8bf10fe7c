// A full filesystem, for the workspace and for the embedded server's store,
// on a small tmpfs of the test's own: exit 9 naming the path or a named
// JetStream condition, and nothing lost.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <fstream>

#include "e2e/swarm_fixture.h"
#include "support/eventually.h"

using namespace testing;
namespace fs = std::filesystem;

namespace {

// A tmpfs of `size` mounted over `at` for as long as this lives.
struct SmallDisk {
  fs::path at;
  bool mounted = false;
  SmallDisk(fs::path where, const std::string& size) : at(std::move(where)) {
    fs::create_directories(at);
    mounted = ::mount("tmpfs", at.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
  }
  ~SmallDisk() {
    if (mounted) ::umount2(at.c_str(), MNT_DETACH);
  }
  // Writes a file until the filesystem takes no more.
  void fill() const {
    std::ofstream out(at / "filler", std::ios::binary);
    const std::string block(64 * 1024, 'x');
    for (int i = 0; i < 100000 && out; ++i) out.write(block.data(), static_cast<std::streamsize>(block.size()));
  }
  void free_space() const { fs::remove(at / "filler"); }
};

}  // namespace

TEST_CASE("DiskFull_AFullWorkspaceIsExit9AndNothingIsLost") {
  // commit, join and close on a workspace whose filesystem is full: exit 9 naming the path, no record left
  // by the join, and the uncommitted file still where it was.
  if (::geteuid() != 0) {
    MESSAGE("skipped: mounting a small tmpfs needs root");
    return;
  }
  SwarmWorkspace ws({.up = false});
  SmallDisk disk(ws.root(), "4m");
  REQUIRE(disk.mounted);
  REQUIRE(ws.git({"init", "-q"}).exit == 0);
  REQUIRE(ws.git({"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "i"}).exit == 0);
  REQUIRE(ws.swarm({"up", "--nats-url", ws.server()->url()}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-1"}).exit == 0);
  write_file(ws.worktree("a") / "work.txt", std::string(100000, 'w'));
  disk.fill();

  auto commit = ws.swarm({"commit", "--slot", "a", "-m", "work"});
  CHECK(commit.exit == 9);
  CHECK(commit.err.find("No space left on device") != std::string::npos);
  auto join = ws.swarm({"join", "--slot", "b", "--task", "T-2"});
  CHECK(join.exit == 9);
  CHECK(join.err.find(ws.root().string()) != std::string::npos);
  CHECK(ws.swarm({"status", "--slot", "b"}).exit == 4);  // the join was undone
  auto close = ws.swarm({"close", "--slot", "a", "--result", "fail"});
  CHECK(close.exit == 9);
  CHECK(close.err.find("nothing changed") != std::string::npos);
  CHECK(ws.swarm({"status", "--slot", "a"}).exit == 0);  // still the session's
  CHECK(read_file(ws.worktree("a") / "work.txt") == std::string(100000, 'w'));

  disk.free_space();
  auto retry = ws.swarm({"commit", "--slot", "a", "-m", "work"});
  CHECK_MESSAGE(retry.exit == 0, retry.err);
  CHECK(ws.swarm({"close", "--slot", "a", "--result", "fail"}).exit == 0);
}

TEST_CASE("DiskFull_AFullStoreIsNamedAndUpBringsTheServerBack") {
  // the embedded server's store fills up: verbs say so (exit 9 while its JetStream refuses writes for want of
  // room, 7 once it stopped; naming the store and `swarm up`), doctor too; once space is back `swarm up`
  // restarts the server on its data and the session is still there.
  if (::geteuid() != 0) {
    MESSAGE("skipped: mounting a small tmpfs needs root");
    return;
  }
  SwarmWorkspace ws({.embedded = true, .up = false});
  SmallDisk disk(ws.root(), "8m");
  REQUIRE(disk.mounted);
  struct Down {  // the server stops before its disk goes, however the test ends
    SwarmWorkspace& ws;
    ~Down() { ws.swarm({"down"}); }
  } down{ws};
  REQUIRE(ws.swarm({"up"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-1"}).exit == 0);
  disk.fill();
  RunResult failed;
  for (int i = 0; i < 100; ++i) {
    failed = ws.swarm({"--timeout", "2s", "renew", "--slot", "a"});
    if (failed.exit != 0) break;
  }
  CHECK((failed.exit == 9 || failed.exit == 7));
  CHECK(failed.err.find("full filesystem") != std::string::npos);
  CHECK(failed.err.find("swarm up") != std::string::npos);
  auto doctor = ws.swarm({"--timeout", "2s", "doctor"});
  CHECK(doctor.exit == 8);
  CHECK(doctor.out.find("full filesystem") != std::string::npos);

  disk.free_space();
  auto up = ws.swarm({"up"});
  CHECK_MESSAGE(up.exit == 0, up.err);
  CHECK(up.err.find("did not answer") != std::string::npos);
  CHECK(ws.swarm({"renew", "--slot", "a"}).exit == 0);
}

TEST_CASE("DiskFull_UpOnAStoreTooSmallForTheJournalIsExit9AndMakesNothing") {
  // up with its embedded server's store on a 1 MiB disk: the journal (at least 1 MiB, reserved whole) has no
  // room: exit 9 naming the room it needs, --events-max-bytes and the store's path; no config.json, no bucket,
  // no server left running (it used to be exit 1, "basic_string: construction from null is not valid").
  if (::geteuid() != 0) {
    MESSAGE("skipped: mounting a small tmpfs needs root");
    return;
  }
  SwarmWorkspace ws({.embedded = true, .up = false});
  SmallDisk disk(ws.root(), "1m");
  REQUIRE(disk.mounted);
  auto up = ws.swarm({"up"});
  CHECK(up.exit == 9);
  CHECK(up.err.find("no room for the journal") != std::string::npos);
  CHECK(up.err.find("1 MiB") != std::string::npos);
  CHECK(up.err.find("--events-max-bytes") != std::string::npos);
  CHECK(up.err.find((ws.root() / ".swarm/nats").string()) != std::string::npos);
  CHECK_FALSE(fs::exists(ws.root() / ".swarm/config.json"));
  CHECK_FALSE(fs::exists(ws.root() / ".swarm/hub.git"));
  std::ifstream pid_file(ws.root() / ".swarm/nats/nats.pid");
  long pid = 0;
  // The server this up started is stopped: gone, or a zombie its new parent has yet to reap (bounded wait).
  if (pid_file >> pid)
    CHECK(eventually([pid] {
      const char state = process_state(static_cast<pid_t>(pid));
      return state == '\0' || state == 'Z';
    }, std::chrono::seconds(5)));
  auto status = ws.swarm({"status"});
  CHECK(status.exit == 6);  // no workspace was made
}

TEST_CASE("DiskFull_EveryWriteToAFullStoreIsExit9") {
  // the embedded server's JetStream has taken all the room it may (3/4 of what its filesystem had free): every
  // verb that writes is exit 9, saying the NATS server's store is full and where the embedded one keeps it.
  if (::geteuid() != 0) {
    MESSAGE("skipped: mounting a small tmpfs needs root");
    return;
  }
  SwarmWorkspace ws({.embedded = true, .up = false});
  SmallDisk disk(ws.root(), "16m");
  REQUIRE(disk.mounted);
  struct Down {
    SwarmWorkspace& ws;
    ~Down() { ws.swarm({"down"}); }
  } down{ws};
  REQUIRE(ws.swarm({"up"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-1"}).exit == 0);
  const fs::path body = ws.home() / "body";
  write_file(body, std::string(60000, 'b'));
  RunResult filled;
  for (int i = 0; i < 1000; ++i) {
    filled = ws.swarm({"--timeout", "3s", "task", "add", "filler " + std::to_string(i), "--body-file", body.string()});
    if (filled.exit != 0) break;
  }
  const std::string nats_dir = (ws.root() / ".swarm/nats").string();
  auto is_full = [&](const RunResult& r) {
    CAPTURE(r.err);
    CHECK(r.exit == 9);
    CHECK(r.err.find("store is full") != std::string::npos);
    CHECK(r.err.find(nats_dir) != std::string::npos);
  };
  is_full(filled);
  is_full(ws.swarm({"--timeout", "3s", "task", "add", "one more"}));
  is_full(ws.swarm({"--timeout", "3s", "send", "--from", "me", "--to", "a", "hello"}));
  is_full(ws.swarm({"--timeout", "3s", "join", "--slot", "b", "--task", "T-b"}));
  CHECK(ws.swarm({"status", "--slot", "b"}).exit == 4);  // the join was undone
  is_full(ws.swarm({"--timeout", "3s", "renew", "--slot", "a"}));
  is_full(ws.swarm({"--timeout", "3s", "hold", "--slot", "a", "src/x"}));
  is_full(ws.swarm({"--timeout", "3s", "lock", "l", "--", "true"}));
  is_full(ws.swarm({"--timeout", "3s", "lease", "acquire", "l2"}));
}
