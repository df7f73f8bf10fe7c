#include "swarm/base/server_clock.h"

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

}  // namespace swarm
