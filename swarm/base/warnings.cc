#include "swarm/base/warnings.h"

#include <mutex>

#include "swarm/base/log.h"

namespace swarm {

namespace {

std::mutex& sink_mu() {
  static std::mutex mu;
  return mu;
}

WarningSink& current_sink() {
  static WarningSink sink;
  return sink;
}

}  // namespace

void set_warning_sink(WarningSink sink) {
  std::lock_guard lock(sink_mu());
  current_sink() = std::move(sink);
}

void warn(const std::string& message) {
  WarningSink sink;
  {
    std::lock_guard lock(sink_mu());
    sink = current_sink();
  }
  if (sink) sink(message);
  else log::write(log::Level::warn, message);
}

}  // namespace swarm
