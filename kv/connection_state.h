// What a Connection and the buckets opened on it share. Private to kv/.
#pragma once

#include <chrono>
#include <string>

#include "kv/nats_handles.h"

namespace kv::detail {

struct ConnectionState {
  // Declared in this order so the JetStream context dies before the connection.
  ConnectionPtr connection;
  JsPtr js;
  std::chrono::milliseconds request_timeout{5000};
  std::string urls;  // for error messages

  ~ConnectionState() {
    js.reset();
    if (connection) natsConnection_Close(connection.get());
  }
};

}  // namespace kv::detail
