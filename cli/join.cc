// swarm join: take a slot and print its worktree path.
#include <unistd.h>

#include "cli/context.h"
#include "swarm/liveness.h"
#include "swarm/text.h"

namespace cli {

namespace {
struct JoinFlags {
  std::string slot;
  std::string task;
  bool force = false;
  bool env = false;
};

// `value` in single quotes for a POSIX shell (a ' inside closed, escaped, reopened).
std::string shell_quoted(const std::string& value) {
  std::string out = "'";
  for (char c : value) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
}  // namespace

Verb add_join(CLI::App& app) {
  auto flags = std::make_shared<JoinFlags>();
  CLI::App* cmd = app.add_subcommand("join", "Take a slot: record the session, make its worktree, print the path");
  add_slot_option(*cmd, flags->slot, "Slot name: 1-63 of [A-Za-z0-9_-], starting with a letter or digit");
  cmd->add_option("--task", flags->task, "Task id the slot works on, e.g. T-42")
      ->required()
      ->check(task_id_validator());
  cmd->add_flag("--force", flags->force, "Take over a live session of this host (never another host's)");
  cmd->add_flag("--env", flags->env,
                "Print shell assignments for eval instead of the path: SWARM_SLOT, SWARM_SESSION (the session "
                "token), SWARM_WORKTREE");
  cmd->footer(
      "Example:\n"
      "  cd \"$(swarm join --slot render --task T-42)\"\n"
      "  eval \"$(swarm join --slot render --task T-42 --env)\" && cd \"$SWARM_WORKTREE\"\n"
      "Refuses a live session of another host (exit 5) or of this host without --force (exit 3);\n"
      "replaces a stale session of this host.");
  return {cmd, [flags](Context& ctx) {
            flags->slot = ctx.slot_of(flags->slot);
            auto lifecycle = ctx.lifecycle();
            const auto takeover = flags->force ? swarm::Takeover::force : swarm::Takeover::only_stale;
            auto r = lifecycle.join(flags->slot, flags->task, takeover, getpid());
            if (r.replaced)
              ctx.out().note("replaced the earlier session of slot " + flags->slot + " (task " +
                             swarm::printable(r.replaced->session->task_id) + ")");
            if (r.resumed_worktree) ctx.out().note("reusing the existing worktree of slot " + flags->slot);
            swarm::Json doc = swarm::Json::object();
            doc.set("slot", flags->slot)
                .set("task_id", flags->task)
                .set("worktree", r.worktree.string())
                .set("branch", "swarm/" + flags->slot)
                .set("revision", r.revision)
                .set("session_token", r.revision)
                .set("replaced", r.replaced.has_value())
                .set("resumed_worktree", r.resumed_worktree);
            // With --env the agent's later verbs act only for this session
            // (a successor's join --force makes them exit 3).
            const std::string human =
                flags->env ? "export SWARM_SLOT=" + shell_quoted(flags->slot) + "\nexport SWARM_SESSION=" +
                                 std::to_string(r.revision) + "\nexport SWARM_WORKTREE=" +
                                 shell_quoted(r.worktree.string()) + "\n"
                           : r.worktree.string();
            ctx.out().result("join", human, std::move(doc));
            return 0;
          }};
}

}  // namespace cli
