// Running a command while a lease is held, as `swarm lock` and `swarm elect`
// do, for any C++ program: the command gets SWARM_LEASE and
// SWARM_FENCING_TOKEN; a keeper renews the lease every TTL/3; when the lease
// is lost the command is stopped (SIGTERM, then SIGKILL before the deadline),
// and with `hear_resign` a request to step down stops it too; the lease is
// released when the command ends (adr/0013).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "swarm/base/child_process.h"
#include "swarm/lease/lease.h"

namespace swarm {

// How long a leader asked to step down gives its command to end after
// SIGTERM before SIGKILL (the lease stays renewed meanwhile).
inline constexpr std::chrono::seconds kResignGrace{10};

struct HeldCommand {
  std::vector<std::string> command;  // argv: the program and its arguments
  bool hear_resign = false;          // elect: a request to step down stops the command
  // Set in the command's environment besides SWARM_LEASE and SWARM_FENCING_TOKEN (SWARM_PERMIT).
  std::vector<std::pair<std::string, std::string>> env;
  // What happens, for people: a lost lease, a request to step down (`note`);
  // a release that failed (`warn`). Called from other threads.
  std::function<void(const std::string&)> note;
  std::function<void(const std::string&)> warn;
  // The command started (its process), then ended (nullptr): the caller may
  // route its own signals to it meanwhile.
  std::function<void(ChildProcess*)> running;
};

// Runs `held.command` holding `lease` and returns its exit status (128 +
// the signal that ended it). A grant that ran out before the command could
// start runs nothing and throws conflict; a command that cannot start
// throws. Either way the lease is released.
// How the command ended, as run_holding saw it.
enum class HeldEnd {
  by_itself,   // it exited (or was stopped from outside swarm's lease handling)
  lease_lost,  // swarm stopped it: the lease was lost
  resigned,    // swarm stopped it: the leader was asked to step down
};
std::string_view to_string(HeldEnd end);

int run_holding(const LeaseStore& store, Lease lease, const HeldCommand& held, HeldEnd* ended = nullptr);

// What run_holding and run_as_candidate (candidate.h) share.
// Releases a lease nothing runs under (any more); one that cannot be
// released expires by itself.
void release_quietly(const LeaseStore& store, const Lease& lease);
// A grant this process sat on too long (frozen, starved) is no grant: past
// the moment its holder must give up (TTL/5 before its deadline), another
// may hold the lease by now.
bool grant_ran_out(const Lease& lease);
// Tells `running` the command runs, and, on every way out (a throw
// included), that it does no longer: no signal is forwarded to a process
// object that is gone.
class RunningNotice {
 public:
  RunningNotice(const std::function<void(ChildProcess*)>& running, ChildProcess& child) : running_(running) {
    if (running_) running_(&child);
  }
  ~RunningNotice() { done(); }
  void done() {
    if (running_ && !done_) running_(nullptr);
    done_ = true;
  }
  RunningNotice(const RunningNotice&) = delete;
  RunningNotice& operator=(const RunningNotice&) = delete;

 private:
  const std::function<void(ChildProcess*)>& running_;
  bool done_ = false;
};

}  // namespace swarm
