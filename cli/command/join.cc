// swarm join: take a slot and print its worktree path.
#include <unistd.h>

#include "cli/command/context.h"
#include "swarm/git/backend.h"
#include "cli/verbs/progress.h"
#include "swarm/base/duration.h"
#include "swarm/base/text.h"
#include "swarm/slots/liveness.h"

namespace cli {

namespace {
struct JoinFlags : JoinOptions {
  bool env = false;
};

}  // namespace

swarm::JoinResult join_by(swarm::SlotLifecycle& lifecycle, const JoinOptions& flags, swarm::Takeover takeover,
                          std::int64_t leaf_pid, swarm::Joiner joiner) {
  if (flags.next)
    return lifecycle.join_next(flags.slot, flags.labels,
                               flags.wait.empty() ? std::chrono::milliseconds(0) : swarm::parse_duration(flags.wait),
                               takeover, leaf_pid, flags.base, flags.ports, joiner);
  return lifecycle.join(flags.slot, flags.task, takeover, leaf_pid, flags.base, flags.ports, joiner);
}

void require_task_or_next(const JoinOptions& flags) {
  if (flags.task.empty() && !flags.next)
    throw swarm::Error(swarm::Errc::bad_input, "give --task T (the task the slot works on) or --next (the queue's "
                                               "most urgent ready task)");
}

void add_join_options(CLI::App& cmd, JoinOptions& flags) {
  add_slot_option(cmd, flags.slot, "Slot name: 1-63 of [A-Za-z0-9_-], starting with a letter or digit");
  auto* task = cmd.add_option("--task", flags.task, "Task id the slot works on, e.g. T-42 (a queued task is claimed)")
                   ->option_text("T")
                   ->check(task_id_validator());
  auto* next = cmd.add_flag("--next", flags.next,
                            "Claim the queue's most urgent ready task (then the oldest) instead of --task; none "
                            "ready is exit 4");
  task->excludes(next);
  cmd.add_option("--label", flags.labels, "With --next: only tasks with this label (repeat: all of them)")
      ->option_text("L")
      ->needs(next)
      ->check(validator_of([](const std::string& l) { swarm::require_task_label(l); }, "L"));
  cmd.add_option("--wait", flags.wait, "With --next: wait this long for a ready task (default: none)")
      ->option_text("DUR")
      ->needs(next)
      ->check(duration_validator());
  cmd.add_flag("--force", flags.force, "Take over a live session of this host (never another host's)");
  cmd.add_option("--base", flags.base,
                 "Start the slot's branch from REF (a hub branch, tag or commit) instead of its old branch or the "
                 "onto branch; an unlanded old branch is kept under refs/recovery/ first")
      ->option_text("REF")
      ->check(validator_of(
          [](const std::string& ref) {
            if (ref.empty() || ref.front() == '-' || !swarm::is_plain_text(ref) || ref.find(' ') != std::string::npos)
              throw swarm::Error(swarm::Errc::bad_input, "bad --base '" + swarm::printable(ref.substr(0, 80)) +
                                                             "': name a branch, tag or commit of the hub");
          },
          "REF"));
  cmd.add_option("--ports", flags.ports,
                 "Also take a block of K consecutive ports of the workspace's range (up --ports A-B) that no live "
                 "slot on any host holds: renewed with the session, released by close, free when it expires")
      ->option_text("K")
      ->transform(decimal_in(1, swarm::kMaxPortBlock));
}

Verb add_join(CLI::App& app) {
  auto flags = std::make_shared<JoinFlags>();
  CLI::App* cmd = app.add_subcommand("join", "Take a slot: record the session, make its worktree, print the path");
  add_join_options(*cmd, *flags);
  cmd->add_flag("--env", flags->env,
                "Print shell assignments for eval instead of the path: SWARM_SLOT, SWARM_SESSION (the session "
                "token), SWARM_WORKTREE, and with --ports SWARM_PORT_BASE (the first port) and SWARM_PORTS (K)");
  cmd->footer(
      "Example:\n"
      "  cd \"$(swarm join --slot render --task T-42)\"\n"
      "  eval \"$(swarm join --slot render --task T-42 --env)\" && cd \"$SWARM_WORKTREE\"\n"
      "  swarm join --slot render --task T-43 --base main\n"
      "  eval \"$(swarm join --slot web --task T-44 --ports 10 --env)\"   # ports $SWARM_PORT_BASE.. are the slot's\n"
      "A new worktree continues the slot's branch, unless that branch is landed: then it starts from the\n"
      "onto branch's tip.\n"
      "Refuses a live session of another host (exit 5) or of this host without --force (exit 3);\n"
      "replaces a stale session of this host. --ports when no block of K is free in the range is exit 3.");
  return {cmd, [flags](Context& ctx) {
            require_task_or_next(*flags);
            flags->slot = ctx.slot_of(flags->slot);
            auto git = swarm::prefetch_git_backend();  // overlaps the NATS round trips below
            auto lifecycle = ctx.lifecycle();
            const auto takeover = flags->force ? swarm::Takeover::force : swarm::Takeover::only_stale;
            Progress progress("joining slot " + flags->slot + " (cloning the hub)");
            auto r = join_by(lifecycle, *flags, takeover, getpid(), {});
            progress.done();
            if (!r.started.kept_ref.empty())
              ctx.out().note("kept the unlanded branch swarm/" + flags->slot + " under " + r.started.kept_ref);
            if (!r.started.parked.empty())
              ctx.out().note("the branch's earlier task stays reviewable and landable by itself, as " +
                             r.started.parked + "; this task starts from " +
                             (r.started.from == "parked" ? "its own earlier head" : "the onto branch's tip"));
            if (r.replaced)
              ctx.out().note("replaced the earlier session of slot " + flags->slot + " (task " +
                             swarm::printable(r.replaced->session->task_id) + ")");
            if (r.resumed_worktree) ctx.out().note("reusing the existing worktree of slot " + flags->slot);
            swarm::Json doc = swarm::Json::object();
            doc.set("slot", flags->slot)
                .set("task_id", r.session.task_id)
                .set("worktree", r.worktree.string())
                .set("branch", "swarm/" + flags->slot)
                .set("revision", r.revision)
                .set("session_token", r.revision)
                .set("replaced", r.replaced.has_value())
                .set("resumed_worktree", r.resumed_worktree);
            if (!r.started.from.empty()) doc.set("started_from", r.started.from);
            if (!r.base.empty()) doc.set("base", r.base);
            if (!r.started.kept_ref.empty()) doc.set("kept_ref", r.started.kept_ref);
            if (!r.started.parked.empty()) doc.set("parked", r.started.parked);
            const auto block = r.session.port_block();
            if (block) doc.set("port_base", static_cast<std::uint64_t>(block->base)).set("ports", static_cast<std::uint64_t>(block->count));
            // With --env the agent's later verbs act only for this session
            // (a successor's join --force makes them exit 3).
            std::string human =
                flags->env ? "export SWARM_SLOT=" + swarm::shell_word(flags->slot) + "\nexport SWARM_SESSION=" +
                                 std::to_string(r.revision) + "\nexport SWARM_WORKTREE=" +
                                 swarm::shell_word(r.worktree.string()) + "\n"
                           : r.worktree.string();
            if (flags->env && block)
              human += "export SWARM_PORT_BASE=" + std::to_string(block->base) +
                       "\nexport SWARM_PORTS=" + std::to_string(block->count) + "\n";
            else if (block)
              ctx.out().note("ports " + block->text() + " are the slot's (SWARM_PORT_BASE, SWARM_PORTS with --env)");
            ctx.out().result("join", human, std::move(doc));
            return 0;
          }};
}

}  // namespace cli
