// Leader election on a lease, as etcd's election is on its mutex: the leader
// holds the lease NAME, candidates wait in its line, and the next in line
// takes over when the leader dies, resigns or lets the lease expire. Anyone
// may watch who leads (LeaderWatch) or ask the leader to step down
// (request_resignation), which the leader hears through a ResignWatch.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "swarm/base/boot_clock.h"
#include "swarm/lease/lease.h"
#include "swarm/lease/mutex.h"
#include "swarm/lease/watch_pump.h"

namespace swarm {

class Election {
 public:
  // A candidate hears requests that name it to take over (elect --resign --to).
  Election(LeaseStore store, std::string name, LeaseHolder who, std::chrono::milliseconds ttl)
      : mutex_(std::move(store), std::move(name), std::move(who), ttl, true) {}
  // Waits in line until this candidate leads (for ever); Cancelled after cancel().
  Lease campaign() { return mutex_.lock(std::nullopt); }
  // Leads at once when nobody leads and nobody waits; conflict otherwise.
  Lease try_lead() { return mutex_.lock(std::chrono::milliseconds(0)); }
  void cancel() { mutex_.cancel(); }

 private:
  Mutex mutex_;
};

// Asks whoever leads `name` now to step down: writes a request naming the
// leader's token (a later leader is not asked), and with `to` the waiting
// candidate it hands over to. not_found when nobody leads. Returns the lease
// as it was when asked.
LeaseEntry request_resignation(const LeaseStore& store, const std::string& name, const LeaseHolder& by,
                               const std::optional<LiveWaiter>& to = std::nullopt);

// Hears requests that the leader holding `token` step down: calls
// `on_request` with the request once, on a thread of its own. Withdraw()
// removes the request (the leader did step down).
class ResignWatch {
 public:
  ResignWatch(const LeaseStore& store, const std::string& name, std::uint64_t token,
              std::function<void(const LeaseRecord&)> on_request);
  ~ResignWatch();
  ResignWatch(const ResignWatch&) = delete;
  ResignWatch& operator=(const ResignWatch&) = delete;
  void withdraw();

 private:
  LeaseStore store_;
  std::string name_;
  std::uint64_t token_;
  std::function<void(const LeaseRecord&)> on_request_;
  std::atomic<bool> stopping_{false};
  std::optional<kv::Watch> watch_;
  std::uint64_t request_revision_ = 0;
  std::thread thread_;
};

// What a leader does when asked to step down (elect, elect --all): hears
// the request (ResignWatch), says so (`note`: "asked to step down as leader
// of NAME: <doing>", with its minimum term's end when that is still ahead),
// and once its minimum term has ended (timed from its grant, as its deadline
// is) calls `step_down` on a thread of its own, unless cancel() came first.
class StepDownWatch {
 public:
  StepDownWatch(const LeaseStore& store, const Lease& lease, std::string doing,
                std::function<void(const std::string&)> note, std::function<void()> step_down);
  ~StepDownWatch();
  StepDownWatch(const StepDownWatch&) = delete;
  StepDownWatch& operator=(const StepDownWatch&) = delete;

  // No step down starts from now on (the leader's work ended by itself).
  void cancel();
  // step_down was called.
  bool stepped_down() const { return stepped_down_; }
  // The waiting candidate the request named (its place id, and its holder),
  // for the release: empty when none was named.
  std::pair<std::string, std::string> handover() const;
  // Removes the request (the leader did step down).
  void withdraw();

 private:
  BootTime term_ends_;
  std::function<void()> step_down_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false;
  std::atomic<bool> stepped_down_{false};
  std::string to_, to_holder_;
  std::thread waiter_;
  std::optional<ResignWatch> watch_;  // last: destroyed first, as its thread uses the above
};

// Who leads, as an observer sees each change.
struct Leadership {
  enum class Change { current, elected, released, expired };
  Change change = Change::current;
  std::optional<LeaseRecord> leader;  // empty: nobody leads
  std::uint64_t token = 0;
  // Why the last leader ended (released, expired, and the election after):
  // "expired", "resigned" (it released the lease) or "handed_over" (to a
  // named candidate); empty when no end was seen.
  std::string reason;
};
std::string_view to_string(Leadership::Change change);

// The leader of `name`, then each change of leader (a renewal is no change).
class LeaderWatch {
 public:
  // Where the server announces expiry (2.11+), a leader's end by its TTL is
  // its marker (this watch's own judgement only a few seconds later, should
  // the marker not come); with `me`, such an end is journaled (lease.expired).
  LeaderWatch(const LeaseStore& store, const std::string& name, std::optional<HostIdentity> me = std::nullopt);
  // The next change within `timeout`; the first call reports who leads now.
  std::optional<Leadership> next(std::chrono::milliseconds timeout);
  void stop() { pump_.wake(); stopped_ = true; }

 private:
  LeaseStore store_;
  std::string name_;
  WatchPump pump_;
  bool told_current_ = false;
  bool stopped_ = false;
  std::optional<LeaseRecord> leader_;
  std::uint64_t token_ = 0;
  std::uint64_t revision_ = 0;
  std::string reason_;  // why the last leader ended, for the next report
  std::optional<HostIdentity> me_;
  std::chrono::milliseconds grace_{0};  // added to expires_: the server's marker is awaited first
  std::uint64_t leader_revision_ = 0;  // the revision the leader's record was seen at
  bool live_ = false;                  // the watch replayed what was there: what comes now is new
  std::chrono::steady_clock::time_point expires_ = std::chrono::steady_clock::time_point::max();
};

}  // namespace swarm
