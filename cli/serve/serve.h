// swarm serve: a read-only view of the workspace over HTTP (metrics, a live
// dashboard, the verbs' JSON). Its server links an HTTP library that no
// other verb needs, so it is its own program, swarm-serve, in swarm's
// private folder; `swarm serve` runs it with the same arguments (adr/0022).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "cli/command/context.h"

namespace cli {

inline constexpr const char* kServeProgram = "swarm-serve";
inline constexpr int kDefaultServePort = 9477;

struct ServeFlags {
  std::string listen = "127.0.0.1:" + std::to_string(kDefaultServePort);
  bool no_auth = false;  // only with a loopback address
};

// Where to listen: a host (an IPv4 address, "localhost", or [IPv6]) and a
// port (0: any free one).
struct ListenAddress {
  std::string host;
  int port = 0;
  bool loopback = true;
};
// Parses ADDR:PORT (or PORT alone: on 127.0.0.1); bad_input naming it otherwise.
ListenAddress parse_listen(const std::string& text);

// The serve verb's options and help (the same in both programs).
CLI::App* add_serve_command(CLI::App& app, ServeFlags& flags);

// The real server (swarm-serve only): serves until SIGINT or SIGTERM.
int run_serve(Context& ctx, const ServeFlags& flags);

// The arguments the program was started with (main sets them), for the
// swarm-serve hand-over.
void set_program_args(int argc, char** argv);
char** program_args();

}  // namespace cli
