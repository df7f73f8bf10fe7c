// `swarm mcp` on the command line: its options, the tools it offers and
// how it runs a verb the verbs layer does not hold yet, handed to the MCP
// front end (cli/mcp/).
#include <signal.h>

#include <cstdlib>

#include "cli/command/command_line.h"
#include "cli/command/context.h"
#include "cli/mcp/mcp.h"

namespace cli {

namespace {

// The global options every call runs with: the workspace found once (a
// call never depends on the server's folder), --bucket and --timeout as
// arguments; the server, credentials and TLS files through the environment
// every call reads them from (in this process, or in its own), so that no
// secret is ever on a command line.
std::vector<std::string> globals_of(const Context& ctx) {
  const Globals& g = ctx.globals();
  const std::pair<const char*, const std::string*> by_env[] = {
      {"NATS_URL", &g.nats_url},   {"NATS_CONTEXT", &g.context}, {"NATS_CREDS", &g.creds},
      {"NATS_NKEY", &g.nkey},      {"NATS_USER", &g.user},       {"NATS_PASSWORD", &g.password},
      {"NATS_TOKEN", &g.token},    {"NATS_CA", &g.tls_ca},       {"NATS_CERT", &g.tls_cert},
      {"NATS_KEY", &g.tls_key}};
  for (const auto& [name, value] : by_env)
    if (!value->empty()) ::setenv(name, value->c_str(), 1);
  std::vector<std::string> out = {"--workspace", ctx.workspace().root().string()};
  if (!g.bucket.empty()) out.insert(out.end(), {"--bucket", g.bucket});
  if (!g.timeout.empty()) out.insert(out.end(), {"--timeout", g.timeout});
  return out;
}


}  // namespace

Verb add_mcp(CLI::App& app) {
  auto slot = std::make_shared<std::string>();
  auto set = std::make_shared<std::string>("core");
  CLI::App* cmd = app.add_subcommand("mcp", "A Model Context Protocol server on stdin and stdout: the verbs as tools");
  cmd->add_option("--slot", *slot, "The slot tools act on when a call names none (default: each call's --slot)")
      ->option_text("SLOT")
      ->check(slot_name_validator());
  cmd->add_option("--tools", *set, "Which verbs are tools: core (the agent's loop) or all (leases, locks, elections, "
                                   "review too)")
      ->option_text("core|all")
      ->check(CLI::IsMember({"core", "all"}));
  cmd->footer(
      "Examples:\n"
      "  swarm mcp --slot render              # in an agent host's MCP configuration\n"
      "  swarm mcp --tools all\n"
      "Newline-delimited JSON-RPC 2.0 on stdin and stdout (nothing else on stdout; logs on stderr),\n"
      "revisions 2025-11-25 (initialize) and 2026-07-28 (server/discover). Each tool is a verb: its\n"
      "arguments the verb's options (dashes as underscores), its result the verb's --json document as\n"
      "structuredContent and as text; a failure is a result with isError and swarm.error.v1. join,\n"
      "task_next (join --next: the most urgent ready task) and lease_acquire return a handle (the token,\n"
      "its TTL, how to keep it). land, inbox, ask, lock, elect and lease_acquire run as processes of\n"
      "their own: notifications/cancelled stops one as Ctrl-C would,\n"
      "and their output lines are progress. It keeps no state between calls: restart it at any time.");
  return {cmd, [slot, set](Context& ctx) {
            const std::vector<std::string> globals = globals_of(ctx);
            share_connections();
            // A client that goes away mid-write must not kill the server with SIGPIPE.
            ::signal(SIGPIPE, SIG_IGN);
            Globals direct = ctx.globals();
            direct.workspace = ctx.workspace().root().string();
            return serve_mcp({.tools = mcp_tools(*set == "all"),
                              .argv_globals = globals,
                              .globals = direct,
                              .slot = *slot,
                              .workspace = ctx.workspace(),
                              .run_command_line = [](int argc, char** argv) { return run_command_line(argc, argv); }});
          }};
}

}  // namespace cli
