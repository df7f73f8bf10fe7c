#include "cli/hold.h"

#include <signal.h>

#include <iostream>

#include "swarm/boot_clock.h"
#include "swarm/duration.h"
#include "swarm/error.h"
#include "swarm/lease/held_command.h"
#include "swarm/lease/lease.h"
#include "swarm/names.h"

namespace cli {

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
  held.note = [&ctx](const std::string& what) { ctx.out().note(what); };
  held.warn = [&ctx](const std::string& what) { ctx.out().warn(what); };
  held.running = [&signals](swarm::ChildProcess* child) { signals.forward_to(child); };
  return swarm::run_holding(store, std::move(lease), held);
}

}  // namespace cli
