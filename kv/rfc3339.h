// RFC 3339 times as the NATS server writes them (a stored message's "time",
// a consumer's "created") and as swarm's records carry them.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace kv {

// "2026-11-22T10:00:00.123456789Z" (any fraction; Z or an offset) as a time
// point; nullopt when it is not one, or outside what a time point holds (the
// years 1678 to 2261).
std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view text);

}  // namespace kv
