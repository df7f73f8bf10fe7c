// The serve verb's options and help, the same in both programs: swarm
// hands the verb over to swarm-serve (cli/command/serve_exec.cc), which
// serves it (cli/programs/serve_verb.cc).
#pragma once

#include <CLI/CLI.hpp>

#include "cli/command/context.h"
#include "cli/verbs/serve_request.h"

namespace cli {

CLI::App* add_serve_command(CLI::App& app, ServeFlags& flags);

// The arguments the program was started with (main sets them), for the
// swarm-serve hand-over.
void set_program_args(int argc, char** argv);
char** program_args();

}  // namespace cli
