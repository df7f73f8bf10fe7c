// swarm renew: heartbeat.
#include "cli/context.h"

namespace cli {

Verb add_renew(CLI::App& app) {
  auto slot = std::make_shared<std::string>();
  auto session = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("renew", "Heartbeat: CAS-bump the slot's last_renewed (owning host only)");
  add_slot_option(*cmd, *slot);
  add_session_option(*cmd, *session);
  cmd->footer("Example:\n  swarm renew --slot render");
  return {cmd, [slot, session](Context& ctx) {
            *slot = ctx.slot_of(*slot);
            auto lifecycle = ctx.lifecycle();
            std::vector<std::string> warnings;
            auto revision = lifecycle.renew(*slot, &warnings, session_of(*session));
            for (const auto& w : warnings) ctx.out().warn(w);
            swarm::Json doc = swarm::Json::object();
            doc.set("slot", *slot).set("revision", revision);
            ctx.out().result("renew", "renewed slot " + *slot + " (revision " + std::to_string(revision) + ")",
                             std::move(doc));
            return 0;
          }};
}

}  // namespace cli
