// What `swarm serve` is asked: where to listen, and whether with the
// secret. The command line reads it (cli/command/serve_options.cc) and the
// HTTP server (cli/serve/, in swarm-serve) serves it.
#pragma once

#include <string>

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

}  // namespace cli
