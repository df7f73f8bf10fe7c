// Durations as users type them: "90s", "5m", "1h30m", "250ms", "1.5s", and "0".
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace swarm {

// Throws swarm::Error(bad_input) naming the text and the accepted form. A
// number needs a unit (ms, s, m, h); only "0" stands alone. No negatives.
std::chrono::milliseconds parse_duration(std::string_view text);

// The same, or a whole number of days ("30d", at most 36500d): how long the
// journal keeps events, how far back `log --since` reaches.
std::chrono::milliseconds parse_long_duration(std::string_view text);

// The shortest form that parses back: "1h30m", "90s" -> "1m30s", "250ms", "0s".
std::string format_duration(std::chrono::milliseconds d);

}  // namespace swarm
