// swarm down: stop the embedded nats-server (its data stays).
#include "cli/command/context.h"
#include "swarm/slots/liveness.h"
#include "swarm/workspace/bootstrap.h"

namespace cli {

namespace {

// Names the live sessions that the server going down leaves without NATS
// (nothing when it cannot tell quickly: the server may be gone already).
void warn_live_sessions(Context& ctx) {
  try {
    Globals quick = ctx.globals();
    quick.timeout = "1s";
    Context bounded(quick);
    const auto config = bounded.workspace().load_config();
    if (!config.embedded) return;
    std::vector<std::string> live;
    auto sessions = bounded.sessions();
    const auto clock = sessions.store.server_clock();
    const auto now = clock.now();
    const auto ttl = sessions.store.ttl();
    const auto margin = swarm::observer_margin(ttl, clock.uncertainty);
    for (const auto& e : sessions.store.list())
      if (!e.corrupt() && swarm::observed_state(swarm::age_of(e.stored_at, now), ttl, margin) != swarm::State::stale)
        live.push_back(e.slot);
    if (live.empty()) return;
    std::string names;
    for (std::size_t i = 0; i < live.size() && i < 5; ++i) names += (i ? ", " : "") + live[i];
    if (live.size() > 5) names += ", ...";
    const bool one = live.size() == 1;
    ctx.out().warn(std::to_string(live.size()) + (one ? " live session (" : " live sessions (") + names +
                   (one ? ") loses its server: its agent cannot commit, renew or close until `swarm up`; "
                          "`swarm down --force` says nothing of it"
                        : ") lose their server: their agents cannot commit, renew or close until `swarm up`; "
                          "`swarm down --force` says nothing of them"));
  } catch (const std::exception&) {
    // Down goes on: this was only a warning.
  }
}

}  // namespace

Verb add_down(CLI::App& app) {
  auto force = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("down", "Stop the embedded nats-server that `swarm up` started (keeps its data)");
  cmd->add_flag("--force", *force, "Do not warn about live sessions that lose their server");
  cmd->footer("Example:\n  swarm down        # `swarm up` restarts it on the same data\n"
              "Live sessions of the workspace are named in a warning first: their agents cannot commit, renew\n"
              "or close until `swarm up` starts the server again.");
  return {cmd, [force](Context& ctx) {
            auto ws = ctx.workspace();
            if (!*force) warn_live_sessions(ctx);
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
