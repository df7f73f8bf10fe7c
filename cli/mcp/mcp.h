// swarm mcp: a Model Context Protocol server on standard input and output
// (cli/mcp/mcp.cc). A tool of cli/verbs/ is called as a function, its
// request read from the call's arguments by the verb's table; a verb the
// verbs layer does not hold yet runs as the command line would (the
// program hands that in), in this process or as a process of its own.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cli/mcp/mcp_tools.h"
#include "cli/verbs/context.h"
#include "swarm/workspace/workspace.h"

namespace cli {

struct McpSetup {
  std::vector<Tool> tools;
  // What a verb of the command line runs with: the workspace, --bucket and
  // --timeout as arguments (credentials by the environment it reads).
  std::vector<std::string> argv_globals;
  // What a verb of cli/verbs runs with, in this process.
  Globals globals;
  std::string slot;  // the slot a call that names none acts on
  swarm::Workspace workspace;
  // Runs a command line (argv[0] the program) in this process: its exit code.
  std::function<int(int argc, char** argv)> run_command_line;
};

// Serves until the client closes standard input; its exit code.
int serve_mcp(McpSetup setup);

}  // namespace cli
