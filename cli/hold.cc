#include "cli/hold.h"

#include <signal.h>

#include <condition_variable>
#include <iostream>

#include "swarm/boot_clock.h"
#include "swarm/duration.h"
#include "swarm/error.h"
#include "swarm/lease/election.h"
#include "swarm/lease/lease.h"
#include "swarm/lease/lease_keeper.h"
#include "swarm/names.h"

namespace cli {

namespace {

using namespace std::chrono_literals;

// How long a leader asked to step down gives its command to end after
// SIGTERM before SIGKILL (the lease stays renewed meanwhile).
constexpr std::chrono::seconds kResignGrace{10};

// Sent by the router to its own thread to stop it at once (a realtime
// signal nothing else here uses).
int wake_signal() { return SIGRTMIN + 3; }

sigset_t routed_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, wake_signal());
  return set;
}

}  // namespace

CLI::Validator lease_name_validator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        try {
          swarm::require_lease_name(value);
        } catch (const std::exception& e) {
          return e.what();
        }
        return {};
      },
      "", "NAME");
}

std::chrono::milliseconds lease_ttl_option(const std::string& text) {
  auto ttl = swarm::parse_duration(text);
  swarm::require_lease_ttl(ttl, "--ttl " + text);
  return ttl;
}

std::vector<std::string> command_after_dashes(const std::vector<std::string>& command, const char* verb) {
  if (command.empty())
    throw swarm::Error(swarm::Errc::bad_input,
                       std::string("no command to run: give it after --, e.g. swarm ") + verb + " NAME -- ./run.sh");
  return command;
}

std::optional<swarm::Lease> wait_in_line(const Context& ctx, swarm::Mutex& mutex, const std::string& name,
                                         std::optional<std::chrono::milliseconds> wait, SignalRouter& signals) {
  signals.on_signal([&](int) { mutex.cancel(); });
  try {
    return mutex.lock(wait);
  } catch (const swarm::Cancelled&) {
    ctx.out().note("stopped waiting for lease " + name + " (a signal); left the line");
    return std::nullopt;
  }
}

CLI::Validator holder_validator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        bool printable = !value.empty() && value.size() <= 200;
        for (unsigned char c : value) printable = printable && c >= 0x20 && c != 0x7f;
        if (!printable) return "--holder '" + value + "' must be 1 to 200 printable characters on one line";
        return {};
      },
      "ID");
}

SignalRouter::SignalRouter() {
  sigset_t set = routed_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  thread_ = std::thread([this, set] {
    while (!stopping_) {
      timespec slice{0, 100 * 1000 * 1000};
      int signo = sigtimedwait(&set, nullptr, &slice);
      if (signo <= 0 || signo == wake_signal()) continue;
      std::lock_guard lock(mu_);
      received_ = signo;
      if (child_ != nullptr) {
        child_->signal(signo);
      } else {
        undelivered_ = signo;  // for a command that starts later (see forward_to)
        if (handler_) handler_(signo);
      }
    }
  });
}

SignalRouter::~SignalRouter() {
  stopping_ = true;
  // Ends its wait now rather than at the end of its slice: a verb's exit
  // would otherwise wait for it.
  if (thread_.joinable()) {
    pthread_kill(thread_.native_handle(), wake_signal());
    thread_.join();
  }
}

void SignalRouter::on_signal(std::function<void(int)> handler) {
  std::lock_guard lock(mu_);
  handler_ = std::move(handler);
}

void SignalRouter::forward_to(swarm::ChildProcess* child) {
  std::lock_guard lock(mu_);
  child_ = child;
  // A signal that came after the wait ended and before the command started
  // is the command's too, once.
  if (child_ != nullptr && undelivered_ != 0) child_->signal(undelivered_);
  undelivered_ = 0;
}

int hold_while_running(const Context& ctx, const swarm::LeaseStore& store, swarm::Lease lease,
                       const HoldOptions& options, SignalRouter& signals) {
  const std::string token = std::to_string(lease.token);
  std::unique_ptr<swarm::ChildProcess> child;
  // Told to stop after the wait and before the command: run nothing.
  if (signals.received() != 0) {
    try {
      store.release(lease);
    } catch (const swarm::Error&) {
      // It expires by itself.
    }
    ctx.out().note("stopped by a signal before " + options.command.front() + " started; lease " + lease.name +
                   " released");
    return exit_for_signal(signals.received());
  }
  try {
    // A grant this process sat on too long (frozen, starved) is no grant:
    // another may hold the lease by now.
    if (swarm::BootClock::now() >= lease.deadline - swarm::give_up_lead(lease.record.ttl))
      throw swarm::Error(swarm::Errc::conflict, "lease " + lease.name + " (token " + token +
                                                    ") ran out before its command could start; nothing was run");
    child = swarm::ChildProcess::start(options.command, {{"SWARM_LEASE", lease.name}, {"SWARM_FENCING_TOKEN", token}});
  } catch (...) {
    try {
      store.release(lease);  // nothing ran under it
    } catch (const swarm::Error&) {
      // It expires by itself.
    }
    throw;
  }
  signals.forward_to(child.get());
  const auto ttl = lease.record.ttl;
  std::mutex stopping_mu;
  std::condition_variable stopping_cv;
  bool finished = false;
  // Stops the command: SIGTERM now, SIGKILL at `kill_at` if it is still there.
  auto stop_by = [&](swarm::BootTime kill_at) {
    child->signal(SIGTERM);
    std::unique_lock lock(stopping_mu);
    while (!finished && swarm::BootClock::now() < kill_at)
      stopping_cv.wait_for(lock, std::min<swarm::BootClock::duration>(kill_at - swarm::BootClock::now(), 50ms));
    if (!finished) child->signal(SIGKILL);
  };
  swarm::LeaseKeeper keeper(store, lease, [&](const std::string& why, swarm::BootTime deadline) {
    ctx.out().note("lease " + lease.name + " was lost (" + why + "): stopping " + options.command.front() +
                   " before its deadline");
    stop_by(deadline - swarm::kill_lead(ttl));
  });
  std::optional<swarm::ResignWatch> resign;
  std::thread resigner;
  if (options.hear_resign)
    resign.emplace(store, lease.name, lease.token, [&] {
      ctx.out().note("asked to step down as leader of " + lease.name + ": stopping " + options.command.front());
      resigner = std::thread([&] { stop_by(swarm::BootClock::now() + kResignGrace); });
    });
  int status = child->wait();
  {
    std::lock_guard lock(stopping_mu);
    finished = true;
  }
  stopping_cv.notify_all();
  signals.forward_to(nullptr);
  if (resign) resign->withdraw();
  resign.reset();
  if (resigner.joinable()) resigner.join();
  keeper.stop();
  if (!keeper.lost()) {
    try {
      store.release(keeper.lease());
    } catch (const swarm::Error& e) {
      ctx.out().warn("could not release lease " + lease.name + " (it expires by itself): " + e.what());
    }
  }
  return status;
}

}  // namespace cli
