#include "cli/command/lease_wait.h"

#include <signal.h>

#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <thread>
#include <unistd.h>

#include "swarm/base/boot_clock.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/test_seam.h"
#include "swarm/base/text.h"
#include "swarm/lease/held_command.h"
#include "swarm/lease/lease_keeper.h"
#include "swarm/lease/semaphore.h"
#include "swarm/lease/lease.h"

namespace cli {

CLI::Validator lease_name_validator() { return validator_of(swarm::require_lease_name, "NAME"); }

CLI::Validator user_lease_name_validator() { return validator_of(swarm::require_user_lease_name, "NAME"); }

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

std::optional<swarm::Lease> wait_in_line(const Context& ctx, const swarm::LeaseStore& store, swarm::Mutex& mutex,
                                         const std::string& name, std::optional<std::chrono::milliseconds> wait,
                                         SignalRouter& signals) {
  signals.on_signal([&](int) { mutex.cancel(); });
  // However the wait ends, a later signal no longer reaches `mutex`, which
  // may be gone by then (the router calls its handler under its lock, so
  // none is running once this returns).
  struct Forget {
    SignalRouter& signals;
    ~Forget() { signals.on_signal({}); }
  } forget{signals};
  // Granted at once (the usual case) costs nothing more; a wait past this
  // moment is said, with who holds the lease and this waiter's place in
  // line: once in a log, and kept up to date on a terminal as the line
  // moves (a listing of the line every 2 s, for the display only: the wait
  // itself watches). The teller has copies of what it reads and is left to
  // end by itself once the wait is over: a slow read of its never delays
  // the holder's first renewal.
  static constexpr std::chrono::milliseconds kMoment{300};
  static constexpr std::chrono::milliseconds kRefresh{2000};
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false, said = false;
    std::uint64_t order = 0;  // this waiter's place's order, copied from the mutex while it waits
  };
  auto shared = std::make_shared<Shared>();
  const bool tty = isatty(STDERR_FILENO) != 0;
  std::thread teller([shared, tty, store, name, &mutex] {
    std::string shown;
    for (auto pause = kMoment;; pause = kRefresh) {
      std::uint64_t order = 0;
      {
        std::unique_lock lock(shared->mu);
        if (shared->cv.wait_for(lock, pause, [&] { return shared->done; })) return;
        order = shared->order = mutex.place_order();  // the mutex lives while done is false
      }
      std::string line = "waiting for lease " + name;
      try {
        if (auto held = store.get(name); held && held->record)
          line += " (held by " + swarm::printable(held->record->holder) + " on " +
                  swarm::printable(held->record->host) + ", token " + std::to_string(held->token()) + ")";
        if (order != 0) line += "; place " + std::to_string(store.place_in_line(name, order)) + " in line";
      } catch (const std::exception&) {
        // Said without the details.
      }
      std::lock_guard lock(shared->mu);
      if (shared->done) return;
      if (line != shown) {
        std::fputs(tty ? ("\033[2K\rswarm: " + line + "\r").c_str() : ("swarm: " + line + "\n").c_str(), stderr);
        std::fflush(stderr);
        shown = line;
        shared->said = true;
      }
      if (!tty) return;  // a log gets it once
    }
  });
  auto finish = [&] {
    {
      std::lock_guard lock(shared->mu);
      shared->done = true;
      if (shared->said && tty) std::fputs("\033[2K\r", stderr);  // the waiting line goes once granted
    }
    shared->cv.notify_all();
    teller.detach();
  };
  try {
    auto lease = mutex.lock(wait);
    finish();
    return lease;
  } catch (const swarm::Cancelled&) {
    finish();
    ctx.out().note("stopped waiting for lease " + name + " (a signal); left the line");
    return std::nullopt;
  } catch (...) {
    finish();
    throw;
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

int hold_while_running(const Context& ctx, const swarm::LeaseStore& store, swarm::Lease lease,
                       const HoldOptions& options, SignalRouter& signals) {
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
  swarm::HeldCommand held;
  held.command = options.command;
  held.hear_resign = options.hear_resign;
  const std::optional<int> permit = options.permit;
  if (permit) held.env.emplace_back("SWARM_PERMIT", std::to_string(*permit));
  held.note = [&ctx](const std::string& what) { ctx.out().note(what); };
  held.warn = [&ctx](const std::string& what) { ctx.out().warn(what); };
  held.running = [&signals](swarm::ChildProcess* child) { signals.forward_to(child); };
  const std::string name = lease.name;
  const std::uint64_t token = lease.token;
  swarm::HeldEnd end = swarm::HeldEnd::by_itself;
  const int status = swarm::run_holding(store, std::move(lease), held, &end);
  std::string ended(swarm::to_string(end));
  if (end == swarm::HeldEnd::by_itself && signals.received() != 0) ended = "signalled";
  const int exit = end == swarm::HeldEnd::resigned ? 0 : status;
  if (ctx.out().json()) {
    swarm::Json doc = swarm::Json::object();
    doc.set("name", name)
        .set("token", static_cast<std::int64_t>(token));
    if (permit) doc.set("permit", *permit);
    doc
        .set("waited_ms", static_cast<std::int64_t>(options.waited.count()))
        .set("status", status)
        .set("ended", ended)
        .set("exit", exit);
    ctx.out().result("lock", "", std::move(doc));
  }
  return exit;
}

std::optional<swarm::Lease> wait_for_permit(const Context& ctx, const swarm::LeaseStore& store, const std::string& name,
                                            int limit, const swarm::LeaseHolder& who, std::chrono::milliseconds ttl,
                                            std::optional<std::chrono::milliseconds> wait, SignalRouter& signals) {
  swarm::Semaphore semaphore(store, name);
  semaphore.require(limit);
  const std::string gate_name = swarm::gate_lease(name);
  if (wait && wait->count() == 0) {
    // Once, and never ahead of those already waiting: first come, first granted.
    const auto at_gate = store.get(gate_name);
    const int behind = store.waiting(gate_name, ctx.me().host, ctx.me().host_id)[gate_name];
    const bool gate_held = at_gate && swarm::standing_of(*at_gate, store.server_clock().now()).state ==
                                          swarm::LeaseState::held;
    if (gate_held || behind > 0)
      throw swarm::Error(swarm::Errc::conflict, std::to_string(behind + (gate_held ? 1 : 0)) +
                                                    " waiter(s) are in line for a permit of " + name +
                                                    "; nothing was taken (wait in line with --wait DUR)");
    return semaphore.try_permit(who, ttl);
  }
  const auto until = wait ? std::chrono::steady_clock::now() + *wait : std::chrono::steady_clock::time_point::max();
  swarm::Mutex gate(store, gate_name, who, ttl);
  auto at_gate = wait_in_line(ctx, store, gate, gate_name, wait, signals);
  if (!at_gate) return std::nullopt;
  // The gate is kept while this waiter waits for a permit, and left however
  // that ends: the next in line comes to the gate.
  swarm::LeaseKeeper keeper(store, *at_gate, [](const std::string&, swarm::BootTime) {});
  struct Leave {
    const swarm::LeaseStore& store;
    swarm::LeaseKeeper& keeper;
    ~Leave() {
      keeper.stop();
      try {
        store.release(keeper.lease());
      } catch (const swarm::Error&) {
        // It expires by itself.
      }
    }
  } leave{store, keeper};
  try {
    swarm::stop_here_for_test(swarm::kLeaseStop, "gate");
    auto permit = semaphore.take_permit(who, ttl, until, [&signals] { return signals.received() != 0; });
    swarm::stop_here_for_test(swarm::kLeaseStop, "granted");
    return permit;
  } catch (const swarm::Cancelled&) {
    ctx.out().note("stopped waiting for a permit of " + name + " (left the line)");
    return std::nullopt;
  }
}

}  // namespace cli
