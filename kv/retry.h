// Retrying requests through a cluster's failover. While a stream elects a new
// leader, or the client reconnects to another node, requests time out or find
// no responder; a retry within the caller's timeout gets through once the
// cluster is back. Each attempt gets only a slice of the timeout, so a request
// lost with a dying leader does not use it all up. Only idempotent reads and
// CAS writes are retried: a CAS write that landed before its answer was lost
// is recognized on the retry (see Bucket::publish). Private to kv/.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

#include "kv/connection_state.h"
#include "kv/error.h"

namespace kv::detail {

// A failure that a retry may get past: no answer, no responder, no leader.
inline bool is_transient(const Error& e) { return e.kind() == Errc::timeout || e.kind() == Errc::unavailable; }

class Attempts {
 public:
  // An attempt waits at least this long, whatever the budget; and at most
  // this long while more attempts fit: a healthy server answers in
  // milliseconds, and a request sent to a node that died never will.
  static constexpr std::chrono::milliseconds kShortestAttempt{300};
  static constexpr std::chrono::milliseconds kLongestAttempt{1500};
  // The budget is cut into this many slices: as many attempts when each
  // times out, fewer when a refusal is followed by a pause.
  static constexpr int kSlices = 6;
  static constexpr std::chrono::milliseconds kFirstPause{25};
  static constexpr std::chrono::milliseconds kLongestPause{250};

  // The budget of one request on `connection`: `budget` when one is given,
  // else its request timeout, or what is left of its total wait limit (at
  // least one short attempt).
  explicit Attempts(ConnectionState& connection, std::chrono::milliseconds budget = {})
      : Attempts(budget.count() > 0 ? budget : budget_of(connection), &connection.waited_ms) {}

  Attempts(std::chrono::milliseconds budget, std::atomic<std::int64_t>* waited = nullptr)
      : start_(std::chrono::steady_clock::now()),
        deadline_(start_ + budget),
        slice_(std::clamp(budget / kSlices, std::min(kShortestAttempt, budget), kLongestAttempt)),
        waited_(waited) {}

  // The time spent here counts against the connection's total wait limit.
  ~Attempts() {
    if (waited_ != nullptr)
      *waited_ += std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start_)
                      .count();
  }
  Attempts(const Attempts&) = delete;
  Attempts& operator=(const Attempts&) = delete;

  // How long the next attempt may wait for its answer (at least 1ms).
  std::chrono::milliseconds wait() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
    // The last attempt takes what is left rather than leaving a sliver
    // unused; a third of a slice or more is left for an attempt of its own
    // (again_after's least), so a budget of six slices makes six.
    auto wait = left < slice_ + slice_ / 3 ? left : slice_;
    return std::max(wait, std::chrono::milliseconds(1));
  }

  // When the budget runs out.
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }

  // What is left of the budget (at least 1ms): for a follow-up read that
  // must fit in it.
  std::chrono::milliseconds left() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
    return std::max(left, std::chrono::milliseconds(1));
  }

  // After a failure: true (having paused) when it is transient and time is
  // left for another attempt; false means rethrow. Only a refusal that came
  // at once (no responder, no leader) is followed by a pause; an attempt
  // that timed out has waited already, and the next one goes at once. On
  // nats-server 2.9 a consumer is placed on a random replica of its stream,
  // dead or alive, so a third of creations after a node loss go unanswered:
  // the attempts the budget holds are what rides that out.
  bool again_after(const Error& e) {
    if (!is_transient(e)) return false;
    auto pause = e.kind() == Errc::timeout ? std::chrono::milliseconds(0)
                                            : std::min(kLongestPause, kFirstPause * (1 << std::min(failures_, 4)));
    ++failures_;
    if (std::chrono::steady_clock::now() + pause + slice_ / 3 >= deadline_) return false;
    std::this_thread::sleep_for(pause);
    return true;
  }

 private:
  static std::chrono::milliseconds budget_of(const ConnectionState& connection) {
    if (connection.total_wait_limit.count() <= 0) return connection.request_timeout;
    auto left = connection.total_wait_limit - std::chrono::milliseconds(connection.waited_ms.load());
    return std::clamp(left, std::min(kShortestAttempt, connection.request_timeout), connection.request_timeout);
  }

  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::milliseconds slice_;
  std::atomic<std::int64_t>* waited_;
  int failures_ = 0;
};

// Runs attempt(wait) until it returns, fails for good, or the budget (0: that
// of a request on `connection`) is spent.
template <typename Attempt>
auto with_retries(ConnectionState& connection, std::chrono::milliseconds budget, Attempt attempt)
    -> decltype(attempt(std::chrono::milliseconds())) {
  Attempts attempts(connection, budget);
  while (true) {
    try {
      return attempt(attempts.wait());
    } catch (const Error& e) {
      if (!attempts.again_after(e)) throw;
    }
  }
}

}  // namespace kv::detail
