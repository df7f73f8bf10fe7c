// swarm elect NAME -- CMD: one leader runs CMD, the others wait silently and
// take over; --observe prints who leads; --resign asks the leader to step down.
#include <signal.h>
#include <unistd.h>


#include "cli/command/lease_wait.h"
#include "swarm/base/child_process.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/lease/election.h"

namespace cli {

namespace {

struct ElectFlags {
  std::string name;
  std::string ttl = "15s";
  bool observe = false;
  bool resign = false;
  std::string holder;
  std::vector<std::string> command;
};

swarm::Json elect_line(const std::string& name, const swarm::Leadership& l) {
  swarm::Json doc = swarm::Json::object();
  doc.set("schema", "swarm.elect.v1").set("name", name);
  if (l.leader) {
    doc.set("leader", l.leader->holder).set("host", l.leader->host).set("token", l.token);
    if (l.leader->acquired_at) doc.set("since", swarm::format_rfc3339(*l.leader->acquired_at));
    else doc.set_null("since");
  } else {
    doc.set_null("leader").set_null("host").set_null("token").set_null("since");
  }
  doc.set("change", swarm::to_string(l.change));
  return doc;
}

// Prints who leads, then each change, until SIGINT, SIGTERM or SIGHUP (exit 0).
int observe(Context& ctx, const std::string& name) {
  const SignalRouter signals;  // before any thread is made; SIGHUP: its terminal went away
  auto store = ctx.leases(true);
  swarm::LeaderWatch leaders(store, name);
  while (signals.received() == 0) {
    auto change = leaders.next(std::chrono::milliseconds(250));
    if (change) ctx.out().json_line(elect_line(name, *change));
  }
  return 0;
}

// Asks the leader to step down and waits until it did (or its lease ran out).
int resign(Context& ctx, const std::string& name) {
  auto store = ctx.leases(true);
  auto me = swarm::LeaseHolder::process(ctx.me(), getpid());
  swarm::LeaderWatch leaders(store, name);
  auto current = leaders.next(std::chrono::milliseconds(0));
  if (!current || !current->leader)
    throw swarm::Error(swarm::Errc::not_found, "nobody leads " + name + " now: nothing to resign");
  auto asked = swarm::request_resignation(store, name, me);
  const auto token = asked.token();
  const auto ttl = asked.record->ttl;
  // The leader stops its command, then releases; one that is gone lets its
  // lease run out. Either way the answer comes within its TTL and a grace.
  const auto deadline = std::chrono::steady_clock::now() + ttl + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    auto change = leaders.next(std::chrono::milliseconds(250));
    if (!change || (change->leader && change->token == token)) continue;
    std::string now_leads = change->leader ? change->leader->holder + " (token " + std::to_string(change->token) + ")"
                                           : std::string("nobody yet");
    swarm::Json doc = elect_line(name, *change);
    doc.set("resigned", asked.record->holder).set("resigned_token", token);
    ctx.out().result("elect",
                     "leader " + asked.record->holder + " (token " + std::to_string(token) + ") stepped down; now " +
                         now_leads + " leads " + name,
                     std::move(doc));
    return 0;
  }
  throw swarm::Error(swarm::Errc::conflict, "leader " + asked.record->holder + " of " + name +
                                                " did not step down within its TTL; is it frozen? its lease runs out "
                                                "by itself unless it renews");
}

}  // namespace

Verb add_elect(CLI::App& app) {
  auto f = std::make_shared<ElectFlags>();
  CLI::App* cmd = app.add_subcommand("elect", "Leader election: one leader runs CMD, the others wait and take over");
  cmd->add_option("name", f->name, "Election (lease) name, e.g. scheduler")->required()->check(user_lease_name_validator());
  cmd->add_option("--ttl", f->ttl, "Lease TTL, 1s to 1h: a dead leader is replaced within TTL + TTL/3")
      ->capture_default_str()
      ->option_text("DUR")
      ->check(duration_validator());
  auto* observe_flag = cmd->add_flag("--observe", f->observe, "Print who leads (swarm.elect.v1 lines), then each change");
  auto* resign_flag = cmd->add_flag("--resign", f->resign, "Ask the current leader to step down (from any host)");
  observe_flag->excludes(resign_flag);
  cmd->add_option("--holder", f->holder, "Who leads, shown to others (default: HOST:PID)")->check(holder_validator());
  cmd->add_option("command", f->command, "The leader's command, after --")->option_text("-- CMD...");
  cmd->footer(
      "Examples:\n"
      "  swarm elect scheduler -- ./scheduler        # on each of three machines\n"
      "  swarm elect scheduler --observe             # one JSON line per change of leader\n"
      "  swarm elect scheduler --resign              # the leader stops ./scheduler, the next takes over\n"
      "When CMD ends the leader resigns and swarm exits with CMD's status.");
  return {cmd, [f](Context& ctx) {
            if (f->observe || f->resign) {
              if (!f->command.empty())
                throw swarm::Error(swarm::Errc::bad_input, "--observe and --resign run no command: drop the -- part");
              return f->observe ? observe(ctx, f->name) : resign(ctx, f->name);
            }
            auto command = command_after_dashes(f->command, "elect");
            swarm::require_runnable(command.front());  // before waiting or writing anything
            auto ttl = lease_ttl_option(f->ttl);
            SignalRouter signals;  // before any thread is made
            auto store = ctx.leases(true);
            swarm::Election election(store, f->name, swarm::LeaseHolder::process(ctx.me(), getpid(), f->holder), ttl);
            signals.on_signal([&](int) { election.cancel(); });
            swarm::Lease lease;
            const auto asked = std::chrono::steady_clock::now();
            try {
              lease = election.campaign();
            } catch (const swarm::Cancelled&) {
              return exit_for_signal(signals.received());
            }
            const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - asked);
            return hold_while_running(ctx, store, std::move(lease),
                                      {.command = command, .hear_resign = true, .waited = waited}, signals);
          }};
}

}  // namespace cli
