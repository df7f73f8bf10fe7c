// A tool the verbs layer does not hold yet runs as the command line would
// (cli/mcp/): in this process with its stdout and stderr captured, or, when
// it may wait long, as a process of its own that a cancellation stops as
// Ctrl-C would, its stderr lines told as progress.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "cli/mcp/mcp_tools.h"
#include "cli/mcp/tool_results.h"

namespace cli {

// The command line of `tool` with `args`: the program, its words, the
// server's globals, --json, the tool's fixed arguments, then `args`.
std::vector<std::string> tool_argv(const Tool& tool, const std::vector<std::string>& globals,
                                   const std::vector<std::string>& args);

// Runs `argv` as `run_command_line` does, in this process, with fd 1 and 2
// captured for the run; `err_fd` is where fd 2 goes back to. One run at a
// time: the caller holds the process's fds while it runs.
Ran run_captured(const std::function<int(int argc, char** argv)>& run_command_line, std::vector<std::string> argv,
                 int err_fd);

struct ChildHooks {
  // The child's pid once it runs, 0 once its output ended (from then on it
  // is no pid to signal: it may be another process's once reaped).
  std::function<void(pid_t)> child;
  // A stderr line to tell, or that it still runs; none told without.
  std::function<void(double done, const std::string& line)> progress;
};

// Runs `argv` as a process of this program's own, standard input
// /dev/null, nothing of this process's open files along.
Ran run_child(std::vector<std::string> argv, const ChildHooks& hooks);

}  // namespace cli
