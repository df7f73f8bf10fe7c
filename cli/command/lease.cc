// swarm lease acquire|renew|release|limit: leases by hand, for scripts and
// long-lived agents that heartbeat themselves (show and list: cli/verbs/leases.cc).
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
  std::uint64_t token = 0;
};


// A lease this process was just granted or renewed, as swarm.lease.v1: stored
// a moment ago, so 0 old.
swarm::Json granted_doc(const swarm::LeaseStore& store, const swarm::Lease& lease) {
  swarm::LeaseEntry entry;
  entry.name = lease.name;
  entry.revision = lease.revision;
  entry.record = lease.record;
  entry.record->token = lease.token;
  entry.stored_at = store.server_clock().now();
  swarm::Json list = swarm::Json::array();
  list.push(lease_json(entry, swarm::standing_of(entry, entry.stored_at), 0));
  swarm::Json doc = swarm::Json::object();
  doc.set("leases", std::move(list));
  return doc;
}

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

// renew or release: the name and the token of the grant.
CLI::App* add_by_token(CLI::App& cmd, LeaseFlags& f, const char* name, const char* what) {
  CLI::App* sub = cmd.add_subcommand(name, what);
  sub->add_option("name", f.name, "Lease name")->required()->check(lease_name_validator());
  sub->add_option("--token", f.token, "The fencing token `acquire` printed")
      ->required()
      ->option_text("N")
      ->check(fencing_token_validator());
  sub->footer(std::string("Example:\n  swarm lease ") + name + " claim.T-42 --token 1234");
  return sub;
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
                   ctx.out().json() ? granted_doc(store, *lease) : swarm::Json::object());
  return 0;
}

int run_renew(Context& ctx, const swarm::LeaseStore& store, const LeaseFlags& f) {
  auto lease = store.renew(f.name, f.token);
  ctx.out().result("lease",
                   "renewed lease " + f.name + " (token " + std::to_string(lease.token) + ") for " +
                       swarm::format_duration(lease.record.ttl),
                   ctx.out().json() ? granted_doc(store, lease) : swarm::Json::object());
  return 0;
}

int run_release(Context& ctx, const swarm::LeaseStore& store, const LeaseFlags& f) {
  store.release(f.name, f.token);
  swarm::Json released = swarm::Json::object();
  released.set("name", f.name).set("token", f.token);
  swarm::Json doc = swarm::Json::object();
  doc.set("leases", swarm::Json::array()).set("released", std::move(released));
  ctx.out().result("lease", "released lease " + f.name + " (token " + std::to_string(f.token) + ")", std::move(doc));
  return 0;
}

// `lease limit NAME N`: a semaphore's limit changed.
int run_limit(Context& ctx, const swarm::LeaseStore& store, const LeaseFlags& f) {
  const int was = swarm::Semaphore(store, f.name).change(f.limit);
  swarm::Json doc = swarm::Json::object();
  doc.set("name", f.name).set("limit", f.limit).set("was", was);
  ctx.out().result("lease", "semaphore " + f.name + ": limit " + std::to_string(was) + " -> " + std::to_string(f.limit),
                   std::move(doc));
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
  CLI::App* renew = add_by_token(*cmd, *f, "renew", "Renew the lease, for the grant its token names");
  CLI::App* release = add_by_token(*cmd, *f, "release", "Release the lease, for the grant its token names");
  // What only reads is the verbs layer's (cli/verbs/leases.cc).
  const Verb show = add_typed(*cmd, *typed_verb({"lease", "show"}));
  CLI::App* limit = cmd->add_subcommand("limit", "Change a semaphore's limit (a raise admits waiters at once)");
  limit->add_option("name", f->name, "Semaphore name")->required()->check(lease_name_validator());
  limit->add_option("limit", f->limit, "The new limit, 1 to 1000")
      ->required()
      ->transform(decimal_in(1, swarm::kMaxPermits));
  limit->footer("Example:\n  swarm lease limit integration 6\n"
                "A cut lets the holders finish and grants nothing until they are under the new limit.");
  const Verb list = add_typed(*cmd, *typed_verb({"lease", "list"}));

  return {cmd, [f, acquire, renew, release, limit, show, list](Context& ctx) {
            if (show.command->parsed()) return show.run(ctx);
            if (list.command->parsed()) return list.run(ctx);
            if (acquire->parsed()) return run_acquire(ctx, *f);
            auto store = ctx.leases();
            if (limit->parsed()) return run_limit(ctx, store, *f);
            if (renew->parsed()) return run_renew(ctx, store, *f);
            return run_release(ctx, store, *f);
          }};
}

}  // namespace cli
