// The part of `up` that needs the server, apart from the steps before it
// (options, the up-lock, the config read, the embedded server started).
#pragma once

#include "swarm/workspace/bootstrap.h"

namespace swarm {

// Connects to the workspace's NATS and makes (or adopts) what the workspace
// keeps there, seeds and marks the hub, and writes config.json last.
void finish_up(const UpOptions& options, UpResult& result);

}  // namespace swarm
