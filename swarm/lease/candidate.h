// A command run on every candidate of an election (`swarm elect NAME --all`,
// adr/0047): it starts at once, leader or not, and is told when this
// candidate becomes leader (SIGUSR1) and when it stops being leader
// (SIGUSR2), while the candidate waits in line, leads, steps down when asked
// and waits again, for as long as the command runs.
// - Its environment: SWARM_LEASE (the election), SWARM_LEADER (1 when it
//   starts as leader, else 0), SWARM_FENCING_TOKEN_FILE (a file that holds
//   the current token and a newline while this candidate leads, and nothing
//   while it does not: written before SIGUSR1, emptied, or removed when it
//   cannot be, before SIGUSR2), and,
//   when it starts as leader, SWARM_FENCING_TOKEN.
// - A lease lost (a renewal refused, or none possible before the deadline)
//   is told at once, at the latest TTL/5 before anyone else can be granted
//   (the lock's deadline rule, adr/0011). A request to step down (after the
//   minimum term) is told, then the lease is kept that long again before it
//   is released: the command has TTL/5 (200 ms to 5 s) to stop acting as
//   leader before the next one is granted. It must not act as leader after
//   SIGUSR2; a frozen candidate cannot be told, which is what the token is
//   for (`elect --check`).
// - The command is never stopped by swarm: when it ends, the candidate
//   leaves the line, or releases the lease, and returns its status.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "swarm/base/child_process.h"
#include "swarm/lease/held_command.h"
#include "swarm/lease/lease.h"

namespace swarm {

struct CandidateCommand {
  std::vector<std::string> command;  // argv: the program and its arguments
  // What happens, for people (becoming leader, losing it, stepping down),
  // and a failure that is worked around (a release refused, a wait in line
  // that failed and is tried again). Called from other threads.
  std::function<void(const std::string&)> note;
  std::function<void(const std::string&)> warn;
  // The command started (its process), then ended (nullptr).
  std::function<void(ChildProcess*)> running;
};

// One time this candidate led: its token, and how it ended (resigned,
// lease_lost, or by_itself: the command ended while it led).
struct Term {
  std::uint64_t token = 0;
  HeldEnd end = HeldEnd::by_itself;
};

struct CandidateRun {
  int status = 0;  // the command's, as a shell reports it
  std::vector<Term> terms;
};

// Runs `candidate.command` on this candidate of election `name` until it
// ends (see the file comment). Throws when the command cannot start (having
// left the line or released the lease).
CandidateRun run_as_candidate(const LeaseStore& store, const std::string& name, const LeaseHolder& who,
                              std::chrono::milliseconds ttl, const CandidateCommand& candidate);

}  // namespace swarm
