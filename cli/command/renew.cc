// swarm renew: heartbeat.
#include "cli/command/context.h"

namespace cli {

Verb add_renew(CLI::App& app) {
  auto slot = std::make_shared<std::string>();
  auto session = std::make_shared<std::string>();
  auto status = std::make_shared<std::string>();
  auto note = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("renew", "Heartbeat: CAS-bump the slot's last_renewed (owning host only)");
  add_slot_option(*cmd, *slot);
  add_session_option(*cmd, *session);
  auto* status_option = cmd->add_option("--status", *status,
                                        "Say what the agent does, in the same write: working, blocked, idle or "
                                        "waiting ('' says nothing)")
                            ->option_text("STATUS")
                            ->check(validator_of([](const std::string& t) { swarm::require_presence({.status = t}); },
                                                 "STATUS"));
  auto* note_option =
      cmd->add_option("--note", *note, "A line on what it does (at most 200 bytes; '' clears it)")
          ->option_text("TEXT")
          ->check(validator_of([](const std::string& t) { swarm::require_presence({.note = t}); }, "TEXT"));
  cmd->footer(
      "Examples:\n"
      "  swarm renew --slot render\n"
      "  swarm renew --status blocked --note 'waiting for the API review'   # inside the slot's worktree\n"
      "status, serve and /metrics (swarm_agents{status}) show what it said.");
  return {cmd, [slot, session, status, note, status_option, note_option](Context& ctx) {
            *slot = ctx.slot_of(*slot);
            swarm::Presence presence;
            if (status_option->count() > 0) presence.status = *status;
            if (note_option->count() > 0) presence.note = *note;
            auto lifecycle = ctx.lifecycle();
            std::vector<std::string> warnings;
            auto revision = lifecycle.renew(*slot, &warnings, session_of(*session), presence);
            for (const auto& w : warnings) ctx.out().warn(w);
            swarm::Json doc = swarm::Json::object();
            doc.set("slot", *slot).set("revision", revision);
            ctx.out().result("renew", "renewed slot " + *slot + " (revision " + std::to_string(revision) + ")",
                             std::move(doc));
            return 0;
          }};
}

}  // namespace cli
