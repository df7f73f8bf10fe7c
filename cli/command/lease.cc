// swarm lease: leases by hand, for scripts and long-lived agents that
// heartbeat themselves. acquire, which waits in line, is here; the other
// sub-verbs are the verbs layer's (show and list: cli/verbs/leases.cc;
// renew, release and limit: lease_changes.cc).
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "cli/verbs/documents/documents.h"
#include "cli/command/typed_command.h"
#include "cli/command/lease_wait.h"
#include "swarm/lease/semaphore.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/lease/lease.h"
#include "swarm/lease/mutex.h"

namespace cli {

namespace {

struct LeaseFlags {
  std::string name;
  std::string ttl = "15s";
  std::string wait = "0";
  int limit = 0;
  std::string holder;
  std::int64_t pid = 0;
};


// The sub-verbs, each with its options into `f`.
CLI::App* add_acquire(CLI::App& cmd, LeaseFlags& f) {
  CLI::App* acquire = cmd.add_subcommand("acquire", "Take the lease and print its fencing token");
  acquire->add_option("name", f.name, "Lease name, e.g. claim.T-42")->required()->check(user_lease_name_validator());
  acquire->add_option("--ttl", f.ttl, "How long it lives unless renewed, 1s to 1h")
      ->capture_default_str()
      ->option_text("DUR")
      ->check(duration_validator());
  acquire->add_option("--wait", f.wait, "Wait in line this long when it is held (0: try once, exit 3 if held)")
      ->capture_default_str()
      ->option_text("DUR")
      ->check(duration_validator());
  acquire->add_option("--holder", f.holder, "Who holds it, shown to others (default: HOST:PID)")->check(holder_validator());
  acquire->add_option("--pid", f.pid, "The process it belongs to (default: the caller of swarm)")
      ->transform(decimal_in(1, 4194304));
  acquire->add_option("--limit", f.limit,
                      "A semaphore: one of at most N permits of NAME (lease NAME.permit.K; its token is printed)")
      ->option_text("N")
      ->transform(decimal_in(1, swarm::kMaxPermits));
  acquire->footer("Example:\n  tok=$(swarm lease acquire merge-main --ttl 60s --wait 5m)\n"
                  "  swarm lease acquire sim-licence --limit 2 --json   # names the permit's lease");
  return acquire;
}

int run_acquire(Context& ctx, const LeaseFlags& f) {
  auto ttl = lease_ttl_option(f.ttl);
  auto wait = swarm::parse_duration(f.wait);
  SignalRouter signals;  // before any thread: a signal leaves the line
  auto store = ctx.leases(wait.count() > 0);
  // The lease belongs to whoever called swarm: its own pid ends now.
  auto who = swarm::LeaseHolder::process(ctx.me(), f.pid != 0 ? f.pid : getppid(), f.holder);
  std::optional<swarm::Lease> lease;
  if (f.limit > 0) {
    lease = wait_for_permit(ctx, store, f.name, f.limit, who, ttl, wait, signals);
  } else {
    swarm::Mutex mutex(store, f.name, who, ttl);
    lease = wait_in_line(ctx, store, mutex, f.name, wait, signals);
  }
  if (!lease) return exit_for_signal(signals.received());
  ctx.out().result("lease", std::to_string(lease->token),
                   ctx.out().json() ? granted_lease_json(store, *lease) : swarm::Json::object());
  return 0;
}

}  // namespace

Verb add_lease(CLI::App& app) {
  auto f = std::make_shared<LeaseFlags>();
  CLI::App* cmd = app.add_subcommand("lease", "Leases by hand: acquire, renew, release, show, list");
  cmd->require_subcommand(1);
  cmd->footer(
      "Examples:\n"
      "  tok=$(swarm lease acquire claim.T-42 --ttl 60s)     # prints the fencing token\n"
      "  swarm lease renew claim.T-42 --token \"$tok\"         # every 20s\n"
      "  swarm lease release claim.T-42 --token \"$tok\"\n"
      "  swarm lease list\n"
      "  swarm lease limit integration 6                  # a semaphore's limit\n"
      "A token that is no longer the lease's is exit 3, and changes nothing.");
  CLI::App* acquire = add_acquire(*cmd, *f);
  // The verbs layer's sub-verbs, each bound under this family.
  std::vector<Verb> typed;
  for (const char* sub : {"renew", "release", "show", "limit", "list"})
    typed.push_back(add_typed(*cmd, *typed_verb({"lease", sub})));
  return {cmd, [f, acquire, typed](Context& ctx) {
            for (const auto& verb : typed)
              if (verb.command->parsed()) return verb.run(ctx);
            if (acquire->parsed()) return run_acquire(ctx, *f);
            return 2;
          }};
}

}  // namespace cli
