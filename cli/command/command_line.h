// The command line of swarm as a function: the arguments parsed, the verb
// run, its exit code returned. main.cc runs it once per process; swarm mcp
// runs it for each tool call, in the same process (its stdout and stderr
// captured), so a tool's result is the verb's own --json document.
#pragma once

#include <functional>
#include <string_view>

#include "cli/command/context.h"

namespace cli {

// "swarm 0.1.0".
std::string_view version();
// Whether `name` is a verb of swarm (hidden ones included).
bool is_verb(std::string_view name);

// Every verb, added to `app` (swarm mcp reads their definitions).
std::vector<Verb> add_every_verb(CLI::App& app);

// Parses `argv` (argv[0] the program) and runs its verb; its exit code.
// `before_run`, when set, sees the Context first. With `process_ends` the
// Context (and its NATS connection) is never destroyed: the caller exits.
int run_command_line(int argc, char** argv, const std::function<void(Context&)>& before_run = {},
                     bool process_ends = false);

}  // namespace cli
