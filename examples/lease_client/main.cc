// Takes a lease by name, prints its fencing token, releases it.
//   lease_client NATS_URL NAME [BUCKET]
// The lease bucket is the workspace's (`swarm up` makes it; swarm-leases by
// default). Exit 3 when someone else holds the lease, 7 when NATS is away.
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "swarm/bootstrap.h"
#include "swarm/error.h"
#include "swarm/host.h"
#include "swarm/lease/lease.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s NATS_URL NAME [BUCKET]\n", argv[0]);
    return 2;
  }
  try {
    kv::Connection nats = swarm::connect_nats({.urls = {argv[1]}});
    swarm::LeaseStore leases = swarm::LeaseStore::open(nats, argc > 3 ? argv[3] : swarm::kDefaultLeaseBucket);
    // The lease is tied to this process: if it dies, others may take it once the TTL passes.
    auto me = swarm::LeaseHolder::process(swarm::HostIdentity::detect(), getpid(), "lease_client");
    swarm::Lease lease = leases.acquire(argv[2], me, std::chrono::seconds(30));
    std::printf("%s %llu\n", lease.name.c_str(), static_cast<unsigned long long>(lease.token));
    // ... the work that must run once at a time goes here, passing the token
    // to whatever it writes, so a stale holder's writes can be refused ...
    leases.release(lease);
    return 0;
  } catch (const swarm::Error& e) {
    std::fprintf(stderr, "lease_client: %s\n", e.what());
    return e.kind() == swarm::Errc::conflict ? 3 : e.kind() == swarm::Errc::unavailable ? 7 : 1;
  }
}
