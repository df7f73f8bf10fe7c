// The land lease kept while one land or one batch works: renewed by a
// LeaseKeeper; its loss stops the check and, above all, the push. However
// the work ends, renewals stop and the caller's lease is left as last
// renewed (for its release). Inside swarm/landing/ only.
#pragma once

#include <string>

#include "swarm/base/boot_clock.h"
#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/test_seam.h"
#include "swarm/landing/check.h"
#include "swarm/landing/landing.h"
#include "swarm/lease/lease_keeper.h"

namespace swarm {

// "a, b, c".
std::string joined(const std::vector<std::string>& items);
// The message of a land's merge commit, with its trailers.
std::string land_message(const std::string& slot, const std::string& onto, const std::string& task,
                         std::uint64_t token);

class LandHold {
 public:
  // `what` ("slot x", "the batch of a, b") and `onto` name the work in messages.
  // `run` outlives this hold (its keeper's thread may kill the check).
  LandHold(const LeaseStore& store, Lease& lease, CheckRun& run, std::string what, std::string onto)
      : lease_(lease),
        what_(std::move(what)),
        onto_(std::move(onto)),
        keeper_(store, lease, [this, &run](const std::string& why, BootTime) {
          swarm::log::warn("lease {} lost while landing {}: {}", lease_.name, what_, why);
          run.kill();
        }) {}
  ~LandHold() {
    keeper_.stop();
    lease_ = keeper_.lease();
  }
  LandHold(const LandHold&) = delete;
  LandHold& operator=(const LandHold&) = delete;

  // Throws conflict unless the lease is surely ours for kLandPushMargin more.
  void require_held(const char* before) const {
    if (keeper_.lost() || BootClock::now() + kLandPushMargin >= keeper_.lease().deadline)
      throw Error(Errc::conflict, "lease " + lease_.name + " was lost " + before +
                                      " (it could not be renewed in time), so " + onto_ +
                                      " was not moved; land " + what_ + " again");
  }

 private:
  Lease& lease_;
  std::string what_;
  std::string onto_;
  LeaseKeeper keeper_;
};

}  // namespace swarm
