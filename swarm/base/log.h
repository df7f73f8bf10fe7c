// Diagnostics for --log-level debug/trace, through spdlog's default logger,
// which the CLI points at stderr (to_stderr), and text formatted by fmt.
// Only log.cc compiles spdlog and fmt's formatting (both header-only,
// adr/0008): in every file that logged they cost ~20 s of compiling. Here
// only fmt's core: the format string checked at compile time, the arguments
// passed type-erased. Lines are formatted only when their level is on.
#pragma once

#include <fmt/core.h>

#include <string>
#include <string_view>
#include <utility>

namespace swarm::log {

enum class Level { trace, debug, info, warn, error, off };

// Whether a line at `level` is written.
bool enabled(Level level);
// Writes `message` at `level`.
void write(Level level, std::string_view message);
// Points the default logger at stderr, at `level` ("trace" ... "off"), the
// text of each line escaped (a line may quote what any client of a bucket
// wrote); debug and trace lines carry the time. The library's warnings
// (swarm::warn) go there too, filtered by the same level.
void to_stderr(const std::string& level);
// Flushes and drops the loggers (before the process exits).
void shutdown();

// `format` with `args` filled in (as fmt::format).
std::string formatted(fmt::string_view format, fmt::format_args args);
template <typename... Args>
std::string format(fmt::format_string<Args...> format, Args&&... args) {
  return log::formatted(format, fmt::make_format_args(args...));
}

// At debug level: "<what> at <ms> ms" since the process started (its
// first static initialisation): where a verb's milliseconds go, phase by
// phase (`--log-level debug`; adr/0037).
void phase(std::string_view what);

template <typename... Args>
void at(Level level, fmt::format_string<Args...> format, Args&&... args) {
  if (enabled(level)) write(level, log::formatted(format, fmt::make_format_args(args...)));
}
template <typename... Args>
void debug(fmt::format_string<Args...> format, Args&&... args) {
  at(Level::debug, format, std::forward<Args>(args)...);
}
template <typename... Args>
void info(fmt::format_string<Args...> format, Args&&... args) {
  at(Level::info, format, std::forward<Args>(args)...);
}
template <typename... Args>
void warn(fmt::format_string<Args...> format, Args&&... args) {
  at(Level::warn, format, std::forward<Args>(args)...);
}

}  // namespace swarm::log
