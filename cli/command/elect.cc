// swarm elect NAME -- CMD: one leader runs CMD, the others wait silently and
// take over; --observe prints who leads; --resign asks the leader to step down.
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <iterator>

#include "cli/command/lease_wait.h"
#include "swarm/base/child_process.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/lease/candidate.h"
#include "swarm/lease/election.h"
#include "swarm/lease/election_state.h"

namespace cli {

namespace {

struct ElectFlags {
  std::string name;
  std::string ttl = "15s";
  bool observe = false;
  bool resign = false;
  bool check = false;
  bool all = false;  // --all: CMD on every candidate
  std::int64_t priority = 0;
  std::string min_term;
  std::string to;  // --resign --to HOLDER
  std::uint64_t token = 0;
  std::string holder;
  // elect state NAME put FILE | get
  std::string state_name, state_action, state_file;
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
  if (l.reason.empty()) doc.set_null("reason");
  else doc.set("reason", l.reason);
  return doc;
}

// Prints who leads, then each change, until SIGINT, SIGTERM or SIGHUP (exit 0).
int observe(Context& ctx, const std::string& name) {
  const SignalRouter signals;  // before any thread is made; SIGHUP: its terminal went away
  auto store = ctx.leases(true);
  swarm::LeaderWatch leaders(store, name, ctx.me());
  while (signals.received() == 0) {
    auto change = leaders.next(std::chrono::milliseconds(250));
    if (change) ctx.out().json_line(elect_line(name, *change));
  }
  return 0;
}

// Asks the leader to step down (in favour of the waiting candidate `to`, when
// given) and waits until it did (or its lease ran out).
int resign(Context& ctx, const std::string& name, const std::string& to) {
  auto store = ctx.leases(true);
  auto me = swarm::LeaseHolder::process(ctx.me(), getpid());
  swarm::LeaderWatch leaders(store, name);
  auto current = leaders.next(std::chrono::milliseconds(0));
  if (!current || !current->leader)
    throw swarm::Error(swarm::Errc::not_found, "nobody leads " + name + " now: nothing to resign");
  std::optional<swarm::LiveWaiter> successor;
  if (!to.empty()) {
    std::string waiting;
    for (auto& w : store.live_waiters(name, ctx.me().host, ctx.me().host_id)) {
      if (w.holder == to && !successor) successor = w;
      waiting += (waiting.empty() ? "" : ", ") + swarm::printable(w.holder);
    }
    if (!successor)
      throw swarm::Error(swarm::Errc::not_found, "candidate " + swarm::printable(to) + " is not waiting for " + name +
                                                     " (waiting: " + (waiting.empty() ? "nobody" : waiting) +
                                                     "); nothing was asked");
  }
  auto asked = swarm::request_resignation(store, name, me, successor);
  const auto token = asked.token();
  const auto ttl = asked.record->ttl;
  // A leader with a minimum term holds the request until it has led that
  // long (timed from its grant; here by the server's stamp of it).
  std::chrono::milliseconds term_left{0};
  if (asked.record->min_term.count() > 0 && asked.record->acquired_at) {
    term_left = std::chrono::duration_cast<std::chrono::milliseconds>(*asked.record->acquired_at +
                                                                      asked.record->min_term -
                                                                      std::chrono::system_clock::now());
    if (term_left.count() > 0)
      ctx.out().note("leader " + swarm::printable(asked.record->holder) + " has a minimum term of " +
                     swarm::format_duration(asked.record->min_term) + ": it steps down when that ends, in about " +
                     swarm::format_duration(term_left));
    else
      term_left = std::chrono::milliseconds(0);
  }
  // The leader stops its command, then releases; one that is gone lets its
  // lease run out. Either way the answer comes within its TTL and a grace.
  const auto deadline = std::chrono::steady_clock::now() + term_left + ttl + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    auto change = leaders.next(std::chrono::milliseconds(250));
    if (!change || (change->leader && change->token == token)) continue;
    // Released to the candidate: the next change says whether it took it.
    while (successor && !change->leader && std::chrono::steady_clock::now() < deadline) {
      auto next = leaders.next(std::chrono::milliseconds(250));
      if (next) change = next;
    }
    const std::string now_leads = change->leader
                                      ? change->leader->holder + " (token " + std::to_string(change->token) + ")"
                                      : std::string("nobody yet");
    swarm::Json doc = elect_line(name, *change);
    doc.set("resigned", asked.record->holder).set("resigned_token", token);
    if (successor) {
      doc.set("handed_to", to);
      if (!change->leader || change->leader->holder != to)
        throw swarm::Error(swarm::Errc::conflict, "leader " + swarm::printable(asked.record->holder) + " of " + name +
                                                      " stepped down for " + swarm::printable(to) + ", but now " +
                                                      swarm::printable(now_leads) + " leads (the candidate left or froze)");
    }
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

// Exit 0 when `token` leads `name` now, 3 (conflict) naming who does when not.
int check(Context& ctx, const std::string& name, std::uint64_t token) {
  auto store = ctx.leases(true);
  swarm::LeaseEntry leader = swarm::require_leader(store, name, token);
  swarm::Json doc = swarm::Json::object();
  doc.set("schema", "swarm.elect.v1")
      .set("name", name)
      .set("leader", leader.record->holder)
      .set("host", leader.record->host)
      .set("token", token)
      .set("leads", true);
  ctx.out().result("elect", "token " + std::to_string(token) + " leads " + name, std::move(doc));
  return 0;
}

// At most one byte more than a state may hold (so that a larger one is told
// apart without reading it all: /dev/zero ends here too).
std::string read_state_file(const std::string& file) {
  std::ifstream opened;
  if (file != "-") {
    opened.open(file, std::ios::binary);
    if (!opened) throw swarm::Error(swarm::Errc::bad_input, "cannot read " + swarm::printable(file));
  }
  std::istream& in = file == "-" ? std::cin : opened;
  std::string data(swarm::kMaxElectionState + 1, '\0');
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  if (in.bad())
    throw swarm::Error(swarm::Errc::filesystem,
                       file == "-" ? std::string("could not read the state from standard input")
                                   : "could not read " + swarm::printable(file));
  data.resize(static_cast<std::size_t>(in.gcount()));
  return data;
}

swarm::Json state_doc(const swarm::ElectionState& s) {
  swarm::Json doc = swarm::Json::object();
  doc.set("schema", "swarm.elect.v1")
      .set("name", s.name)
      .set("token", s.token)
      .set("holder", s.holder)
      .set("host", s.host)
      .set("sha256", s.sha256)
      .set("size", static_cast<std::uint64_t>(s.data.size()))
      .set("revision", s.revision);
  return doc;
}

int run_state(Context& ctx, const ElectFlags& f) {
  if (f.state_action != "put" && f.state_action != "get")
    throw swarm::Error(swarm::Errc::bad_input, "elect state " + swarm::printable(f.state_name) + ": " +
                                                   swarm::printable(f.state_action) + " is neither put nor get");
  if (f.state_action == "put" && f.state_file.empty())
    throw swarm::Error(swarm::Errc::bad_input, "elect state put needs the FILE to store (- for standard input)");
  if (f.state_action == "get" && !f.state_file.empty())
    throw swarm::Error(swarm::Errc::bad_input, "elect state get takes no FILE: it prints the state");
  if (f.state_action == "put") {
    std::string data = read_state_file(f.state_file);  // before any NATS round trip
    if (data.size() > swarm::kMaxElectionState)
      throw swarm::Error(swarm::Errc::bad_input, swarm::printable(f.state_file) + " is over " +
                                                     std::to_string(swarm::kMaxElectionState) +
                                                     " bytes: a state holds at most that");
    auto store = ctx.leases(true);
    auto s = swarm::put_election_state(store, f.state_name, f.token,
                                       swarm::LeaseHolder::process(ctx.me(), getpid()), std::move(data));
    ctx.out().result("elect",
                     "stored " + std::to_string(s.data.size()) + " bytes as the state of " + f.state_name +
                         " (token " + std::to_string(s.token) + ", sha256 " + s.sha256 + ")",
                     state_doc(s));
    return 0;
  }
  auto store = ctx.leases(true);
  auto s = swarm::get_election_state(store, f.state_name, f.token);
  if (ctx.out().json()) {
    swarm::Json doc = state_doc(s);
    doc.set("written_at", swarm::format_rfc3339(s.written_at)).set("data", s.data);
    ctx.out().result("elect", "", std::move(doc));
    return 0;
  }
  std::cout.write(s.data.data(), static_cast<std::streamsize>(s.data.size()));
  std::cout.flush();
  if (!std::cout) throw swarm::Error(swarm::Errc::filesystem, "standard output refused the state (a closed pipe?)");
  return 0;
}

// --all: CMD on this candidate whether it leads or not, told by signals
// (swarm::run_as_candidate); swarm's signals go to it, and swarm ends with it.
int run_everywhere(Context& ctx, const swarm::LeaseStore& store, const std::string& name, const swarm::LeaseHolder& who,
                   std::chrono::milliseconds ttl, const std::vector<std::string>& command, SignalRouter& signals) {
  swarm::CandidateCommand candidate;
  candidate.command = command;
  candidate.note = [&ctx](const std::string& what) { ctx.out().note(what); };
  candidate.warn = [&ctx](const std::string& what) { ctx.out().warn(what); };
  candidate.running = [&signals](swarm::ChildProcess* child) { signals.forward_to(child); };
  const swarm::CandidateRun run = swarm::run_as_candidate(store, name, who, ttl, candidate);
  if (ctx.out().json()) {
    swarm::Json terms = swarm::Json::array();
    for (const auto& term : run.terms) {
      swarm::Json t = swarm::Json::object();
      t.set("token", term.token).set("ended", swarm::to_string(term.end));
      terms.push(std::move(t));
    }
    swarm::Json doc = swarm::Json::object();
    doc.set("name", name).set("status", run.status).set("exit", run.status).set("terms", std::move(terms));
    ctx.out().result("elect", "", std::move(doc));
  }
  return run.status;
}

// elect state NAME put FILE|get --token T: the leader's state for its successor.
CLI::App* add_state(CLI::App& cmd, ElectFlags& f) {
  CLI::App* state = cmd.add_subcommand("state", "The leader's state for its successor: put FILE, or get, under --token");
  state->add_option("name", f.state_name, "Election name")->required()->check(user_lease_name_validator());
  state->add_option("action", f.state_action, "put or get")->required()->check(CLI::IsMember({"put", "get"}));
  state->add_option("file", f.state_file, "put: the file to store (- for standard input)")->option_text("FILE");
  state->add_option("--token", f.token, "The fencing token of the leader ($SWARM_FENCING_TOKEN)")
      ->required()
      ->option_text("N")
      ->check(fencing_token_validator());
  state->footer(
      "Examples:\n"
      "  swarm elect state scheduler put state.json --token \"$SWARM_FENCING_TOKEN\"\n"
      "  swarm elect state scheduler get --token \"$SWARM_FENCING_TOKEN\" > state.json\n"
      "Only the token that leads now may put or get (exit 3 otherwise); get checks the SHA-256 written with the\n"
      "state and refuses one that a deposed leader wrote after this leader was granted. At most 512 KiB.");
  return state;
}

// elect NAME: its state, a check, an observer, a resignation, or a candidate.
int run_elect(Context& ctx, ElectFlags& f, bool state_parsed) {
  if (state_parsed) {
    if (!f.name.empty() || !f.command.empty())
      throw swarm::Error(swarm::Errc::bad_input, "elect state takes its own NAME: swarm elect state NAME put FILE|get --token T");
    return run_state(ctx, f);
  }
  if (f.name.empty()) throw swarm::Error(swarm::Errc::bad_input, "elect needs the election's NAME");
  if (f.check) {
    if (!f.command.empty()) throw swarm::Error(swarm::Errc::bad_input, "--check runs no command: drop the -- part");
    return check(ctx, f.name, f.token);
  }
  if (f.observe || f.resign) {
    if (!f.command.empty())
      throw swarm::Error(swarm::Errc::bad_input, "--observe and --resign run no command: drop the -- part");
    if (f.priority != 0 || !f.min_term.empty())
      throw swarm::Error(swarm::Errc::bad_input, "--priority and --min-term are a candidate's: give them with -- CMD");
    return f.observe ? observe(ctx, f.name) : resign(ctx, f.name, f.to);
  }
  auto command = command_after_dashes(f.command, "elect");
  swarm::require_runnable(command.front());  // before waiting or writing anything
  auto ttl = lease_ttl_option(f.ttl);
  auto who = swarm::LeaseHolder::process(ctx.me(), getpid(), f.holder);
  who.priority = static_cast<std::uint64_t>(f.priority);
  if (!f.min_term.empty()) {
    who.min_term = swarm::parse_duration(f.min_term);
    if (who.min_term > std::chrono::hours(1))
      throw swarm::Error(swarm::Errc::bad_input, "--min-term " + f.min_term + " is over 1h");
  }
  SignalRouter signals;  // before any thread is made
  auto store = ctx.leases(true);
  if (f.all) return run_everywhere(ctx, store, f.name, who, ttl, command, signals);
  swarm::Election election(store, f.name, std::move(who), ttl);
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
}

}  // namespace

Verb add_elect(CLI::App& app) {
  auto f = std::make_shared<ElectFlags>();
  CLI::App* cmd = app.add_subcommand("elect", "Leader election: one leader runs CMD, the others wait and take over");
  // Not required of CLI11: `elect state …` names its election after the sub-verb.
  cmd->add_option("name", f->name, "Election (lease) name, e.g. scheduler")->check(user_lease_name_validator());
  cmd->add_option("--ttl", f->ttl, "Lease TTL, 1s to 1h: a dead leader is replaced within TTL + TTL/3")
      ->capture_default_str()
      ->option_text("DUR")
      ->check(duration_validator());
  auto* observe_flag = cmd->add_flag("--observe", f->observe, "Print who leads (swarm.elect.v1 lines), then each change");
  auto* resign_flag = cmd->add_flag("--resign", f->resign, "Ask the current leader to step down (from any host)");
  cmd->add_option("--to", f->to, "With --resign: the waiting candidate (its --holder) that leads next; exit 4 if it is "
                                 "not waiting")
      ->option_text("HOLDER")
      ->check(holder_validator())
      ->needs(resign_flag);
  auto* check_flag =
      cmd->add_flag("--check", f->check, "Exit 0 if --token is the current leader's token, 3 if not (one round trip)");
  auto* token_option = cmd->add_option("--token", f->token, "A leader's fencing token ($SWARM_FENCING_TOKEN), for --check")
                           ->option_text("N")
                           ->check(fencing_token_validator());
  auto* all_flag = cmd->add_flag("--all", f->all,
                                 "Run CMD on every candidate, leader or not: SWARM_LEADER=1|0 at start, SIGUSR1 when it "
                                 "becomes leader, SIGUSR2 when it stops (the token is in $SWARM_FENCING_TOKEN_FILE)");
  all_flag->excludes(observe_flag)->excludes(resign_flag);
  observe_flag->excludes(resign_flag);
  check_flag->excludes(observe_flag)->excludes(resign_flag)->excludes(all_flag);
  check_flag->needs(token_option);
  token_option->needs(check_flag);
  CLI::App* state = add_state(*cmd, *f);
  cmd->add_option("--holder", f->holder, "Who leads, shown to others (default: HOST:PID)")->check(holder_validator());
  cmd->add_option("--priority", f->priority,
                  "0 to 1000 (default 0): waiting candidates are granted by priority, higher first, then arrival; "
                  "a leader is never unseated")
      ->option_text("N")
      ->transform(decimal_in(0, static_cast<std::int64_t>(swarm::kMaxElectionPriority)));
  cmd->add_option("--min-term", f->min_term,
                  "Once leader, step down when asked (--resign) only after leading this long (up to 1h); a lost "
                  "lease still stops CMD at once")
      ->option_text("DUR")
      ->check(duration_validator());
  cmd->add_option("command", f->command, "The leader's command, after --")->option_text("-- CMD...");
  cmd->footer(
      "Examples:\n"
      "  swarm elect scheduler -- ./scheduler        # on each of three machines\n"
      "  swarm elect scheduler --observe             # one JSON line per change of leader\n"
      "  swarm elect scheduler --resign              # the leader stops ./scheduler, the next takes over\n"
      "  swarm elect scheduler --check --token \"$SWARM_FENCING_TOKEN\" && act   # gate each act on leading\n"
      "  swarm elect dispatch --all -- ./agent       # every candidate runs ./agent; only the leader dispatches\n"
      "When CMD ends the leader resigns and swarm exits with CMD's status.\n"
      "With --all, CMD starts at once on every candidate and is never stopped by swarm: SIGUSR1 says it\n"
      "leads (the token is in $SWARM_FENCING_TOKEN_FILE), SIGUSR2 that it no longer does, at least TTL/5\n"
      "before anyone else can lead; it must not act as leader after it. Asked to step down, it gets\n"
      "SIGUSR2 and waits in line again.");
  return {cmd, [f, state](Context& ctx) { return run_elect(ctx, *f, state->parsed()); }};
}

}  // namespace cli
