// A nats-server with the lease bucket, and lease holders, for the tests of
// leases, the mutex, the keeper and the election.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "support/nats_server.h"
#include "swarm/journal/journal.h"
#include "swarm/lease/lease.h"
#include "swarm/workspace/bootstrap.h"

namespace testing {

struct LeaseFixture {
  NatsServer server;
  kv::Connection connection = connect(server.url());
  kv::Bucket bucket = kv::Bucket::ensure(connection, {.name = "swarm-leases", .ttl = std::chrono::hours(24)});
  // The journal beside it, as `swarm up` makes it: grants and releases are recorded there.
  bool journal = (swarm::Journal::ensure(connection, swarm::WorkspaceNames::unnamed(), 1, std::nullopt, std::nullopt), true);

  static kv::Connection connect(const std::string& url) {
    return swarm::connect_nats({.urls = {url}, .request_timeout = std::chrono::seconds(5)});
  }
  swarm::LeaseStore store() const { return swarm::LeaseStore::open(connection, swarm::WorkspaceNames::unnamed()); }
  // A store on a connection of its own, as another process would have.
  swarm::LeaseStore other_store() const { return swarm::LeaseStore::open(connect(server.url()), swarm::WorkspaceNames::unnamed()); }
};

// A holder of host-a called `name`, as process `pid`.
inline swarm::LeaseHolder lease_holder(const std::string& name, std::int64_t pid = 4242) {
  swarm::LeaseHolder who;
  who.holder = name;
  who.host = "host-a";
  who.host_id = "id-a";
  who.pid = pid;
  return who;
}

}  // namespace testing
