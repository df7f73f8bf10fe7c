// swarm join: take a slot and print its worktree path.
#include <unistd.h>

#include "cli/context.h"
#include "swarm/liveness.h"

namespace cli {

namespace {
struct JoinFlags {
  std::string slot;
  std::string task;
  bool force = false;
};
}  // namespace

Verb add_join(CLI::App& app) {
  auto flags = std::make_shared<JoinFlags>();
  CLI::App* cmd = app.add_subcommand("join", "Take a slot: record the session, make its worktree, print the path");
  cmd->add_option("--slot", flags->slot, "Slot name: 1-63 of [A-Za-z0-9_-], starting with a letter or digit")
      ->required()
      ->check(slot_name_validator());
  cmd->add_option("--task", flags->task, "Task id the slot works on, e.g. T-42")
      ->required()
      ->check(task_id_validator());
  cmd->add_flag("--force", flags->force, "Take over a live session of this host (never another host's)");
  cmd->footer(
      "Example:\n"
      "  cd \"$(swarm join --slot render --task T-42)\"\n"
      "Refuses a live session of another host (exit 5) or of this host without --force (exit 3);\n"
      "replaces a stale session of this host.");
  return {cmd, [flags](Context& ctx) {
            auto lifecycle = ctx.lifecycle();
            auto r = lifecycle.join(flags->slot, flags->task, flags->force, getpid());
            if (r.replaced)
              ctx.out().note("replaced the earlier session of slot " + flags->slot + " (task " +
                             r.replaced->session->task_id + ")");
            if (r.resumed_worktree) ctx.out().note("reusing the existing worktree of slot " + flags->slot);
            swarm::Json doc = swarm::Json::object();
            doc.set("slot", flags->slot)
                .set("task_id", flags->task)
                .set("worktree", r.worktree.string())
                .set("branch", "swarm/" + flags->slot)
                .set("revision", r.revision)
                .set("replaced", r.replaced.has_value())
                .set("resumed_worktree", r.resumed_worktree);
            ctx.out().result("join", r.worktree.string(), std::move(doc));
            return 0;
          }};
}

}  // namespace cli
