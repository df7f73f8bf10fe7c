// How a request's budget is shared out over its attempts (kv/retry.h).
#include "kv/retry.h"

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

using namespace std::chrono_literals;
using kv::detail::Attempts;

namespace {

std::chrono::milliseconds time_of_again_after(Attempts& attempts, const kv::Error& e, bool* again) {
  const auto start = std::chrono::steady_clock::now();
  *again = attempts.again_after(e);
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
}

}  // namespace

TEST_CASE("Retry_ATimedOutAttemptIsFollowedAtOnceARefusalAfterAPause") {
  // A timed-out attempt has waited its slice already: on nats-server 2.9 a
  // third of consumer creations after a node loss go to the dead node, and
  // every attempt the budget holds counts. A refusal that came at once waits
  // a little before the next try, longer each time.
  Attempts attempts(std::chrono::milliseconds(10000));
  const kv::Error timed_out(kv::Errc::timeout, "no answer");
  const kv::Error refused(kv::Errc::unavailable, "no responders");
  bool again = false;
  CHECK(time_of_again_after(attempts, refused, &again) >= Attempts::kFirstPause);
  CHECK(again);
  CHECK(time_of_again_after(attempts, refused, &again) >= Attempts::kFirstPause * 2);
  CHECK(again);
  // (A pause would now be 100 ms, then 200 ms.)
  CHECK(time_of_again_after(attempts, timed_out, &again) < Attempts::kFirstPause * 2);
  CHECK(again);
  CHECK(time_of_again_after(attempts, timed_out, &again) < Attempts::kFirstPause * 2);
  CHECK(again);
  // Not transient: given up at once.
  CHECK_FALSE(attempts.again_after(kv::Error(kv::Errc::bad_request, "refused for good")));
}

TEST_CASE("Retry_ABudgetOfThreeSecondsHoldsSixAttemptsThatTimeOut") {
  // What rides out a consumer placed on a dead node: a 3 s budget (a verb's
  // --timeout 3s) makes six attempts of 500 ms, the last taking what is
  // left, and ends on time. (Before, pauses after timeouts and a last
  // attempt of two slices made five.)
  Attempts attempts(std::chrono::milliseconds(3000));
  CHECK(attempts.wait() == 500ms);
  int made = 0;
  std::chrono::nanoseconds overslept{0};  // beyond the waits asked for: the machine's, not the rule's
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    ++made;
    const auto wait = attempts.wait();
    const auto began = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(wait);  // the attempt, unanswered
    overslept += std::chrono::steady_clock::now() - began - wait;
    if (!attempts.again_after(kv::Error(kv::Errc::timeout, "no answer"))) break;
  }
  const auto spent = std::chrono::steady_clock::now() - start;
  // The sixth attempt needs a third of a slice (166 ms) left after five: a
  // machine busy enough to oversleep that much (another copy of the suite
  // beside this one) leaves room for five, and the test says so.
  if (overslept < 150ms) {
    CHECK(made == 6);
  } else {
    MESSAGE("the sleeps overran by " << overslept.count() / 1000000 << " ms: " << made << " attempts");
    CHECK(made >= 5);
  }
  CHECK(spent >= 2990ms);
  CHECK(spent < 3300ms);
}
