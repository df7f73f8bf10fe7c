// How much of the NATS server's store each of a workspace's streams may
// take by default (adr/0051): the journal, the bus and the blob store each
// a share of the room the store has, so that neither a reservation of one
// nor one agent filling one leaves the others, or the buckets, no room.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include "kv/connection.h"

namespace swarm {

// The most each takes when the store is large (or its room cannot be told).
inline constexpr std::int64_t kDefaultBlobStoreBytes = std::int64_t(1) << 30;

struct StoreShares {
  // The room the server's store has for the workspace: what is left of the
  // account's JetStream limit, else (the embedded server) what its store's
  // filesystem has free, as the server itself takes it (3/4); nullopt when
  // it cannot be told (another's server with no account limit).
  std::optional<std::uint64_t> room;
  std::int64_t journal = 0;  // the defaults for new streams, in bytes
  std::int64_t bus = 0;
  std::int64_t blobs = 0;
};

// `embedded_data`: the embedded server's store folder, or empty.
StoreShares store_shares(const kv::Connection& nats, const std::filesystem::path& embedded_data);

}  // namespace swarm
