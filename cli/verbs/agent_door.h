// The door a resident swarm process opens for its agent: a socket that
// answers the agent's `swarm VERB` (cli/socket/). `swarm run` opens it; the
// program (main.cc) says what opens one, so that no front end includes
// another's headers.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "cli/verbs/context.h"

namespace cli {

class AgentDoor {
 public:
  virtual ~AgentDoor() = default;
  // What the agent's $SWARM_SOCKET says.
  virtual const std::string& path() const = 0;
};

// Opens a door that acts with `globals` (the opener's workspace and NATS).
using DoorOpener = std::function<std::unique_ptr<AgentDoor>(const Globals& globals)>;
void set_door_opener(DoorOpener opener);
// nullptr when this program opens none.
std::unique_ptr<AgentDoor> open_agent_door(const Globals& globals);

}  // namespace cli
