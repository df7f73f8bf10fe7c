// What kv/stream.cc and kv/stream_ensure.cc share: a stream handle's hold on
// its connection, and how a stream is named and its config read back.
#pragma once

#include <cstdint>
#include <string>

#include "kv/connection_state.h"
#include "kv/nats_handles.h"
#include "kv/stream.h"

namespace kv {

struct Stream::State {
  std::shared_ptr<detail::ConnectionState> connection;
  jsCtx* js() const { return connection->js.get(); }
};

namespace detail {

inline constexpr std::int64_t kNanosPerMilli = 1000 * 1000;

inline std::string stream_where(const std::string& name) { return "stream " + name; }

// A stream's config as nats.c gives it, in kv's terms.
StreamConfig config_of(const jsStreamConfig& c);

// One stream-info request, not_found when there is no such stream.
StreamInfoPtr info_once(jsCtx* js, const std::string& name, std::chrono::milliseconds wait);

}  // namespace detail

}  // namespace kv
