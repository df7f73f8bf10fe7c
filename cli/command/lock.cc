// swarm lock NAME -- CMD: run CMD holding lease NAME, one holder at a time,
// waiters served in the order they asked.
#include <unistd.h>

#include "cli/command/lease_wait.h"
#include "swarm/base/child_process.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/lease/mutex.h"
#include "swarm/lease/semaphore.h"

namespace cli {

namespace {
struct LockFlags {
  std::string name;
  std::string ttl = "15s";
  std::string wait;  // empty: for ever
  std::string holder;
  int limit = 0;  // 0: a lock (one holder)
  std::vector<std::string> command;
};
}  // namespace

Verb add_lock(CLI::App& app) {
  auto f = std::make_shared<LockFlags>();
  CLI::App* cmd = app.add_subcommand("lock", "Run CMD holding lease NAME: one at a time, in the order asked");
  cmd->add_option("name", f->name, "Lease name, e.g. merge-main")->required()->check(user_lease_name_validator());
  cmd->add_option("--ttl", f->ttl, "Lease TTL, 1s to 1h: renewed every TTL/3 while CMD runs")
      ->capture_default_str()
      ->option_text("DUR")
      ->check(duration_validator());
  cmd->add_option("--wait", f->wait, "Wait at most this long (default: for ever; 0: try once, exit 3 if held)")
      ->option_text("DUR")
      ->check(duration_validator());
  cmd->add_option("--holder", f->holder, "Who holds it, shown to others (default: HOST:PID)")->check(holder_validator());
  cmd->add_option("--limit", f->limit,
                  "A semaphore: at most N holders of NAME at once, each with a permit of its own (the limit is "
                  "stored with NAME; change it with swarm lease limit)")
      ->option_text("N")
      ->transform(decimal_in(1, swarm::kMaxPermits));
  cmd->add_option("command", f->command, "The command to run, after --")->option_text("-- CMD...");
  cmd->footer(
      "Examples:\n"
      "  swarm lock merge-main -- ./merge.sh\n"
      "  swarm lock nightly --wait 0 -- ./report.sh     # skip when someone else runs it\n"
      "  swarm lock integration --limit 4 -- make it    # at most 4 at once, on every host\n"
      "CMD gets SWARM_LEASE and SWARM_FENCING_TOKEN; it is stopped (SIGTERM, then SIGKILL) before\n"
      "the lease's deadline if the lease is lost. What CMD leaves running when it ends is killed\n"
      "before the lease is released. swarm exits with CMD's status.\n"
      "With --limit N, CMD holds one permit, lease NAME.permit.K (K below N), and gets SWARM_PERMIT=K;\n"
      "waiters take turns at lease NAME.gate in the order they asked. A --limit other than the one\n"
      "stored with NAME is exit 2. `swarm lock NAME` without --limit is a lock of its own on NAME.");
  return {cmd, [f](Context& ctx) {
            auto command = command_after_dashes(f->command, "lock");
            swarm::require_runnable(command.front());  // before waiting or writing anything
            auto ttl = lease_ttl_option(f->ttl);
            std::optional<std::chrono::milliseconds> wait;
            if (!f->wait.empty()) wait = swarm::parse_duration(f->wait);
            SignalRouter signals;  // before any thread is made
            auto store = ctx.leases(true);
            const auto who = swarm::LeaseHolder::process(ctx.me(), getpid(), f->holder);
            const auto asked = std::chrono::steady_clock::now();
            std::optional<swarm::Lease> lease;
            if (f->limit > 0) {
              lease = wait_for_permit(ctx, store, f->name, f->limit, who, ttl, wait, signals);
            } else {
              swarm::Mutex mutex(store, f->name, who, ttl);
              lease = wait_in_line(ctx, store, mutex, f->name, wait, signals);
            }
            if (!lease) return exit_for_signal(signals.received());
            const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - asked);
            HoldOptions hold{.command = command, .waited = waited};
            if (f->limit > 0) hold.permit = swarm::permit_of(lease->name);
            return hold_while_running(ctx, store, std::move(*lease), hold, signals);
          }};
}

}  // namespace cli
