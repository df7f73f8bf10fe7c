// What a Connection and the buckets opened on it share. Private to kv/.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>

#include "kv/nats_handles.h"

namespace kv::detail {

struct ConnectionState {
  // Declared in this order so the JetStream context dies before the connection.
  ConnectionPtr connection;
  JsPtr js;
  // Replies to pipelined writes (Bucket::update_together) arrive on
  // "<reply_prefix><n>": one subscription for the connection's life, made
  // when first needed, used by one batch at a time.
  std::mutex reply_mu;
  natsSubscription* replies = nullptr;
  std::string reply_prefix;
  std::uint64_t next_reply = 0;
  std::chrono::milliseconds request_timeout{5000};
  std::string urls;  // for error messages
  // With a limit, every request together waits at most this long
  // (Connection::limit_total_wait); zero: each request has request_timeout.
  std::chrono::milliseconds total_wait_limit{0};
  std::atomic<std::int64_t> waited_ms{0};
  // A token sent only while its guard says the server is the one meant
  // (ConnectionOptions::token_guard), at connect and at every reconnect.
  std::string token;
  std::function<bool()> token_guard;

  ~ConnectionState() {
    js.reset();
    if (connection) natsConnection_Close(connection.get());
    // Closed first: no reader thread can be handing it a message now.
    if (replies != nullptr) natsSubscription_Destroy(replies);
  }
};

}  // namespace kv::detail
