#include "swarm/base/server_clock.h"

#include <algorithm>

#include "swarm/base/log.h"
#include "swarm/base/warnings.h"

namespace swarm {

ServerClock read_server_clock(const kv::Bucket& bucket, const Clock& local) {
  try {
    std::chrono::nanoseconds uncertainty{0};
    auto offset = bucket.server_clock_offset(local, &uncertainty);
    swarm::log::debug("the server's clock is {} us ahead of this host's (+- {} us)", offset.count() / 1000,
                  uncertainty.count() / 1000);
    auto skew = std::chrono::duration_cast<TimePoint::duration>(offset);
    return {[local, skew] { return local() + skew; }, true, uncertainty, std::chrono::steady_clock::now(),
            local() + skew};
  } catch (const kv::Error& e) {
    warn(log::format("ages are read on this host's clock, which may not be the server's: {}", e.what()));
    return {local, false, {}, std::chrono::steady_clock::now(), local()};
  }
}

ServerClock clock_from_stamp(TimePoint sent, std::chrono::steady_clock::time_point sent_steady,
                             std::chrono::steady_clock::time_point answered, TimePoint stamped, const Clock& local) {
  const auto half = std::chrono::duration_cast<TimePoint::duration>((answered - sent_steady) / 2);
  const auto skew = stamped - (sent + half);
  return {[local, skew] { return local() + skew; }, true, half, sent_steady + (answered - sent_steady) / 2, stamped};
}

PendingServerClock::PendingServerClock(const kv::Bucket& bucket)
    : bucket_(bucket), probe_(bucket.send_clock_probe()) {}

ServerClock PendingServerClock::get(const Clock& local) {
  // The answer came with the requests it was sent with, or is late (a
  // cluster electing a leader, say): then the usual reading, with its
  // retries within the budget, not a second wait of a whole timeout first.
  // A reading taken over more than this is too loose to keep: its answer
  // may have waited while other answers were read.
  constexpr std::chrono::milliseconds kWait{250};
  constexpr std::chrono::milliseconds kLoosest{100};
  auto stamp = probe_.read(std::min(kWait, bucket_.request_timeout()));
  if (stamp && stamp->answered - stamp->sent <= kLoosest) {
    // Its times on this host's clocks, for the stamp to be set against.
    const auto sent =
        local() - std::chrono::duration_cast<TimePoint::duration>(std::chrono::steady_clock::now() - stamp->sent);
    return clock_from_stamp(sent, stamp->sent, stamp->answered, stamp->stamped, local);
  }
  return read_server_clock(bucket_, local);
}

}  // namespace swarm
