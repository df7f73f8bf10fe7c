#include "swarm/lease/held_command.h"

#include <signal.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "swarm/base/boot_clock.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/test_seam.h"
#include "swarm/lease/election.h"
#include "swarm/lease/events.h"
#include "swarm/lease/lease_keeper.h"

namespace swarm {

namespace {

using namespace std::chrono_literals;

void say(const std::function<void(const std::string&)>& to, const std::string& what) {
  if (to) to(what);
}

// Releases a lease nothing ran under, or nothing runs under any more; one
// that cannot be released expires by itself.
void release_quietly(const LeaseStore& store, const Lease& lease) {
  try {
    store.release(lease);
  } catch (const Error&) {
  }
}

// Starts the command, unless the grant ran out meanwhile: a grant this
// process sat on too long (frozen, starved) is no grant, another may hold
// the lease by now.
std::unique_ptr<ChildProcess> start(const LeaseStore& store, const Lease& lease, const HeldCommand& held) {
  const std::string token = std::to_string(lease.token);
  try {
    if (BootClock::now() >= lease.deadline - give_up_lead(lease.record.ttl))
      throw Error(Errc::conflict,
                  "lease " + lease.name + " (token " + token + ") ran out before its command could start; nothing was run");
    std::vector<std::pair<std::string, std::string>> env = {{"SWARM_LEASE", lease.name}, {"SWARM_FENCING_TOKEN", token}};
    env.insert(env.end(), held.env.begin(), held.env.end());
    return ChildProcess::start(held.command, env);
  } catch (...) {
    release_quietly(store, lease);  // nothing ran under it
    throw;
  }
}

// Tells the caller the command runs, and, on every way out (a throw
// included), that it does no longer: no signal is forwarded to a process
// object that is gone.
class Running {
 public:
  Running(const HeldCommand& held, ChildProcess& child) : held_(held) {
    if (held_.running) held_.running(&child);
  }
  ~Running() { done(); }
  void done() {
    if (held_.running && !done_) held_.running(nullptr);
    done_ = true;
  }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;

 private:
  const HeldCommand& held_;
  bool done_ = false;
};

}  // namespace

std::string_view to_string(HeldEnd end) {
  switch (end) {
    case HeldEnd::by_itself: return "exited";
    case HeldEnd::lease_lost: return "lease_lost";
    case HeldEnd::resigned: return "resigned";
  }
  return "exited";
}

int run_holding(const LeaseStore& store, Lease lease, const HeldCommand& held, HeldEnd* ended) {
  std::unique_ptr<ChildProcess> child = start(store, lease, held);
  Running running(held, *child);
  const std::string& program = held.command.front();
  const auto ttl = lease.record.ttl;
  ChildStopper stopper(*child);
  LeaseKeeper keeper(store, lease, [&](const std::string& why, BootTime deadline) {
    say(held.note, "lease " + lease.name + " was lost (" + why + "): stopping " + program + " before its deadline");
    stopper.stop_by(deadline - kill_lead(ttl));
  });
  std::optional<StepDownWatch> step_down;
  if (held.hear_resign)
    step_down.emplace(store, lease, "stopping " + program, held.note,
                      [&] { stopper.stop_by(BootClock::now() + kResignGrace); });
  const int status = child->wait();
  if (step_down) step_down->cancel();
  stopper.finished();
  running.done();
  const bool resigned = step_down && step_down->stepped_down();
  std::pair<std::string, std::string> handover;
  if (resigned) handover = step_down->handover();
  if (step_down) step_down->withdraw();
  step_down.reset();
  keeper.stop();
  if (!keeper.lost()) {
    try {
      stop_here_for_test(kLeaseStop, "release");
      store.release(keeper.lease(), handover.first, handover.second);
      stop_here_for_test(kLeaseStop, "released");
      if (resigned) store.journal().record(elect_resign_event(store.bucket_name(), keeper.lease(), handover.second));
    } catch (const Error& e) {
      say(held.warn, "could not release lease " + lease.name + " (it expires by itself): " + e.what());
    }
  }
  if (ended != nullptr)
    *ended = keeper.lost() ? HeldEnd::lease_lost : resigned ? HeldEnd::resigned : HeldEnd::by_itself;
  return status;
}

}  // namespace swarm
