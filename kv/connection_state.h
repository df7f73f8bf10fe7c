// What a Connection and the buckets opened on it share. Private to kv/.
#pragma once

#include <atomic>
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
  // With a limit, every request together waits at most this long
  // (Connection::limit_total_wait); zero: each request has request_timeout.
  std::chrono::milliseconds total_wait_limit{0};
  std::atomic<std::int64_t> waited_ms{0};

  ~ConnectionState() {
    js.reset();
    if (connection) natsConnection_Close(connection.get());
  }
};

}  // namespace kv::detail
