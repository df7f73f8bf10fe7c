// CLOCK_BOOTTIME as a std::chrono clock: monotonic, and counting through
// suspend. A lease holder times its deadline on it: a lease goes on ageing on
// the server while the holder's machine sleeps, so must the holder's deadline.
#pragma once

#include <time.h>

#include <chrono>

namespace swarm {

struct BootClock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<BootClock>;
  static constexpr bool is_steady = true;

  static time_point now() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
  }
};

using BootTime = BootClock::time_point;

}  // namespace swarm
