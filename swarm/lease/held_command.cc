#include "swarm/lease/held_command.h"

#include <signal.h>

#include <memory>
#include <optional>

#include "swarm/base/boot_clock.h"
#include "swarm/base/error.h"
#include "swarm/base/test_seam.h"
#include "swarm/lease/election.h"
#include "swarm/lease/events.h"
#include "swarm/lease/lease_keeper.h"

namespace swarm {

namespace {

void say(const std::function<void(const std::string&)>& to, const std::string& what) {
  if (to) to(what);
}

// Starts the command, unless the grant ran out meanwhile: a grant this
// process sat on too long (frozen, starved) is no grant, another may hold
// the lease by now.
std::unique_ptr<ChildProcess> start(const LeaseStore& store, const Lease& lease, const HeldCommand& held) {
  const std::string token = std::to_string(lease.token);
  try {
    if (grant_ran_out(lease))
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

}  // namespace

void release_quietly(const LeaseStore& store, const Lease& lease) {
  try {
    store.release(lease);
  } catch (const Error&) {
  }
}

bool grant_ran_out(const Lease& lease) { return BootClock::now() >= lease.deadline - give_up_lead(lease.record.ttl); }

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
  RunningNotice running(held.running, *child);
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
