// What a Bucket and its watches share. Private to kv/.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kv/bucket.h"
#include "kv/connection_state.h"

namespace kv {

struct Bucket::State {
  std::shared_ptr<detail::ConnectionState> connection;
  std::string stream;      // "KV_<bucket>"
  std::string prefix;      // "$KV.<bucket>."
  BucketConfig config;     // as read at open
  std::uint64_t messages;  // messages in the stream at open (0: nothing to replay)

  jsCtx* js() const { return connection->js.get(); }
};

}  // namespace kv
