// swarm join: take a slot and print its worktree path (or, with --env,
// shell assignments for eval). Its options are run's too (join.h).
#include "cli/verbs/join.h"

#include "cli/verbs/progress.h"
#include "cli/verbs/verbs.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/port_range.h"
#include "swarm/base/text.h"
#include "swarm/git/backend.h"
#include "swarm/tasks/task.h"

namespace cli {

namespace {

void require_base(const std::string& ref) {
  if (ref.empty() || ref.front() == '-' || !swarm::is_plain_text(ref) || ref.find(' ') != std::string::npos)
    throw swarm::Error(swarm::Errc::bad_input,
                       "bad --base '" + swarm::printable(ref.substr(0, 80)) + "': name a branch, tag or commit of the hub");
}

// What a join says besides its result: a branch kept or parked, a session
// replaced, a worktree reused, its ports.
void report_join(const JoinRequest& r, const swarm::JoinResult& j, Reporter& report) {
  if (!j.started.kept_ref.empty())
    report.note("kept the unlanded branch swarm/" + r.slot + " under " + j.started.kept_ref);
  if (!j.started.parked.empty())
    report.note("the branch's earlier task stays reviewable and landable by itself, as " + j.started.parked +
                "; this task starts from " +
                (j.started.from == "parked" ? "its own earlier head" : "the onto branch's tip"));
  if (j.replaced)
    report.note("replaced the earlier session of slot " + r.slot + " (task " +
                swarm::printable(j.replaced->session->task_id) + ")");
  if (j.resumed_worktree) report.note("reusing the existing worktree of slot " + r.slot);
  const auto block = j.session.port_block();
  if (block && !r.env)
    report.note("ports " + block->text() + " are the slot's (SWARM_PORT_BASE, SWARM_PORTS with --env)");
}

swarm::Json join_json(const JoinRequest& r, const swarm::JoinResult& j) {
  swarm::Json doc = swarm::Json::object();
  doc.set("slot", r.slot)
      .set("task_id", j.session.task_id)
      .set("worktree", j.worktree.string())
      .set("branch", "swarm/" + r.slot)
      .set("revision", j.revision)
      .set("session_token", j.revision)
      .set("replaced", j.replaced.has_value())
      .set("resumed_worktree", j.resumed_worktree);
  if (!j.started.from.empty()) doc.set("started_from", j.started.from);
  if (!j.base.empty()) doc.set("base", j.base);
  if (!j.started.kept_ref.empty()) doc.set("kept_ref", j.started.kept_ref);
  if (!j.started.parked.empty()) doc.set("parked", j.started.parked);
  if (const auto block = j.session.port_block())
    doc.set("port_base", static_cast<std::uint64_t>(block->base)).set("ports", static_cast<std::uint64_t>(block->count));
  return doc;
}

// The path; with --env the assignments, so that the agent's later verbs
// act only for this session (a successor's join --force makes them exit 3).
std::string join_text(const JoinRequest& r, const swarm::JoinResult& j) {
  if (!r.env) return j.worktree.string();
  std::string text = "export SWARM_SLOT=" + swarm::shell_word(r.slot) + "\nexport SWARM_SESSION=" +
                     std::to_string(j.revision) + "\nexport SWARM_WORKTREE=" + swarm::shell_word(j.worktree.string()) +
                     "\n";
  if (const auto block = j.session.port_block())
    text += "export SWARM_PORT_BASE=" + std::to_string(block->base) + "\nexport SWARM_PORTS=" +
            std::to_string(block->count) + "\n";
  return text;
}

VerbResult join(const JoinRequest& r, Context& ctx, Reporter& report) {
  auto git = swarm::prefetch_git_backend();  // overlaps the NATS round trips below
  auto lifecycle = ctx.lifecycle();
  Progress progress("joining slot " + r.slot + " (cloning the hub)", ctx.draws_progress());
  const auto j = join_by(lifecycle, r, ctx.caller_pid(), {});
  progress.done();
  report_join(r, j, report);
  VerbResult out;
  out.doc = join_json(r, j);
  out.text = join_text(r, j);
  return out;
}

}  // namespace

std::vector<BoundOption> join_options() {
  return OptionTable<JoinRequest>()
      .text(&JoinRequest::slot, slot_option("Slot name: 1-63 of [A-Za-z0-9_-], starting with a letter or digit"))
      .text(&JoinRequest::task,
            task_id_option("--task", "T", "Task id the slot works on, e.g. T-42 (a queued task is claimed)"))
      .flag(&JoinRequest::next, {.name = "--next",
                                 .help = "Claim the queue's most urgent ready task (then the oldest) instead of "
                                         "--task; none ready is exit 4"})
      .texts(&JoinRequest::labels, task_label_option("With --next: only tasks with this label (repeat: all of them)"))
      .text(&JoinRequest::wait, {.name = "--wait",
                                 .value_name = "DUR",
                                 .help = "With --next: wait this long for a ready task (default: none)",
                                 .check = [](const std::string& d) { swarm::parse_duration(d); }})
      .flag(&JoinRequest::force, {.name = "--force", .help = "Take over a live session of this host (never another "
                                                             "host's)"})
      .text(&JoinRequest::base, {.name = "--base",
                                 .value_name = "REF",
                                 .help = "Start the slot's branch from REF (a hub branch, tag or commit) instead of "
                                         "its old branch or the onto branch; an unlanded old branch is kept under "
                                         "refs/recovery/ first",
                                 .check = require_base})
      .number(&JoinRequest::ports, {.name = "--ports",
                                    .value_name = "K",
                                    .help = "Also take a block of K consecutive ports of the workspace's range (up "
                                            "--ports A-B) that no live slot on any host holds: renewed with the "
                                            "session, released by close, free when it expires",
                                    .min = 1,
                                    .max = swarm::kMaxPortBlock})
      .done();
}

void require_join_request(const JoinRequest& r) {
  if (!r.task.empty() && r.next) throw swarm::Error(swarm::Errc::bad_input, "--task excludes --next: give one of them");
  if (r.task.empty() && !r.next)
    throw swarm::Error(swarm::Errc::bad_input, "give --task T (the task the slot works on) or --next (the queue's "
                                               "most urgent ready task)");
  if (!r.next && !r.labels.empty()) throw swarm::Error(swarm::Errc::bad_input, "--label needs --next");
  if (!r.next && !r.wait.empty()) throw swarm::Error(swarm::Errc::bad_input, "--wait needs --next");
}

swarm::JoinResult join_by(swarm::SlotLifecycle& lifecycle, const JoinRequest& r, std::int64_t leaf_pid,
                          swarm::Joiner joiner) {
  const auto takeover = r.force ? swarm::Takeover::force : swarm::Takeover::only_stale;
  const auto ports = static_cast<unsigned>(r.ports);
  if (r.next)
    return lifecycle.join_next(r.slot, r.labels, r.wait.empty() ? std::chrono::milliseconds(0) : swarm::parse_duration(r.wait),
                               takeover, leaf_pid, r.base, ports, joiner);
  return lifecycle.join(r.slot, r.task, takeover, leaf_pid, r.base, ports, joiner);
}

VerbSpec join_verb() {
  auto options = join_options();
  auto own = OptionTable<JoinRequest>()
                 .flag(&JoinRequest::env, {.name = "--env",
                                           .help = "Print shell assignments for eval instead of the path: SWARM_SLOT, "
                                                   "SWARM_SESSION (the session token), SWARM_WORKTREE, and with "
                                                   "--ports SWARM_PORT_BASE (the first port) and SWARM_PORTS (K)"})
                 .done();
  options.insert(options.end(), own.begin(), own.end());
  return make_verb<JoinRequest>(
      {"join"}, "Take a slot: record the session, make its worktree, print the path",
      "Example:\n"
      "  cd \"$(swarm join --slot render --task T-42)\"\n"
      "  eval \"$(swarm join --slot render --task T-42 --env)\" && cd \"$SWARM_WORKTREE\"\n"
      "  swarm join --slot render --task T-43 --base main\n"
      "  eval \"$(swarm join --slot web --task T-44 --ports 10 --env)\"   # ports $SWARM_PORT_BASE.. are the slot's\n"
      "A new worktree continues the slot's branch, unless that branch is landed: then it starts from the\n"
      "onto branch's tip.\n"
      "Refuses a live session of another host (exit 5) or of this host without --force (exit 3);\n"
      "replaces a stale session of this host. --ports when no block of K is free in the range is exit 3.",
      std::move(options), require_join_request, [](JoinRequest& r, const Context& ctx) { resolve_slot(r.slot, ctx); },
      join);
}

}  // namespace cli
