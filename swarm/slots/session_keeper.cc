#include "swarm/slots/session_keeper.h"

#include <algorithm>

#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/test_seam.h"
#include "swarm/base/warnings.h"
#include "swarm/lease/lease_keeper.h"

namespace swarm {

namespace {

using std::chrono::milliseconds;

// After a renewal that failed but may still succeed, the next try.
constexpr milliseconds kRetryPause{200};
// One renewal's requests take at most this long each, and never past the
// moment the keeper gives up: a stalled server neither holds a renewal for
// minutes nor keeps stop() waiting for it.
constexpr milliseconds kRenewalBudget{5000};
// How often the watchdog looks at the deadline.
constexpr milliseconds kWatchSlice{50};

// What a failed renewal of `mine` says: the slot lost (evicted, taken), or
// nothing (tried again).
std::optional<SessionKeeper::Loss> loss_of(const Error& e, const SlotLifecycle& bounded, const SessionEntry& mine) {
  using Loss = SessionKeeper::Loss;
  if (e.kind() == Errc::not_found) return Loss::evicted;
  if (e.kind() == Errc::foreign_host || e.kind() == Errc::corrupt) return Loss::taken;
  if (e.kind() != Errc::conflict) return std::nullopt;
  // Lost every race of a burst (the agent renewing too), or lost the
  // slot: only a record that is another session's now is a loss.
  std::optional<SessionEntry> now;
  try {
    now = bounded.sessions().get(mine.slot);
  } catch (const Error&) {
    return std::nullopt;  // unknown: tried again
  }
  if (!now) return Loss::evicted;
  if (now->corrupt() || !now->session->same_session_as(*mine.session)) return Loss::taken;
  return std::nullopt;
}

}  // namespace

std::string_view to_string(SessionKeeper::Loss loss) {
  switch (loss) {
    case SessionKeeper::Loss::taken: return "taken";
    case SessionKeeper::Loss::evicted: return "evicted";
    case SessionKeeper::Loss::unreachable: return "unreachable";
  }
  return "unreachable";
}

SessionKeeper::SessionKeeper(const SlotLifecycle& lifecycle, SessionEntry entry, BootTime sent, OnLost on_lost,
                             Presence pending)
    : lifecycle_(lifecycle),
      on_lost_(std::move(on_lost)),
      ttl_(lifecycle.sessions().ttl()),
      entry_(std::move(entry)),
      pending_(std::move(pending)),
      deadline_(sent + ttl_) {
  try {
    changes_.emplace(lifecycle.sessions().config_changes());
  } catch (const Error& e) {
    // Renewals go on at the pace the TTL had: only a lowered TTL is missed.
    warn(log::format("slot {}: not listening for TTL changes ({})", entry_.slot, e.what()));
  }
  thread_ = std::thread([this] { run(); });
  watchdog_ = std::thread([this] { watch(); });
}

SessionKeeper::~SessionKeeper() { stop(); }

void SessionKeeper::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread* t : {&thread_, &watchdog_})
    if (t->joinable() && t->get_id() != std::this_thread::get_id()) t->join();
}

BootTime SessionKeeper::deadline() const {
  std::lock_guard lock(mu_);
  return deadline_;
}

SessionEntry SessionKeeper::entry() const {
  std::lock_guard lock(mu_);
  return entry_;
}

void SessionKeeper::lose(Loss loss, const std::string& why) {
  if (lost_.exchange(true)) return;
  swarm::log::debug("slot {}: session lost ({}): {}", entry().slot, to_string(loss), why);
  if (on_lost_) on_lost_(loss, why, deadline());
}

void SessionKeeper::watch() {
  std::unique_lock lock(mu_);
  while (!stopping_ && !lost_) {
    if (BootClock::now() >= deadline_ - give_up_lead(ttl_)) {
      lock.unlock();
      lose(Loss::unreachable, "no renewal got through before its deadline");
      return;
    }
    wake_.wait_for(lock, kWatchSlice);
  }
}

void SessionKeeper::run() {
  // Waits on the boot clock in slices of the steady one; false when stopped
  // or lost. A change of the bucket's config ends the wait at once.
  bool config_changed = false;
  auto sleep_until = [&](BootTime when) {
    std::unique_lock lock(mu_);
    while (!stopping_ && !lost_) {
      auto left = when - BootClock::now();
      if (left <= BootClock::duration::zero()) return true;
      if (changes_ && changes_->changed()) {
        config_changed = true;
        return true;
      }
      wake_.wait_for(lock, std::min<BootClock::duration>(left, milliseconds(100)));
    }
    return false;
  };
  // A third of the TTL after the last write was sent, as a lease's keeper.
  BootTime next = deadline() - ttl_ + ttl_ / 3;
  while (sleep_until(next)) {
    const BootTime give_up = deadline() - give_up_lead(ttl_);
    const BootTime sent = BootClock::now();
    if (sent >= give_up) {
      lose(Loss::unreachable, "no renewal got through before its deadline");
      return;
    }
    const auto left = std::clamp(std::chrono::duration_cast<milliseconds>(give_up - sent), milliseconds(1),
                                 kRenewalBudget);
    const SlotLifecycle bounded = lifecycle_.with_budget(left);
    try {
      if (config_changed) {
        // `up --ttl` changed it in place: the server judges by the new one
        // from now, and so does the keeper from this renewal on.
        config_changed = false;
        const milliseconds now_ttl = bounded.sessions().current_ttl();
        std::lock_guard lock(mu_);
        ttl_ = now_ttl;
      }
      stop_here_for_test(kRunStop, "renew");
      std::vector<std::string> warnings;
      SessionEntry written;
      std::optional<LeaseEntry> task_lease;
      bounded.renew(entry(), task_, &warnings, pending_, &written, &task_lease);
      task_ = std::move(task_lease);
      for (const auto& w : warnings) warn(w);
      if (lost_) return;  // the watchdog gave up on it meanwhile: the work is being stopped
      {
        std::lock_guard lock(mu_);
        entry_ = std::move(written);  // what another writer (the agent's renew --status) put there too
        deadline_ = sent + ttl_;
      }
      pending_ = {};
      next = sent + ttl_ / 3;
    } catch (const Error& e) {
      if (const auto loss = loss_of(e, bounded, entry())) {
        lose(*loss, e.what());
        return;
      }
      warn(log::format("slot {}: renewal failed, trying again: {}", entry().slot, e.what()));
      next = BootClock::now() + kRetryPause;
    }
  }
}

}  // namespace swarm
