// Owning handles for nats.c objects, and the translation of nats.c statuses into
// kv::Error. Private to kv/: no other folder includes nats.h.
#pragma once

#include <nats/nats.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kv/c_handle.h"
#include "kv/error.h"

namespace kv::detail {

template <auto Destroy>
using Deleter = CFree<Destroy>;

using OptionsPtr = std::unique_ptr<natsOptions, Deleter<natsOptions_Destroy>>;
using ConnectionPtr = std::unique_ptr<natsConnection, Deleter<natsConnection_Destroy>>;
using JsPtr = std::unique_ptr<jsCtx, Deleter<jsCtx_Destroy>>;
using StorePtr = std::unique_ptr<kvStore, Deleter<kvStore_Destroy>>;
using SubscriptionPtr = std::unique_ptr<natsSubscription, Deleter<natsSubscription_Destroy>>;
using MetaDataPtr = std::unique_ptr<jsMsgMetaData, Deleter<jsMsgMetaData_Destroy>>;
using ConsumerInfoPtr = std::unique_ptr<jsConsumerInfo, Deleter<jsConsumerInfo_Destroy>>;
using MsgPtr = std::unique_ptr<natsMsg, Deleter<natsMsg_Destroy>>;
using StreamInfoPtr = std::unique_ptr<jsStreamInfo, Deleter<jsStreamInfo_Destroy>>;
using PubAckPtr = std::unique_ptr<jsPubAck, Deleter<jsPubAck_Destroy>>;

// nats.c's last error message for `status`, without its source location.
std::string last_error_text(natsStatus status);

// Whether a JetStream failure (its code, the server's text) says the
// server's store is full: a storage limit (the server's, the account's) met,
// or a write its disk refused. Every write that meets one is `no_room`.
bool store_full(int js_code, std::string_view text);

// What kind of failure a nats.c status, JetStream code (0: none) and error
// text make (a cluster between leaders is `unavailable`: worth a retry).
Errc kind_of_failure(natsStatus status, jsErrCode js_code, std::string_view text);

// Turns a failed nats.c call into a kv::Error whose message starts with `what`
// (e.g. "get bucket B key K") and ends with nats.c's own text.
[[noreturn]] void raise(natsStatus status, jsErrCode js_code, std::string_view what);

// JetStream options whose requests wait `wait` for their answer.
inline jsOptions waiting(std::chrono::milliseconds wait) {
  jsOptions options;
  jsOptions_Init(&options);
  options.Wait = wait.count();
  return options;
}

// A time the server stamped (unix nanoseconds).
inline std::chrono::system_clock::time_point time_of(std::int64_t unix_nanos) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(unix_nanos)));
}

// Throws unless status is NATS_OK.
inline void check(natsStatus status, std::string_view what, jsErrCode js_code = jsErrCode(0)) {
  if (status != NATS_OK) raise(status, js_code, what);
}

}  // namespace kv::detail
