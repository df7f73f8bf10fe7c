#include "cli/command/serve_options.h"

namespace cli {

namespace {
char** g_argv = nullptr;
}  // namespace

void set_program_args(int /*argc*/, char** argv) { g_argv = argv; }
char** program_args() { return g_argv; }

CLI::App* add_serve_command(CLI::App& app, ServeFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "serve", "Serve a read-only view over HTTP: Prometheus metrics, a live dashboard, the verbs' JSON");
  cmd->add_option("--listen", flags.listen,
                  "ADDR:PORT to listen on (default 127.0.0.1:" + std::to_string(kDefaultServePort) +
                      "; port 0: any free one). Only loopback unless an address beyond it is given")
      ->option_text("ADDR:PORT")
      ->check(validator_of([](const std::string& t) { parse_listen(t); }, "ADDR:PORT"));
  cmd->add_flag("--no-auth", flags.no_auth,
                "Serve without the secret: every local user reads the workspace's state (only with a loopback "
                "address)");
  cmd->footer(
      "Paths: /metrics (Prometheus text), / (the dashboard, pushed live), /api/status, /api/leases,\n"
      "/api/branches, /api/tasks, /api/inboxes, /api/log (the verbs' --json documents; /api/log?n=N, JSON Lines).\n"
      "Every request needs the workspace's serve secret (.swarm/serve/token, made by `swarm up`):\n"
      "/metrics and /api/* through Authorization: Bearer SECRET (Prometheus:\n"
      "authorization.credentials_file), the page through the link printed first: its one-time code (never\n"
      "the secret) signs in one browser, and the next link is printed when it is used. A request whose Host\n"
      "is not the listen address, localhost or a loopback address is refused (421); methods other than\n"
      "GET and HEAD are 405. It never writes to NATS, the hub or the workspace, follows the buckets and\n"
      "the journal by watching them, and follows a NATS restart by itself. It serves until Ctrl-C.\n"
      "Example:\n"
      "  swarm serve --listen 127.0.0.1:9477");
  return cmd;
}

}  // namespace cli
