// A crash of the server's machine, through the real binary: the embedded
// nats-server is killed and restarted on an image of its store as a power
// cut leaves it (the files as they were at the last sync, before writes it
// had acknowledged), and no fencing token or session token is handed out
// again. nats-server 2.9 syncs about once a minute, so such an image is
// what a crash leaves; 2.10 and later sync every write (the workspace's
// server is started so), and the watermark holds on both.
#include <doctest/doctest.h>

#include <signal.h>

#include <filesystem>
#include <thread>

#include "e2e/swarm_fixture.h"
#include "support/json_fields.h"

using namespace testing;
namespace fs = std::filesystem;

namespace {

std::uint64_t token_of(const RunResult& r) {
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  return std::stoull(r.out);
}

// The embedded server is killed as a power cut would stop it, and its store
// put back to `image` (the files as they were synced).
void crash_back_to(const SwarmWorkspace& ws, const fs::path& image) {
  const fs::path nats = ws.root() / ".swarm/nats";
  const pid_t pid = static_cast<pid_t>(std::stol(read_file(nats / "nats.pid")));
  REQUIRE(::kill(pid, SIGKILL) == 0);
  for (int i = 0; i < 200 && ::kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  fs::remove_all(nats / "data");
  fs::copy(image, nats / "data", fs::copy_options::recursive);
}

}  // namespace

// Tokens granted after the last sync are lost with the crash; the next
// grants get tokens above every one handed out, and an agent replaced
// since cannot act on its successor's session with its old token.
TEST_CASE("Crash_NoTokenIsHandedOutTwiceAfterTheServersMachineCrashes") {
  SwarmWorkspace ws({.embedded = true});
  REQUIRE(ws.swarm({"lease", "acquire", "warm", "--ttl", "1h"}).exit == 0);
  // Stopped cleanly, the store is all on disk: the image a crash goes back to.
  REQUIRE(ws.swarm({"down"}).exit == 0);
  const fs::path image = ws.home() / "synced-store";
  fs::copy(ws.root() / ".swarm/nats/data", image, fs::copy_options::recursive);
  REQUIRE(ws.swarm({"up"}).exit == 0);

  // Acknowledged, handed out, then lost.
  const std::uint64_t first = token_of(ws.swarm({"lease", "acquire", "fenced", "--holder", "holder-1", "--ttl", "1h"}));
  auto joined = ws.swarm({"join", "--slot", "s", "--task", "T-1", "--json"});
  REQUIRE_MESSAGE(joined.exit == 0, joined.err);
  const auto session = static_cast<std::uint64_t>(number(json_of(joined), "session_token"));
  for (int i = 0; i < 5; ++i) REQUIRE(ws.swarm({"renew", "--slot", "s"}).exit == 0);

  crash_back_to(ws, image);
  auto up = ws.swarm({"up"});
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  // The crash took them back: else this test would show nothing.
  CHECK(ws.swarm({"lease", "show", "fenced"}).exit == 4);
  CHECK(ws.swarm({"status", "--slot", "s"}).exit == 4);

  const std::uint64_t second =
      token_of(ws.swarm({"lease", "acquire", "fenced", "--holder", "holder-2", "--ttl", "1h"}));
  CHECK(second > first);
  auto rejoined = ws.swarm({"join", "--slot", "s", "--task", "T-1", "--json"}, kHostB);
  REQUIRE_MESSAGE(rejoined.exit == 0, rejoined.err);
  const auto successor = static_cast<std::uint64_t>(number(json_of(rejoined), "session_token"));
  CHECK(successor > session);
  // Agent 1's old token names no session now: it acts on nothing.
  auto stale = ws.swarm({"renew", "--slot", "s", "--session", std::to_string(session)}, kHostB);
  CHECK(stale.exit == 3);
  // Doctor says what the workspace's server guarantees.
  auto doctor = ws.swarm({"doctor", "--json"});
  CHECK(doctor.out.find("\"durability\"") != std::string::npos);
}

// The watermark survives a second crash before anything was synced again,
// and a workspace whose token file is gone still starts (tokens then grow
// from the bucket's own revisions).
TEST_CASE("Crash_TwoCrashesInARowStillHandOutNoTokenTwice") {
  SwarmWorkspace ws({.embedded = true});
  REQUIRE(ws.swarm({"down"}).exit == 0);
  const fs::path image = ws.home() / "synced-store";
  fs::copy(ws.root() / ".swarm/nats/data", image, fs::copy_options::recursive);
  REQUIRE(ws.swarm({"up"}).exit == 0);
  std::uint64_t highest = 0;
  for (int crash = 0; crash < 2; ++crash) {
    CAPTURE(crash);
    for (int i = 0; i < 3; ++i) {
      const std::uint64_t t = token_of(ws.swarm({"lease", "acquire", "l" + std::to_string(i), "--ttl", "1h"}));
      CHECK(t > highest);
      highest = std::max(highest, t);
    }
    crash_back_to(ws, image);
    auto up = ws.swarm({"up"});
    REQUIRE_MESSAGE(up.exit == 0, up.err);
  }
  const std::uint64_t after = token_of(ws.swarm({"lease", "acquire", "l0", "--ttl", "1h"}));
  CHECK(after > highest);
}

// After a restart the first grant moves the session bucket past the
// watermark with a key of swarm's own (_fence): no session, so neither
// status nor doctor shows it.
TEST_CASE("Crash_TheWatermarksFenceIsNoSession") {
  SwarmWorkspace ws({.embedded = true});
  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-1"}).exit == 0);
  REQUIRE(ws.swarm({"down"}).exit == 0);
  REQUIRE(ws.swarm({"up"}).exit == 0);
  auto joined = ws.swarm({"join", "--slot", "b", "--task", "T-2"});
  REQUIRE_MESSAGE(joined.exit == 0, joined.err);
  auto status = ws.swarm({"status", "--json"});
  REQUIRE_MESSAGE(status.exit == 0, status.err);
  CHECK(status.out.find("\"slot\":\"a\"") != std::string::npos);
  CHECK(status.out.find("\"slot\":\"b\"") != std::string::npos);
  CHECK(status.out.find("_fence") == std::string::npos);
  auto doctor = ws.swarm({"doctor"});
  CHECK_MESSAGE(doctor.exit == 0, doctor.out << doctor.err);
  CHECK(doctor.out.find("_fence") == std::string::npos);
}
