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
  std::optional<ResignWatch> resign;
  std::thread resigner;
  std::atomic<bool> resigned{false};
  std::atomic<bool> command_ended{false};
  std::mutex handover_mu;
  std::string handover_to, handover_holder;  // the candidate it steps down in favour of
  // A leader with a minimum term steps down when asked only once it has led
  // that long (timed from its grant, as its deadline is); a lost lease still
  // stops it at once (the keeper's rule, above).
  const BootTime term_ends = lease.deadline - lease.record.ttl + lease.record.min_term;
  if (held.hear_resign)
    resign.emplace(store, lease.name, lease.token, [&](const LeaseRecord& request) {
      {
        std::lock_guard lock(handover_mu);
        handover_to = request.handover_to;
        handover_holder = request.handover_holder;
      }
      const auto held_for = term_ends - BootClock::now();
      if (held_for > std::chrono::milliseconds(0))
        say(held.note, "asked to step down as leader of " + lease.name + ": its minimum term ends in " +
                           format_duration(std::chrono::duration_cast<std::chrono::milliseconds>(held_for)) +
                           "; stopping " + program + " then");
      else
        say(held.note, "asked to step down as leader of " + lease.name + ": stopping " + program);
      resigner = std::thread([&] {
        while (!command_ended && BootClock::now() < term_ends) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        if (command_ended) return;  // it ended by itself first: no resignation
        resigned = true;
        stopper.stop_by(BootClock::now() + kResignGrace);
      });
    });
  const int status = child->wait();
  command_ended = true;
  stopper.finished();
  running.done();
  if (resign) resign->withdraw();
  resign.reset();
  if (resigner.joinable()) resigner.join();
  keeper.stop();
  if (!keeper.lost()) {
    try {
      stop_here_for_test(kLeaseStop, "release");
      std::string to, to_holder;
      {
        std::lock_guard lock(handover_mu);
        to = handover_to;
        to_holder = handover_holder;
      }
      if (!resigned) to.clear(), to_holder.clear();
      store.release(keeper.lease(), to, to_holder);
      stop_here_for_test(kLeaseStop, "released");
      if (resigned) store.journal().record(elect_resign_event(store.bucket_name(), keeper.lease(), to_holder));
    } catch (const Error& e) {
      say(held.warn, "could not release lease " + lease.name + " (it expires by itself): " + e.what());
    }
  }
  if (ended != nullptr)
    *ended = keeper.lost() ? HeldEnd::lease_lost : resigned ? HeldEnd::resigned : HeldEnd::by_itself;
  return status;
}

}  // namespace swarm
