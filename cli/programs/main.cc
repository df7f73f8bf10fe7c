// swarm: one owner per slot, leases with fencing tokens, on NATS JetStream.
#include <cstdlib>
#include <iostream>

#include "cli/command/command_line.h"
#include "cli/command/serve_options.h"
#include "cli/socket/agent_socket.h"
#include "cli/verbs/agent_door.h"
#include "swarm/base/log.h"
#include "swarm/base/process_secrets.h"

int main(int argc, char** argv) {
  // Before anything is read: what this process will hold (credentials, the
  // embedded server's token, the serve secret) is no other process's to read.
  swarm::make_undumpable();
  cli::set_program_args(argc, argv);
  cli::set_door_opener(cli::open_agent_socket);
  const int code = cli::run_command_line(argc, argv, {}, true);
  // The verb is done: every KV write it made was acknowledged and every file
  // it wrote is closed. Leave without the NATS client's orderly close (a PING
  // round trip and joining its threads); the kernel closes the socket.
  std::cout.flush();
  std::cerr.flush();
  swarm::log::shutdown();
  std::_Exit(code);
}
