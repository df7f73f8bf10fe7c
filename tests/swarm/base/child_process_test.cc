// The command run under a lease: its environment, its exit status as a shell
// reports it, signals to its whole process group, and a command that cannot
// run refused before anything is waited for.
#include "swarm/base/child_process.h"

#include <doctest/doctest.h>

#include <signal.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/expect.h"
#include "support/temp_dir.h"
#include "swarm/base/error.h"

using namespace swarm;
using namespace std::chrono_literals;
using testing::kind_of;

namespace {
std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}
}  // namespace

TEST_CASE("ChildProcess_GetsItsEnvironmentAndReturnsItsStatus") {
  testing::TempDir dir{"swarm-child"};
  const auto out = dir.path() / "out";
  auto child = ChildProcess::start({"/bin/sh", "-c", "echo \"$SWARM_LEASE $SWARM_FENCING_TOKEN\" > " + out.string() + "; exit 7"},
                                   {{"SWARM_LEASE", "job"}, {"SWARM_FENCING_TOKEN", "42"}});
  CHECK(child->wait() == 7);
  CHECK(child->exited());
  CHECK(read_all(out) == "job 42\n");
}

TEST_CASE("ChildProcess_ASignalReachesWhatTheCommandStartedToo") {
  // SIGTERM to the command's group ends the command and the sleep it started: the status is 128 + 15.
  auto child = ChildProcess::start({"/bin/sh", "-c", "sleep 30 & wait"}, {});
  std::this_thread::sleep_for(200ms);
  const auto start = std::chrono::steady_clock::now();
  child->signal(SIGTERM);
  CHECK(child->wait() == 128 + SIGTERM);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  child->signal(SIGKILL);  // reaped: no signal goes to a pid that may be another's now
}

TEST_CASE("ChildProcess_ACommandThatCannotRunIsBadInputBeforeItStarts") {
  testing::TempDir dir{"swarm-child"};
  const std::string plain = (dir.path() / "plain.txt").string();
  std::ofstream(plain) << "not a program\n";
  CHECK(kind_of([] { require_runnable("no-such-command-anywhere"); }) == Errc::bad_input);
  CHECK(kind_of([&] { require_runnable(plain); }) == Errc::bad_input);  // not executable
  CHECK_NOTHROW(require_runnable("sh"));
}
