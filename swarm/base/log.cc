// The one file that compiles spdlog and fmt's formatting (see log.h).
#include "swarm/base/log.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>

#include "swarm/base/text.h"
#include "swarm/base/warnings.h"

namespace swarm::log {

namespace {

spdlog::level::level_enum level_of(Level level) {
  switch (level) {
    case Level::trace: return spdlog::level::trace;
    case Level::debug: return spdlog::level::debug;
    case Level::info: return spdlog::level::info;
    case Level::warn: return spdlog::level::warn;
    case Level::error: return spdlog::level::err;
    case Level::off: break;
  }
  return spdlog::level::off;
}

// spdlog's lines on stderr with what they quote escaped.
class EscapingStderrSink : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string safe = printable(std::string_view(msg.payload.data(), msg.payload.size()));
    spdlog::details::log_msg escaped = msg;
    escaped.payload = safe;
    spdlog::memory_buf_t formatted;
    formatter_->format(escaped, formatted);
    std::fwrite(formatted.data(), 1, formatted.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }
};

}  // namespace

std::string formatted(fmt::string_view format, fmt::format_args args) { return fmt::vformat(format, args); }

namespace {
// Read at the process's first static initialisation.
const std::chrono::steady_clock::time_point g_started = std::chrono::steady_clock::now();
}  // namespace

void phase(std::string_view what) {
  if (!enabled(Level::debug)) return;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - g_started).count();
  write(Level::debug, fmt::format("{} at {:.1f} ms", what, ms));
}

bool enabled(Level level) { return spdlog::default_logger_raw()->should_log(level_of(level)); }

void write(Level level, std::string_view message) {
  spdlog::default_logger_raw()->log(level_of(level), spdlog::string_view_t(message.data(), message.size()));
}

void to_stderr(const std::string& level) {
  auto logger = std::make_shared<spdlog::logger>("swarm", std::make_shared<EscapingStderrSink>());
  const auto at = spdlog::level::from_str(level);
  // Debugging a race needs to know when: debug and trace lines carry the time.
  logger->set_pattern(at <= spdlog::level::debug ? "swarm: %H:%M:%S.%f %l: %v" : "swarm: %l: %v");
  logger->set_level(at);
  spdlog::set_default_logger(logger);
  set_warning_sink([](const std::string& message) { write(Level::warn, message); });
}

void shutdown() { spdlog::shutdown(); }

}  // namespace swarm::log
