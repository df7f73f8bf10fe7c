// What status (status.cc) and its live view on the command line share: the
// request and the filters it applies.
#pragma once

#include <string>
#include <vector>

#include "swarm/slots/status.h"

namespace cli {

struct StatusRequest {
  std::vector<std::string> slots;   // --slot: only these
  std::vector<std::string> states;  // --state: only these
  std::vector<std::string> hosts;   // --host: only these
};

// The sessions the filters keep (all of them when there are none).
std::vector<swarm::SessionRow> filtered(const std::vector<swarm::SessionRow>& rows, const StatusRequest& f);

}  // namespace cli
