// Takes a lease by name, prints its fencing token, releases it; or, given a
// command after --, runs it while holding the lease, as `swarm lock` does.
//   lease_client NATS_URL NAME [WORKSPACE] [-- CMD [ARGS...]]
// The leases are the named workspace's (`swarm up` makes its bucket,
// swarm-<name>-leases); with no name, the shared swarm-leases. Exit 3 when someone else holds the lease, 7 when NATS is away;
// with a command, the command's own exit status.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "swarm/workspace/bootstrap.h"
#include "swarm/base/error.h"
#include "swarm/base/host.h"
#include "swarm/base/workspace_names.h"
#include "swarm/lease/held_command.h"
#include "swarm/lease/lease.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::vector<std::string> command;
  for (std::size_t i = 0; i < args.size(); ++i)
    if (args[i] == "--") {
      command.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      args.resize(i);
      break;
    }
  if (args.size() < 2) {
    std::fprintf(stderr, "usage: %s NATS_URL NAME [WORKSPACE] [-- CMD [ARGS...]]\n", argv[0]);
    return 2;
  }
  try {
    kv::Connection nats = swarm::connect_nats({.urls = {args[0]}});
    swarm::WorkspaceNames names =
        args.size() > 2 ? swarm::WorkspaceNames::of(args[2]) : swarm::WorkspaceNames::unnamed();
    swarm::LeaseStore leases = swarm::LeaseStore::open(nats, names);
    // The lease is tied to this process: if it dies, others may take it once the TTL passes.
    auto me = swarm::LeaseHolder::process(swarm::HostIdentity::detect(), getpid(), "lease_client");
    swarm::Lease lease = leases.acquire(args[1], me, std::chrono::seconds(30));
    std::printf("%s %llu\n", lease.name.c_str(), static_cast<unsigned long long>(lease.token));
    std::fflush(stdout);
    if (!command.empty()) {
      // Renewed while it runs, stopped in time if the lease is lost, released
      // when it ends; it finds the token in $SWARM_FENCING_TOKEN.
      swarm::HeldCommand held;
      held.command = command;
      held.note = [](const std::string& what) { std::fprintf(stderr, "lease_client: %s\n", what.c_str()); };
      held.warn = held.note;
      return swarm::run_holding(leases, lease, held);
    }
    // ... the work that must run once at a time goes here, passing the token
    // to whatever it writes, so a stale holder's writes can be refused ...
    leases.release(lease);
    return 0;
  } catch (const swarm::Error& e) {
    std::fprintf(stderr, "lease_client: %s\n", e.what());
    return e.kind() == swarm::Errc::conflict ? 3 : e.kind() == swarm::Errc::unavailable ? 7 : 1;
  }
}
