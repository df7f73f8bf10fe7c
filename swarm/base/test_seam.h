// A seam for the fault tests: with $VARIABLE naming `stage` (or a list of
// stages separated by commas), the process
// says so on stderr ("swarm: test stop at STAGE") and stops itself
// (SIGSTOP) right there, so that a test can SIGKILL it at exactly that
// point. Without the variable it costs one getenv.
#pragma once

namespace swarm {

// $SWARM_TEST_LAND_STOP: the steps of a land (landing/).
inline constexpr const char* kLandStop = "SWARM_TEST_LAND_STOP";
// $SWARM_TEST_LEASE_STOP: the steps of a hold (a lock's, a permit's): gate,
// granted, renew, renewed, release, released; stepping-down (elect --all:
// SIGUSR2 sent, the lease not released yet); state-checked (elect state
// put: the leader checked, nothing written yet).
inline constexpr const char* kLeaseStop = "SWARM_TEST_LEASE_STOP";

// $SWARM_TEST_JOIN_STOP: the steps of a join's port block: ports-listed
// (the blocks read, none granted yet), ports-granted (granted, not checked),
// task-leased (a queued task's lease taken, its record not claimed yet).
inline constexpr const char* kJoinStop = "SWARM_TEST_JOIN_STOP";

// $SWARM_TEST_RUN_STOP: the steps of `swarm run`: joined (the slot taken,
// the agent not started), renew (a keeper's renewal about to be sent).
inline constexpr const char* kRunStop = "SWARM_TEST_RUN_STOP";

// $SWARM_TEST_BUS_STOP: the steps of a send: blob-named (a file up to
// 8 MiB hashed, nothing sent yet), blob-read (a blob's bytes all handed to
// the store, its description not written, no message sent).
inline constexpr const char* kBusStop = "SWARM_TEST_BUS_STOP";

void stop_here_for_test(const char* variable, const char* stage);

}  // namespace swarm
