// The lock files that make a slot's folder one process's at a time: taken,
// refused while held, waited for (saying who holds it), and never opened
// through a link planted in its place.
#include "swarm/base/file_lock.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <optional>
#include <thread>

#include "support/expect.h"
#include "support/temp_dir.h"
#include "swarm/base/error.h"
#include "swarm/base/safe_dir.h"

using namespace swarm;
using namespace std::chrono_literals;
using testing::kind_of;

TEST_CASE("FileLock_OneHolderAtATimeAndItsNameIsKnown") {
  testing::TempDir dir{"swarm-lock"};
  SafeDir locks = SafeDir::make(dir.path() / "locks", 0700);
  std::optional<FileLock> first = FileLock::try_acquire(locks, "slot.a", "close of slot a");
  REQUIRE(first);
  CHECK(FileLock::holder_of(locks, "slot.a").find("close of slot a") != std::string::npos);
  CHECK_FALSE(FileLock::try_acquire(locks, "slot.a", "join of slot a"));  // held
  CHECK(FileLock::try_acquire(locks, "slot.b", "join of slot b"));        // another name is another lock
  first.reset();
  CHECK(FileLock::try_acquire(locks, "slot.a", "join of slot a"));        // closing the descriptor let it go
}

TEST_CASE("FileLock_AWaitSaysWhoHoldsItAndEndsWhenItIsLetGo") {
  testing::TempDir dir{"swarm-lock"};
  SafeDir locks = SafeDir::make(dir.path() / "locks", 0700);
  std::optional<FileLock> held = FileLock::try_acquire(locks, "slot.a", "commit of slot a");
  REQUIRE(held);
  std::string told;
  std::thread letting_go([&] {
    std::this_thread::sleep_for(200ms);
    held.reset();
  });
  const auto start = std::chrono::steady_clock::now();
  auto got = FileLock::acquire(locks, "slot.a", "close of slot a", 5s, [&](const std::string& holder) { told = holder; });
  letting_go.join();
  CHECK(got);
  CHECK(told.find("commit of slot a") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < 4s);
  // A wait that runs out is nullopt, not an error.
  CHECK_FALSE(FileLock::acquire(locks, "slot.a", "doctor --fix", 100ms));
}

TEST_CASE("FileLock_ALinkInPlaceOfTheLockFileIsRefusedAndItsTargetUntouched") {
  testing::TempDir dir{"swarm-lock"};
  SafeDir locks = SafeDir::make(dir.path() / "locks", 0700);
  const auto victim = dir.path() / "victim.txt";
  { std::FILE* f = std::fopen(victim.c_str(), "w"); std::fputs("keep me\n", f); std::fclose(f); }
  std::filesystem::create_symlink(victim, dir.path() / "locks" / "slot.x");
  CHECK(kind_of([&] { FileLock::try_acquire(locks, "slot.x", "close of slot x"); }) == Errc::bad_input);
  CHECK(std::filesystem::file_size(victim) == 8);
}
