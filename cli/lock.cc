// swarm lock NAME -- CMD: run CMD holding lease NAME, one holder at a time,
// waiters served in the order they asked.
#include <unistd.h>

#include "cli/hold.h"
#include "swarm/base/child_process.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/lease/mutex.h"

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

Verb add_lock(CLI::App& app) {
  auto f = std::make_shared<LockFlags>();
  CLI::App* cmd = app.add_subcommand("lock", "Run CMD holding lease NAME: one at a time, in the order asked");
  cmd->add_option("name", f->name, "Lease name, e.g. merge-main")->required()->check(lease_name_validator());
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
            const auto asked = std::chrono::steady_clock::now();
            auto lease = wait_in_line(ctx, store, mutex, f->name, wait, signals);
            if (!lease) return exit_for_signal(signals.received());
            const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - asked);
            return hold_while_running(ctx, store, std::move(*lease), {.command = command, .waited = waited}, signals);
          }};
}

}  // namespace cli
