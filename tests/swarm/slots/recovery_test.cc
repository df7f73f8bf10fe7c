// Salvage of a worktree's history into the hub, against a real hub and clone.
#include "swarm/slots/recovery.h"

#include <doctest/doctest.h>

#include "support/temp_dir.h"
#include "swarm/git/hub.h"
#include "swarm/git/worktree.h"

using namespace swarm;

TEST_CASE("PreserveUnpushed_TakesTheNextFreePrefixWhenTheHubHasIt") {
  // two salvages that pick the same prefix (the same millisecond) never collide: the second gets prefix-2.
  testing::TempDir dir{"swarm-recovery"};
  Hub hub = Hub::create(dir / "hub.git", dir / "no-source");
  Worktree wt = Worktree::create(hub, dir / "wt", "s");
  const CommitAuthor author{"t", "t@t"};
  testing::write_file(wt.path() / "a.txt", "a\n");
  REQUIRE(wt.commit("a", {}, author));
  auto first = wt.preserve_unpushed("refs/recovery/s-X");
  REQUIRE(first);
  CHECK(first->prefix == "refs/recovery/s-X");
  CHECK(first->refs == std::vector<std::string>{"refs/recovery/s-X/heads/swarm/s"});
  // Nothing new: the hub has it all now.
  CHECK_FALSE(wt.preserve_unpushed("refs/recovery/s-X"));
  testing::write_file(wt.path() / "b.txt", "b\n");
  REQUIRE(wt.commit("b", {}, author));
  auto second = wt.preserve_unpushed("refs/recovery/s-X");
  REQUIRE(second);
  CHECK(second->prefix == "refs/recovery/s-X-2");
  CHECK(hub.branch_tip("swarm/s") == std::nullopt);  // only recovery refs were written
}

TEST_CASE("RecoveryName_HasMillisecondsForUniqueness") {
  // salvages within one second get different names.
  auto t = std::chrono::system_clock::time_point(std::chrono::milliseconds(1'700'000'000'123));
  CHECK(recovery_name("render", t) == "render-20231114T221320.123Z");
}
