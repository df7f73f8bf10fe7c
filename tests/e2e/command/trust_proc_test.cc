// What a command swarm runs (a land check, an AGENT) can read of the swarm
// processes above it through /proc, as the same user: nothing of their
// credentials (their environment block holds none once read) and, as a user
// other than root (whom nothing stops), neither their environment nor their
// working folder at all (they are not dumpable).
#include <doctest/doctest.h>

#include <unistd.h>

#include "e2e/command/land_support.h"
#include "e2e/swarm_fixture.h"

using namespace testing;
using namespace testing::land;
namespace fs = std::filesystem;

namespace {

// A command that walks up from its parent while the parent is swarm or its
// guard, writing to `seen` each one's name, and its environment and working
// folder where /proc lets it read them.
std::vector<std::string> ancestor_reader(const fs::path& seen) {
  return {"/bin/sh", "-c",
          "p=$PPID; while [ \"$p\" -gt 1 ]; do "
          "  comm=$(cat /proc/$p/comm 2>/dev/null); "
          "  case \"$comm\" in swarm|swarm-guard) ;; *) break ;; esac; "
          "  echo \"ancestor $comm\"; "
          "  if env=$(tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null); then echo \"environ of $comm:\"; "
          "    echo \"$env\"; fi; "
          "  if cwd=$(readlink /proc/$p/cwd 2>/dev/null); then echo \"cwd of $comm: $cwd\"; fi; "
          "  p=$(cut -d' ' -f4 /proc/$p/stat); "
          "done > " + seen.string() + "; true"};
}

std::vector<std::string> with_command(std::vector<std::string> args, const std::vector<std::string>& command) {
  args.push_back("--");
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

// The lander's credentials, as a user gives them.
std::map<std::string, std::string> with_credentials() {
  auto env = kHostA;
  env["NATS_USER"] = "lander";
  env["NATS_PASSWORD"] = "nats-secret-value";
  env["SWARM_HUB_USERNAME"] = "hub-user";
  env["SWARM_HUB_PASSWORD"] = "hub-secret-value";
  return env;
}

// What `seen` says: both the guard and swarm were reached, no secret was read
// and, where `unreadable`, neither an environment nor a working folder.
void check_seen(const fs::path& seen, bool unreadable) {
  const std::string text = read_file(seen);
  CAPTURE(text);
  CHECK(text.find("ancestor swarm-guard\n") != std::string::npos);
  CHECK(text.find("ancestor swarm\n") != std::string::npos);
  CHECK(text.find("secret-value") == std::string::npos);
  CHECK(text.find("\nNATS_") == std::string::npos);  // (SWARM_NATS_LEG is none of them)
  CHECK(text.find("\nSWARM_HUB_") == std::string::npos);
  if (!unreadable) return;
  CHECK(text.find("environ of") == std::string::npos);
  CHECK(text.find("cwd of") == std::string::npos);
}

}  // namespace

// A land check reads its guard's and its lander's /proc as the lander's
// user: no credential; and as a user other than root, nothing of either.
// Run as root the test also lands as nobody (setpriv), for that half.
TEST_CASE("TrustProc_ALandCheckReadsNoSecretOfTheLanderOrItsGuard") {
  SwarmWorkspace ws;
  finish(ws, "s", "s.txt", "s\n");
  finish(ws, "t", "t.txt", "t\n");
  const fs::path seen = ws.home() / "seen";
  auto land = ws.swarm(with_command({"land", "--slot", "s"}, ancestor_reader(seen)), with_credentials());
  REQUIRE_MESSAGE(land.exit == 0, land.err);
  check_seen(seen, ::geteuid() != 0);

  if (::geteuid() != 0) return;  // the other user's half needs root to become one
  const fs::path seen_by_nobody = ws.home() / "seen-by-nobody";
  REQUIRE(run({{"/bin/chown", "-R", "65534:65534", ws.home().string()}}).exit == 0);
  Command as_nobody = ws.command(with_command({"land", "--slot", "t"}, ancestor_reader(seen_by_nobody)),
                                 with_credentials());
  as_nobody.args.insert(as_nobody.args.begin(),
                        {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
  auto nobody = run(as_nobody);
  REQUIRE_MESSAGE(nobody.exit == 0, nobody.err);
  check_seen(seen_by_nobody, true);
}

// An AGENT under `swarm run` reads nothing of run's credentials through
// /proc either (it gets what run passes it, in its own environment).
TEST_CASE("TrustProc_AnAgentReadsNoSecretOfItsRun") {
  SwarmWorkspace ws;
  const fs::path seen = ws.home() / "seen";
  // Whatever run makes of an AGENT that commits nothing: what it read is the point.
  auto agent = ws.swarm(with_command({"run", "--slot", "a", "--task", "T-1"}, ancestor_reader(seen)),
                        with_credentials());
  REQUIRE_MESSAGE(fs::exists(seen), agent.err);
  check_seen(seen, ::geteuid() != 0);
}
