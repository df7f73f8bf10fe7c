// The agent's socket: a Unix socket a resident swarm process (`swarm run`)
// serves to its agent, answering the verbs of cli/verbs/ with the run's own
// workspace and NATS connection, as cli/verbs/remote.h frames them. It lives
// in a folder only its user may enter (0700), refuses a peer of another
// user, and answers a few calls at once, each on a thread of its own.
#pragma once

#include <memory>

#include "cli/verbs/agent_door.h"

namespace cli {

// A door for `swarm run` (main.cc passes it to set_door_opener): listening
// until it is destroyed, which removes the socket and its folder.
std::unique_ptr<AgentDoor> open_agent_socket(const Globals& globals);

}  // namespace cli
