// What a Connection and the buckets opened on it share. Private to kv/.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "kv/nats_handles.h"

namespace kv::detail {

struct ConnectionState;
// The version of the server the connection is on (read once, cached).
const std::string& server_version(ConnectionState& state);
// Whether that server checks a clustered stream's per-key CAS only before
// it proposes a write (nats-server before 2.10, its issue 4320): then CAS
// writes on a clustered stream need the guard of adr/0014. True when the
// version cannot be read.
bool needs_cas_guard(ConnectionState& state);

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
  // The server's version as its greeting says ("2.9.10"; "" when it could
  // not be read), asked once (see server_version in connection.cc).
  std::once_flag version_once;
  std::string version;
  // Whether the server's JetStream is clustered (0) or not (1: every stream
  // lives on that one server), as the last bucket opened on the connection
  // said; -1 until one is. See Bucket::get_together.
  std::atomic<int> standalone{-1};
  // Subscriptions ended without a round trip (see retire), not yet freed.
  std::mutex retired_mu;
  std::vector<natsSubscription*> retired;

  ~ConnectionState() {
    js.reset();
    if (connection) natsConnection_Close(connection.get());
    // Closed first: no reader thread can be handing them a message now.
    if (replies != nullptr) natsSubscription_Destroy(replies);
    for (natsSubscription* sub : retired) natsSubscription_Destroy(sub);
  }
};

// Keeps a subscription that was just removed from the connection (its
// messages no longer wanted) until no reader thread can still hold it: nats.c
// 3.4.1's reader thread looks a subscription up and uses it without taking a
// reference, so freeing one at once could free it under that thread. Freed
// when the connection closes, or, once several wait, after a flush: the
// reader thread handles the flush's PONG after any message it took before.
void retire(ConnectionState& connection, SubscriptionPtr sub);

}  // namespace kv::detail
