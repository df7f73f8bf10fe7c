// Who "this host" is: the hostname plus the machine's id, so two hosts that
// share a hostname (containers, cloned VMs) are still told apart.
#pragma once

#include <string>

#include "swarm/session.h"

namespace swarm {

struct HostIdentity {
  std::string host;     // hostname, or $SWARM_HOST
  std::string host_id;  // /etc/machine-id, a kept generated id, or $SWARM_HOST_ID

  // Reads the environment overrides, then the system. Never fails: with no
  // machine id it generates one and keeps it under the user's config dir.
  static HostIdentity detect();

  // A record is this host's when its host_id and host match ours; a record
  // without host_id (an older client, or bones) when its host matches.
  bool owns(const Session& session) const;
};

}  // namespace swarm
