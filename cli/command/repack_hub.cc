// swarm _repack-hub: the workspace's local hub repacked when it has too
// many packs (hidden: a commit starts it in the background, adr/0016).
#include "cli/command/context.h"
#include "swarm/git/hub.h"

namespace cli {

Verb add_repack_hub(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("_repack-hub", "Repack the workspace's local hub when it has too many packs");
  cmd->group("");  // hidden: commit starts it
  return {cmd, [](Context& ctx) {
            auto ws = ctx.workspace();
            const swarm::HubLocation hub = ws.load_config().hub_location();
            if (hub.remote()) return 0;  // the server's to keep
            auto r = swarm::Hub::repack(hub.path());
            swarm::Json doc = swarm::Json::object();
            doc.set("busy", r.busy).set("packs_before", r.packs_before).set("packs_after", r.packs_after);
            doc.set("objects", static_cast<std::int64_t>(r.objects));
            ctx.out().result("repack", r.busy ? "another repack is at it\n"
                                              : "packs: " + std::to_string(r.packs_before) + " -> " +
                                                    std::to_string(r.packs_after) + "\n",
                             std::move(doc));
            return 0;
          }};
}

}  // namespace cli
