// LiveSessions: the model behind status --watch.
#include "swarm/slots/status.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "swarm/base/text.h"
#include "swarm/lease/rules.h"

using namespace swarm;
using namespace std::chrono_literals;

namespace {
SessionEvent put(const std::string& slot, TimePoint at) {
  SessionEvent e;
  e.kind = SessionEvent::Kind::put;
  e.entry = session_entry_of({slot, R"({"slot":")" + slot + R"(","host":"h"})", 1, at});
  return e;
}
}  // namespace

TEST_CASE("LiveSessions_AppliesPutsDeletesAndExpiresByTtl") {
  // puts add or replace, deletes remove, and entries past the TTL drop out with no event.
  LiveSessions live;
  TimePoint t0 = std::chrono::system_clock::now();
  CHECK(live.apply(put("a", t0))->kind == LiveSessions::Change::Kind::put);
  CHECK(live.apply(put("b", t0 + 2s)));
  CHECK(live.size() == 2);
  SessionEvent erase;
  erase.kind = SessionEvent::Kind::erase;
  erase.entry.slot = "b";
  CHECK(live.apply(erase)->kind == LiveSessions::Change::Kind::erase);
  CHECK_FALSE(live.apply(erase));  // already gone: no change
  SessionEvent caught_up;
  caught_up.kind = SessionEvent::Kind::caught_up;
  CHECK_FALSE(live.apply(caught_up));
  CHECK(live.expire(t0 + 4s, 5s).empty());
  auto expired = live.expire(t0 + 5s, 5s);
  REQUIRE(expired.size() == 1);
  CHECK(expired[0].slot == "a");
  CHECK(live.size() == 0);
}

TEST_CASE("Liveness_StatesByThirdsOfTheTtl") {
  // fresh below TTL/3, late below 2TTL/3, stale from there.
  CHECK(state_of(0s, 300s) == State::fresh);
  CHECK(state_of(99s, 300s) == State::fresh);
  CHECK(state_of(100s, 300s) == State::late);
  CHECK(state_of(199s, 300s) == State::late);
  CHECK(state_of(200s, 300s) == State::stale);
  CHECK(state_of(1000s, 300s) == State::stale);
  auto now = std::chrono::system_clock::now();
  CHECK(age_of(now + 5s, now) == 0ms);  // a server clock ahead reads as age 0
  CHECK(age_of(now - 5s, now) == 5000ms);
}

TEST_CASE("SessionTable_SortsRowsNaturallyAndKeepsEachRowWhole") {
  // 3,000 sessions in a shuffled order come out in natural slot order, each
  // row with its own task, revision and host (the rows are moved into place).
  std::vector<std::string> slots;
  for (int i = 0; i < 1000; ++i)
    for (const char* prefix : {"agent-", "render-", "s"}) slots.push_back(prefix + std::to_string(i));
  std::mt19937 shuffle_by(7);
  std::shuffle(slots.begin(), slots.end(), shuffle_by);
  SessionTable table(HostIdentity{"h", "id"}, false);
  const TimePoint t0 = std::chrono::system_clock::now();
  std::uint64_t revision = 0;
  for (const auto& slot : slots)
    table.add(session_entry_of(
        {slot, R"({"slot":")" + slot + R"(","task_id":"T-)" + slot + R"(","host":"h-)" + slot + R"("})", ++revision, t0}));
  table.finish(0, 60s, t0, 0ms);
  std::vector<std::string> expected = slots;
  std::sort(expected.begin(), expected.end(), [](const std::string& a, const std::string& b) { return natural_less(a, b); });
  REQUIRE(table.rows().size() == expected.size());
  CHECK(table.rows()[0].slot == "agent-0");
  CHECK(table.rows()[1].slot == "agent-1");
  CHECK(table.rows()[10].slot == "agent-10");
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const SessionRow& row = table.rows()[i];
    INFO(i);
    CHECK(row.slot == expected[i]);
    CHECK(row.task_id == "T-" + expected[i]);
    CHECK(row.host == "h-" + expected[i]);
    CHECK(slots[row.revision - 1] == expected[i]);
  }
}

TEST_CASE("Liveness_WhatAnObserverCallsStaleAJoinerTakesOver") {
  // status (an observer) judges a session stale with a margin at least a
  // joiner's (a waiter's expiry margin, lease/rules.h) however the two read
  // the server's clock (uncertainties up to 25 ms apart), so a join right
  // after a status that said stale never finds it late.
  for (auto ttl : {std::chrono::milliseconds(2000), std::chrono::milliseconds(6000), std::chrono::milliseconds(300000)}) {
    for (auto seen_unc : {0ms, 2ms, 20ms}) {
      for (auto join_unc : {0ms, 5ms, 20ms, 40ms}) {
        if (join_unc > seen_unc + 25ms) continue;
        for (auto age = ttl * 2 / 3 - 200ms; age < ttl * 2 / 3 + 200ms; age += 1ms) {
          if (observed_state(age, ttl, observer_margin(ttl, seen_unc)) != State::stale) continue;
          // The joiner reads later (elapsed >= 0): its certain age is the age less its margin.
          const auto certain = std::max(0ms, age - expiry_margin(ttl, join_unc));
          CHECK_MESSAGE(state_of(certain, ttl) == State::stale, "age ", age.count(), " ms, ttl ", ttl.count());
        }
      }
    }
  }
}

