// The clock of the NATS server behind a bucket, run on this host's clock: the
// ages of records are measured on it, so hosts whose clocks disagree still
// agree on ages (adr/0001).
#pragma once

#include <chrono>

#include "kv/bucket.h"
#include "swarm/base/clock.h"

namespace swarm {

struct ServerClock {
  Clock now;
  bool measured = false;  // false: the server could not tell; `now` is this host's clock
  // How far off `now` may be (half the round trip of the reading).
  std::chrono::nanoseconds uncertainty{0};
  // When the reading was taken, on this host's monotonic clock, and the
  // server's time then.
  std::chrono::steady_clock::time_point read_at{};
  TimePoint server_at_read{};

  // The server's time at `t`, run on the monotonic clock from the reading: a
  // wall clock stepped since then (by NTP, by hand) does not move it. Only for
  // moments close to the reading: over hours the two hosts' clock rates part.
  TimePoint at(std::chrono::steady_clock::time_point t) const {
    return server_at_read + std::chrono::duration_cast<TimePoint::duration>(t - read_at);
  }
};

// Reads the server's clock once (one round trip, see
// kv::Bucket::server_clock_offset) and runs it on `local`. When the server
// cannot tell (a cluster without a JetStream leader) it is `local`, not
// `measured`, and a warning says so: callers then judge nothing by age.
ServerClock read_server_clock(const kv::Bucket& bucket, const Clock& local = system_clock());

// The server's clock from the timestamp it gave a write of ours: sent at
// `sent` (this host's clock; `sent_steady` on the monotonic one), its
// answer back at `answered`, stamped `stamped` by the server. The stamp was
// made between the two: no request of its own (a waiter in a lease's line
// reads its own place back instead of creating a consumer).
ServerClock clock_from_stamp(TimePoint sent, std::chrono::steady_clock::time_point sent_steady,
                             std::chrono::steady_clock::time_point answered, TimePoint stamped,
                             const Clock& local = system_clock());

// A reading of the server's clock sent now and read later, so that its
// round trip overlaps another's (status sends one just ahead of its batch of
// task-lease reads, whose flush takes it along).
class PendingServerClock {
 public:
  explicit PendingServerClock(const kv::Bucket& bucket);
  // The reading; or, when its answer did not come soon, does not read, or
  // took long enough to be loose (over 100 ms), one read_server_clock makes
  // (which says why when it fails too).
  ServerClock get(const Clock& local = system_clock());

 private:
  const kv::Bucket& bucket_;
  kv::Bucket::ClockProbe probe_;
};

}  // namespace swarm
