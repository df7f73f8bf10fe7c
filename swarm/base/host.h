// Who "this host" is: the hostname plus the machine's id, so two hosts that
// share a hostname (containers, cloned VMs) are still told apart.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>


namespace swarm {

struct HostIdentity {
  std::string host;     // hostname, or $SWARM_HOST
  std::string host_id;  // /etc/machine-id, a kept generated id, or $SWARM_HOST_ID

  // Reads the environment overrides, then the system. With no machine id it
  // generates one and keeps it in the user's config folder
  // ($XDG_CONFIG_HOME/swarm or ~/.config/swarm, never /tmp); throws
  // bad_input naming SWARM_HOST_ID when the user has no such folder.
  static HostIdentity detect();

  // A record is this host's when its host_id and host match ours; a record
  // without host_id (an older client, or bones) when its host matches. The
  // one rule for sessions, leases and waiters alike.
  bool owns(std::string_view record_host, std::string_view record_host_id) const;
  // The same of any record with `host` and `host_id` (a Session, a LeaseRecord).
  template <typename Record>
  bool owns(const Record& record) const {
    return owns(record.host, record.host_id);
  }
};

// The host id kept in `config_home`/swarm/host-id, made (random, 0600) when
// there is none; never read or written through a link.
std::string generated_host_id(const std::filesystem::path& config_home);

}  // namespace swarm
