// swarm run: an agent's whole life under one process (swarm/run/agent_run.h):
// join, run AGENT in the worktree, keep the session alive while it thinks,
// close as it ended, optionally commit what is left and land.
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "cli/verbs/exit_code.h"
#include "swarm/git/backend.h"
#include "cli/command/lease_wait.h"
#include "cli/command/land.h"
#include "cli/command/typed_command.h"
#include "cli/verbs/documents/documents.h"
#include "swarm/base/child_process.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/text.h"
#include "swarm/run/agent_run.h"
#include "cli/verbs/agent_door.h"
#include "cli/verbs/join.h"
#include "cli/verbs/remote.h"

namespace cli {

namespace {

struct RunFlags : JoinRequest {
  bool keep = false;
  bool no_artifact = false;
  std::string commit;
  bool land = false;
  std::string grace = "10s";
  std::vector<std::string> words;  // after the first --: [CHECK… --] AGENT…
};

// --grace: how long an agent asked to stop has before SIGKILL.
constexpr std::chrono::milliseconds kMaxGrace = std::chrono::hours(1);

// The words after the first "--": the AGENT, or with --land and a second
// "--" among them, the CHECK before it and the AGENT after (an empty CHECK:
// only the workspace's). Bad usage is exit 2 before any I/O.
std::pair<std::vector<std::string>, std::vector<std::string>> check_and_agent(const RunFlags& f) {
  const auto second = std::find(f.words.begin(), f.words.end(), "--");
  std::vector<std::string> check;
  std::vector<std::string> agent;
  if (f.land && second != f.words.end()) {
    check.assign(f.words.begin(), second);
    agent.assign(second + 1, f.words.end());
  } else {
    agent = f.words;
  }
  if (agent.empty())
    throw swarm::Error(swarm::Errc::bad_input,
                       "no agent to run: give it after --, e.g. swarm run --slot render --task T-42 -- ./agent.sh");
  // A relative path is the current folder's, as every path given (the
  // agent runs in the worktree, where ./agent.sh would be another file).
  if (agent.front().find('/') != std::string::npos && agent.front().front() != '/')
    agent.front() = (std::filesystem::current_path() / agent.front()).lexically_normal().string();
  return {check, agent};
}

// The exit of a run whose agent ended and whose slot was finished (or not):
// the agent's status unless swarm failed after it.
struct RunReport {
  swarm::Json doc = swarm::Json::object();
  std::string said;  // one line for people, on stderr
  int exit = 0;
};

RunReport report_of(const swarm::RunOutcome& r, const std::vector<std::string>& agent) {
  RunReport out;
  out.exit = r.status;
  out.doc.set("slot", r.slot)
      .set("task", r.task)
      .set("session", r.session)
      .set("worktree", r.worktree.string())
      .set("agent", swarm::Json::strings(agent))
      .set("exit", r.status)
      .set("ended", r.ended);
  if (r.result.empty()) out.doc.set_null("result");
  else out.doc.set("result", r.result);
  out.doc.set("closed", r.closed).set("landed", false);
  if (r.committed) out.doc.set("commit", *r.committed);
  std::string how = r.ended == "session_lost"
                        ? "its session was lost (" + std::string(swarm::to_string(*r.lost)) + ": " + r.lost_why + ")"
                    : r.ended == "signalled" ? "signal " + std::to_string(r.status - 128) + " ended it"
                                             : "it exited " + std::to_string(r.status);
  if (r.lost) {
    out.doc.set("lost", std::string(swarm::to_string(*r.lost))).set("lost_why", swarm::printable(r.lost_why));
    // Taken or evicted is a conflict; out of reach is NATS's.
    out.exit = *r.lost == swarm::SessionKeeper::Loss::unreachable ? kUnavailable : kConflict;
    out.said = "the agent of slot " + r.slot + " was stopped: " + how + "; the slot is no longer this run's";
  } else if (r.failed) {
    out.doc.set("error", swarm::printable(r.failed->what()));
    out.said = "the agent of slot " + r.slot + " ended (" + how + "), and finishing the slot failed: " +
               swarm::printable(r.failed->what());
    out.exit = exit_code_for(r.failed->kind());
  } else if (r.closed && !r.why.empty()) {
    // Exit 0 with nothing to show: close's artifact rule made it a fail.
    out.doc.set("why", r.why);
    out.said = "slot " + r.slot + " closed as fail: " + r.why + " (commit, give --commit MSG, or --no-artifact " +
               "for work that needs none); its task goes back to the queue";
    out.exit = kConflict;
  } else if (r.closed) {
    out.said = "slot " + r.slot + " closed as " + r.result + ": " + how;
  } else {
    out.said = "the agent of slot " + r.slot + " ended (" + how + "); the slot stays open (--keep)";
  }
  return out;
}

// Before anything is written: flags that make sense together; the grace.
std::chrono::milliseconds require_run_flags(const RunFlags& f) {
  if (f.land && f.keep)
    throw swarm::Error(swarm::Errc::bad_input, "--land lands the closed slot, and --keep leaves it open: "
                                               "give one of them");
  if (f.no_artifact && f.keep)
    throw swarm::Error(swarm::Errc::bad_input, "--no-artifact is how the closed slot's success is judged, "
                                               "and --keep leaves it open: give one of them");
  if (!f.commit.empty() && f.keep)
    throw swarm::Error(swarm::Errc::bad_input, "--commit commits what is left when the slot is closed, "
                                               "and --keep leaves it open: give one of them");
  const auto grace = swarm::parse_duration(f.grace);
  if (grace > kMaxGrace)
    throw swarm::Error(swarm::Errc::bad_input, "bad --grace '" + swarm::printable(f.grace) +
                                                   "': at most 1h");
  return grace;
}

swarm::RunOptions run_options_of(const RunFlags& f, const std::vector<std::string>& agent, std::chrono::milliseconds grace) {
  swarm::RunOptions o;
  o.slot = f.slot;
  o.task = f.task;
  o.next = f.next;
  o.labels = f.labels;
  if (!f.wait.empty()) o.wait = swarm::parse_duration(f.wait);
  o.takeover = f.force ? swarm::Takeover::force : swarm::Takeover::only_stale;
  o.base = f.base;
  o.ports = static_cast<unsigned>(f.ports);
  o.agent = agent;
  o.keep = f.keep;
  o.no_artifact = f.no_artifact;
  if (!f.commit.empty()) o.commit = f.commit;
  o.grace = grace;
  return o;
}

// run: the agent's whole life, then its land when asked.
int run(Context& ctx, RunFlags& f) {
  f.slot = ctx.slot_of(f.slot);
  auto [check, agent] = check_and_agent(f);
  const auto grace = require_run_flags(f);
  require_join_request(f);
  swarm::require_runnable(agent.front());  // before anything is written
  if (f.land) require_land_check(ctx, check);
  SignalRouter signals;  // before any thread is made
  auto git = swarm::prefetch_git_backend();  // overlaps the NATS round trips below
  auto lifecycle = ctx.lifecycle();
  // The agent's door: its `swarm VERB` answered by this run, on
  // this run's connection (after the signal router: its threads
  // block the signals it routes).
  Globals door_globals = ctx.globals();
  door_globals.workspace = ctx.workspace().root().string();
  const std::unique_ptr<AgentDoor> door = open_agent_door(door_globals);
  swarm::RunOptions o = run_options_of(f, agent, grace);
  if (door) o.env.emplace_back(kSocketVariable, door->path());
  o.running = [&signals](swarm::ChildProcess* child) { signals.forward_to(child); };
  o.signalled = [&signals] { return signals.received(); };
  o.note = [&ctx](const std::string& what) { ctx.out().note(what); };
  o.warn = [&ctx](const std::string& what) { ctx.out().warn(what); };
  const swarm::RunOutcome outcome = swarm::run_agent(lifecycle, o);
  for (const auto& w : outcome.warnings) ctx.out().warn(w);
  RunReport report = report_of(outcome, agent);
  if (f.land && outcome.closed && outcome.result == "success") {
    auto landed = land_slot(ctx, f.slot, check, signals);
    if (!landed) {
      report.said += "; the land was stopped by a signal before it began";
      report.exit = exit_for_signal(signals.received());
    } else {
      report.doc.set("land", land_document(*landed));
      const bool refused = landed->outcome == swarm::LandResult::Outcome::refused;
      report.doc.set("landed", !refused);
      report.said += "; " + land_summary(*landed);
      if (refused) report.exit = kConflict;
    }
  } else if (f.land && report.exit == outcome.status && !outcome.lost) {
    report.said += "; not landed (it did not close as success)";
  }
  if (ctx.out().json()) {
    ctx.out().result("run", "", std::move(report.doc));
  } else {
    ctx.out().note(report.said);
  }
  return report.exit;
}

}  // namespace

Verb add_run(CLI::App& app) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand(
      "run", "An agent's whole life: join, run AGENT in the worktree kept alive however long it thinks, close");
  bind_options(*cmd, join_options(), std::shared_ptr<void>(f, static_cast<JoinRequest*>(f.get())));
  cmd->add_flag("--keep", f->keep, "Leave the slot open when AGENT ends (no close)");
  cmd->add_option("--commit", f->commit,
                  "When AGENT exits 0, first commit what it left uncommitted with this message")
      ->option_text("MSG")
      ->check(validator_of(
          [](const std::string& m) {
            if (m.empty()) throw swarm::Error(swarm::Errc::bad_input, "--commit needs a message");
          },
          "MSG"));
  cmd->add_flag("--no-artifact", f->no_artifact,
                "When AGENT exits 0 having committed nothing in this run, close as success all the same (as close "
                "--no-artifact); without it that is a fail: exit 3, the task back to the queue");
  cmd->add_flag("--land", f->land,
                "After a success, land the slot as `swarm land --slot S` would (the workspace's check first); a "
                "CHECK of its own goes between two --: --land -- CHECK... -- AGENT...");
  cmd->add_option("--grace", f->grace, "After a signal to run (given to AGENT), how long AGENT has before SIGKILL, "
                                     "at most 1h (default 10s)")
      ->option_text("DUR")
      ->check(duration_validator());
  cmd->add_option("agent", f->words, "The agent to run, after --")->option_text("-- AGENT...");
  cmd->footer(
      "Examples:\n"
      "  swarm run --slot render --task T-42 -- claude -p 'fix the render test'\n"
      "  swarm run --slot render --task T-42 --commit 'render: fix' --land -- ./agent.sh\n"
      "  swarm run --slot render --task T-42 --land -- make test -- ./agent.sh   # a check of its own\n"
      "AGENT runs in the slot's worktree with SWARM_SLOT, SWARM_SESSION, SWARM_WORKTREE, SWARM_TASK,\n"
      "SWARM_WORKSPACE (and SWARM_PORT_BASE, SWARM_PORTS with --ports), and the terminal. The session,\n"
      "its task lease and port block are renewed every TTL/3 while AGENT lives, however long it thinks;\n"
      "AGENT says what it does with `swarm renew --status working|blocked|idle|waiting --note TEXT`.\n"
      "When AGENT ends the slot is closed: success on exit 0, else fail (uncommitted files kept in\n"
      ".swarm/recovery/). A success needs a commit in this run (AGENT's, or --commit's): an exit 0 with\n"
      "none closes as fail, exit 3, unless --no-artifact. If the session is lost (taken over, evicted, NATS out of reach) AGENT gets\n"
      "SIGTERM, then SIGKILL before the session's deadline, and run exits 3 (7: out of reach). If run\n"
      "dies, AGENT gets SIGKILL and status shows the session dead. SIGINT, SIGTERM and SIGHUP go to\n"
      "AGENT; --grace bounds the wait for it. Exits as AGENT did (128+N for signal N) unless swarm\n"
      "failed: then swarm's code (a refused land is 3). With --json: swarm.run.v1 on the last line of\n"
      "stdout, after what AGENT printed. With --land, a second -- splits CHECK from AGENT; an AGENT\n"
      "whose own words hold -- takes an empty CHECK: --land -- -- AGENT....");
  return {cmd, [f](Context& ctx) { return run(ctx, *f); }};
}

}  // namespace cli
