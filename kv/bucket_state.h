// What a Bucket and its watches share. Private to kv/.
#pragma once

#include <memory>
#include <string>

#include "kv/bucket.h"
#include "kv/connection_state.h"

namespace kv {

struct Bucket::State {
  std::shared_ptr<detail::ConnectionState> connection;
  detail::StorePtr store;   // nats.c's handle, used for watches
  std::string stream;       // "KV_<bucket>"
  std::string prefix;       // "$KV.<bucket>."

  jsCtx* js() const { return connection->js.get(); }
};

namespace detail {
// Copies a watcher entry into an Entry.
Entry entry_of(kvEntry* e);
}  // namespace detail

}  // namespace kv
