// How `up`, `swarm version` and `doctor` show the nats-server a workspace
// runs on and what it lacks (adr/0052): one line of text, one JSON object.
#pragma once

#include <string>
#include <vector>

#include "swarm/base/json.h"
#include "swarm/workspace/server_release.h"

namespace cli {

// "nats-server 2.15.2 (/path), every acknowledged write on disk before its answer"
std::string server_line(const swarm::WorkspaceServer& server);
// {"version", "program", "sync": "always"|"interval"|"unknown", "lacks": [{"what","detail"}]}
swarm::Json server_json(const swarm::WorkspaceServer& server);
// [{"what","detail"}]: what a server lacks (server_json's, and doctor's durability).
swarm::Json lacks_json(const std::vector<swarm::ServerLack>& lacks);

}  // namespace cli
