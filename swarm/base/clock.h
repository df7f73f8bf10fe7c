// Wall-clock time, injectable so tests are deterministic, and RFC 3339 UTC
// text, the only time format swarm reads or writes.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace swarm {

using TimePoint = std::chrono::system_clock::time_point;

// Returns "now". The default is the system clock; tests pass a fixed one.
using Clock = std::function<TimePoint()>;
Clock system_clock();

// "2026-11-22T10:00:00.123Z": UTC, milliseconds (RFC 3339 allows the fraction,
// and it keeps two sessions started in the same second apart).
std::string format_rfc3339(TimePoint t);

// Accepts any RFC 3339 date-time: 'T' or 't', an optional fraction, and 'Z' or
// a numeric offset. nullopt for anything else, including impossible dates.
std::optional<TimePoint> parse_rfc3339(std::string_view text);

// "20261122T100000.123Z": for folder and ref names (milliseconds keep two
// made within one second apart).
std::string format_compact_utc(TimePoint t);

}  // namespace swarm
