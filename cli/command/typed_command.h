// A verb of the verbs layer (cli/verbs/verb.h) on the command line: its
// table of options bound to CLI11, its request checked and resolved here,
// then run in this process, or by the `swarm run` whose socket
// $SWARM_SOCKET names (the same document and exit code either way).
#pragma once

#include <functional>
#include <optional>

#include "cli/command/context.h"
#include "cli/verbs/verb.h"

namespace cli {

// What a front end adds to a verb of its own: options only the command
// line has (status --watch), and what runs instead when one was given.
struct CommandExtras {
  std::function<void(CLI::App& command)> options;
  // nullopt: the verb runs as usual (and its validate runs first). It is
  // called before the verb's validate: one that acts checks the request
  // itself, before any I/O.
  std::function<std::optional<int>(const void* request, Context& ctx)> instead;
};

Verb add_typed(CLI::App& app, const VerbSpec& verb, CommandExtras extras = {});
// A table's options bound to a command of the command line's own (run
// takes join's), each value set in `request` (the table's request type).
void bind_options(CLI::App& cmd, const std::vector<BoundOption>& options, const std::shared_ptr<void>& request);

}  // namespace cli
