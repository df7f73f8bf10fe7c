// The names landing reads (swarm/landing/landing.h): a lane's slot, a
// parked task's branch, the lease a land of a branch waits for, the branch
// names git takes, and a check's refusal as the journal keeps it.
#include "swarm/landing/landing.h"

#include <doctest/doctest.h>

#include "swarm/base/error.h"

using namespace swarm;

TEST_CASE("Lanes_ASlotsOwnBranchAndAParkedTasksBelongToTheSlot") {
  CHECK(lane_slot("render") == "render");
  CHECK_FALSE(is_parked_lane("render"));
  CHECK(lane_slot("render.T-4") == "render");
  CHECK(is_parked_lane("render.T-4"));
  // Neither shape (no slot name before the dot, or nothing after it): its
  // own name, which the verbs that need a slot refuse.
  CHECK(lane_slot("Bad Slot.T-1") == "Bad Slot.T-1");
  CHECK_FALSE(is_parked_lane("render."));
}

TEST_CASE("Lanes_TheLandLeaseOfABranchAndTheBranchNamesGitTakes") {
  CHECK(land_lease_name("main") == "land.main");
  CHECK(land_lease_name("release/1.2") == "land.release.1_2");
  CHECK(land_lease_name("-x/.y") == "land.0-x.0_y");
  CHECK_NOTHROW(require_branch_name("release/1.2", "--onto"));
  for (const char* bad : {"", "a..b", "-x", "a b", "x.lock", "a//b", "/a", "a/", "a~b", "a^b", "a:b", "@", "\x1b[2J",
                          "HEAD", "refs/heads/main", "swarm/render"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(require_branch_name(bad, "--onto"), doctest::Contains("--onto"), Error);
  }
}
