// swarm lock NAME -- CMD: run CMD holding lease NAME, one holder at a time,
// waiters served in the order they asked.
#include <unistd.h>

#include "cli/hold.h"
#include "swarm/child_process.h"
#include "swarm/duration.h"
#include "swarm/error.h"
#include "swarm/mutex.h"
#include "swarm/names.h"

namespace cli {

namespace {
struct LockFlags {
  std::string name;
  std::string ttl = "15s";
  std::string wait;  // empty: for ever
  std::string holder;
  std::vector<std::string> command;
};
}  // namespace

// The command after "--": CLI11 keeps everything after it for `command`.
std::vector<std::string> command_after_dashes(const std::vector<std::string>& command, const char* verb) {
  if (command.empty())
    throw swarm::Error(swarm::Errc::bad_input,
                       std::string("no command to run: give it after --, e.g. swarm ") + verb + " NAME -- ./run.sh");
  return command;
}

std::chrono::milliseconds lease_ttl_option(const std::string& text) {
  auto ttl = swarm::parse_duration(text);
  if (ttl < swarm::kMinLeaseTtl || ttl > swarm::kMaxLeaseTtl)
    throw swarm::Error(swarm::Errc::bad_input, "--ttl " + text + " is out of range: a lease TTL is 1s to 1h");
  return ttl;
}

Verb add_lock(CLI::App& app) {
  auto f = std::make_shared<LockFlags>();
  CLI::App* cmd = app.add_subcommand("lock", "Run CMD holding lease NAME: one at a time, in the order asked");
  cmd->add_option("name", f->name, "Lease name, e.g. merge-main")->required()->check(CLI::Validator(
      [](std::string& value) -> std::string {
        try {
          swarm::require_lease_name(value);
        } catch (const std::exception& e) {
          return e.what();
        }
        return {};
      },
      "", "NAME"));
  cmd->add_option("--ttl", f->ttl, "Lease TTL, 1s to 1h: renewed every TTL/3 while CMD runs")
      ->capture_default_str()
      ->option_text("DUR")
      ->check(duration_validator());
  cmd->add_option("--wait", f->wait, "Wait at most this long (default: for ever; 0: try once, exit 3 if held)")
      ->option_text("DUR")
      ->check(duration_validator());
  cmd->add_option("--holder", f->holder, "Who holds it, shown to others (default: HOST:PID)")->check(holder_validator());
  cmd->add_option("command", f->command, "The command to run, after --")->option_text("-- CMD...");
  cmd->footer(
      "Examples:\n"
      "  swarm lock merge-main -- ./merge.sh\n"
      "  swarm lock nightly --wait 0 -- ./report.sh     # skip when someone else runs it\n"
      "CMD gets SWARM_LEASE and SWARM_FENCING_TOKEN; it is stopped (SIGTERM, then SIGKILL) before\n"
      "the lease's deadline if the lease is lost. What CMD leaves running when it ends is killed\n"
      "before the lease is released. swarm exits with CMD's status.");
  return {cmd, [f](Context& ctx) {
            auto command = command_after_dashes(f->command, "lock");
            swarm::require_runnable(command.front());  // before waiting or writing anything
            auto ttl = lease_ttl_option(f->ttl);
            std::optional<std::chrono::milliseconds> wait;
            if (!f->wait.empty()) wait = swarm::parse_duration(f->wait);
            SignalRouter signals;  // before any thread is made
            auto store = ctx.leases(true);
            swarm::Mutex mutex(store, f->name, swarm::LeaseHolder::process(ctx.me(), getpid(), f->holder), ttl);
            signals.on_signal([&](int) { mutex.cancel(); });
            swarm::Lease lease;
            try {
              lease = mutex.lock(wait);
            } catch (const swarm::Cancelled&) {
              ctx.out().note("stopped waiting for lease " + f->name + " (a signal); left the line");
              return exit_for_signal(signals.received());
            }
            return hold_while_running(ctx, store, std::move(lease), {.command = command}, signals);
          }};
}

}  // namespace cli
