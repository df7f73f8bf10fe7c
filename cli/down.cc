// swarm down: stop the embedded nats-server (its data stays).
#include "cli/context.h"
#include "swarm/bootstrap.h"

namespace cli {

Verb add_down(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("down", "Stop the embedded nats-server that `swarm up` started (keeps its data)");
  cmd->footer("Example:\n  swarm down        # `swarm up` restarts it on the same data");
  return {cmd, [](Context& ctx) {
            auto ws = ctx.workspace();
            auto r = swarm::down(ws, ctx.timeout());
            std::string human;
            if (!r.embedded)
              human = "nothing to stop: this workspace uses an external NATS server";
            else if (!r.stopped)
              human = "the embedded nats-server was not running";
            else
              human = "stopped the embedded nats-server (pid " + std::to_string(*r.pid) + "); its data stays in " +
                      ws.nats_dir().string();
            swarm::Json doc = swarm::Json::object();
            doc.set("workspace", ws.root().string()).set("embedded", r.embedded).set("stopped", r.stopped);
            if (r.pid) doc.set("pid", static_cast<std::int64_t>(*r.pid));
            else doc.set_null("pid");
            ctx.out().result("down", human, std::move(doc));
            return 0;
          }};
}

}  // namespace cli
