// The tools `swarm mcp` offers: each a verb of the command line (a verb
// with sub-verbs gives task_list, lease_acquire, ...; task_next is join
// --next), read off its CLI11 definition, so that its arguments are the verb's options (dashes as
// underscores) and its result the verb's own --json document. No second
// description of a verb to drift from the first.
#pragma once

#include <string>
#include <vector>

#include "swarm/base/json.h"

namespace cli {

// One argument of a tool: an option (or positional) of its verb.
struct ToolArg {
  enum class Kind { flag, value, list, positional, positionals, command };
  std::string key;     // as the tool takes it: no_artifact
  std::string option;  // as the verb takes it: --no-artifact ("" for a positional)
  Kind kind = Kind::value;
  bool integer = false;
  bool required = false;
};

struct Tool {
  std::string name;                // status, task_list
  std::vector<std::string> words;  // the verb as typed: {"task", "list"}
  std::vector<std::string> fixed;  // what every call adds to its arguments (task_next: --next)
  std::string description;
  std::vector<ToolArg> args;
  swarm::Json input_schema;
  swarm::Json output_schema;
  // Runs as a process of its own: it may wait long (a land's check, an
  // inbox's --wait), so a cancellation stops it as Ctrl-C would and its
  // output lines are progress.
  bool own_process = false;
  // Prints JSON Lines (inbox, log): its result is {"items":[...]}.
  bool lines = false;
  // Returns a handle: a session token (join) or a fencing token (lease_acquire).
  bool handle = false;
};

// The tools of the set `all` (false: core), in the order tools/list gives them.
std::vector<Tool> mcp_tools(bool all);

// The verb's arguments (after its words, before --json) for a call's
// `arguments` (an object, or null), checked against the tool's arguments:
// bad_input naming the argument when one is unknown or of the wrong type.
std::vector<std::string> call_arguments(const Tool& tool, const cJSON* arguments);

}  // namespace cli
