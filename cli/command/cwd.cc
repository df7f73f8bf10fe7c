// swarm cwd: the worktree path, with no NATS round trip.
#include <filesystem>

#include "cli/command/context.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"

namespace cli {

Verb add_cwd(CLI::App& app) {
  auto slot = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("cwd", "Print the slot's worktree path (no NATS round trip)");
  add_slot_option(*cmd, *slot);
  cmd->footer("Example:\n  cd \"$(swarm cwd --slot render)\"");
  return {cmd, [slot](Context& ctx) {
            *slot = ctx.slot_of(*slot);
            auto path = ctx.workspace().worktree(*slot);
            if (!std::filesystem::exists(path))
              throw swarm::Error(swarm::Errc::not_found,
                                 "slot " + *slot + " has no worktree on this host (" + path.string() + ")");
            swarm::Json doc = swarm::Json::object();
            doc.set("slot", *slot).set("worktree", std::filesystem::weakly_canonical(path).string());
            ctx.out().result("cwd", std::filesystem::weakly_canonical(path).string(), std::move(doc));
            return 0;
          }};
}

}  // namespace cli
