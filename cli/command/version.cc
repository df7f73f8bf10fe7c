// swarm version: this swarm, the nats-server `up` would start here, and the
// one the workspace runs on with what it lacks (adr/0052).
#include "cli/command/command_line.h"
#include "cli/command/context.h"
#include "cli/verbs/documents/server.h"
#include "swarm/base/text.h"
#include "swarm/workspace/bootstrap.h"

namespace cli {

Verb add_version(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "version", "Show this swarm's version, the nats-server `swarm up` starts, and (in a workspace) the server it runs "
                 "on and what that server lacks");
  cmd->footer("Example:\n  swarm version\n"
              "`swarm up` starts $SWARM_NATS_SERVER when it is set, else the newest of the nats-server beside swarm\n"
              "(the current release, which the setup builds) and the first on PATH. A server older than " +
              std::string(swarm::current_nats_release()) +
              " is named with what it lacks: durability (2.9 syncs about once a minute), the\n"
              "replicated CAS fix (2.9.21), the purge advisory (2.10.27 / 2.11.1).");
  return {cmd, [](Context& ctx) {
            swarm::Json doc = swarm::Json::object();
            std::string_view mine = version();  // "swarm 0.1.0"
            if (mine.rfind("swarm ", 0) == 0) mine.remove_prefix(6);
            doc.set("swarm", std::string(mine));
            doc.set("current_nats_release", std::string(swarm::current_nats_release()));
            std::string human = "swarm " + std::string(mine) + "\n";
            std::optional<swarm::ServerProgram> chosen;
            std::string refused;
            try {
              chosen = swarm::choose_nats_server();
            } catch (const swarm::Error& e) {
              refused = e.what();  // a $SWARM_NATS_SERVER that names no program: said, not fatal here
            }
            if (!refused.empty()) {
              doc.set_null("embedded_default");
              doc.set("embedded_default_error", refused);
              human += "embedded default: none: " + swarm::printable(refused) + "\n";
            } else if (chosen) {
              swarm::Json start = swarm::Json::object();
              start.set("path", chosen->path).set("version", chosen->version).set("from", chosen->from);
              doc.set("embedded_default", std::move(start));
              human += "embedded default: nats-server " + (chosen->version.empty() ? "(version unknown)" : chosen->version) +
                       " (" + swarm::printable(chosen->path) + ", " + chosen->from + ")";
              if (swarm::release_before(chosen->version, 2, 10))
                human += ": older than 2.10, it cannot sync every write (current release: " +
                         std::string(swarm::current_nats_release()) + ")";
              human += "\n";
            } else {
              doc.set_null("embedded_default");
              human += "embedded default: none (no nats-server beside swarm or on PATH; scripts/setup.sh builds the "
                       "current release)\n";
            }
            // In a workspace: the server it runs on. Outside one, or with its
            // server down, only the above.
            std::optional<swarm::Workspace> ws;
            swarm::WorkspaceConfig config;
            try {
              ws = ctx.workspace();
              config = ws->load_config();
            } catch (const swarm::Error&) {
              ws.reset();
            }
            if (!ws) {
              doc.set_null("workspace");
              ctx.out().result("version", human, std::move(doc));
              return 0;
            }
            swarm::Json at = swarm::Json::object();
            at.set("root", ws->root().string());
            try {
              kv::Connection nats = swarm::connect_nats(ctx.connection_options(&config));
              const auto server = swarm::workspace_server(nats, config.embedded ? ws->nats_dir() : std::filesystem::path());
              human += "workspace server: " + server_line(server) + "\n";
              for (const auto& lack : server.lacks) human += "  lacks " + lack.what + ": " + lack.detail + "\n";
              at.set("server", server_json(server));
            } catch (const swarm::Error& e) {
              human += "workspace server: not reached (" + swarm::printable(e.what()) + ")\n";
              at.set_null("server");
              at.set("error", std::string(e.what()));
            }
            doc.set("workspace", std::move(at));
            ctx.out().result("version", human, std::move(doc));
            return 0;
          }};
}

}  // namespace cli
