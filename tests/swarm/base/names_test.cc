// Names, durations and times as users type them.
#include <doctest/doctest.h>

#include "support/expect.h"
#include "swarm/base/clock.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"

using namespace swarm;
using namespace std::chrono_literals;

using testing::kind_of;

TEST_CASE("SlotName_FollowsTheContractRule") {
  // ^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$ and nothing else.
  for (const std::string good : {"a", "render", "A-1_b", "0", "x-"}) CHECK_MESSAGE(is_valid_slot_name(good), good);
  CHECK(is_valid_slot_name(std::string(63, 'z')));
  for (const char* bad : {"", "-a", "_a", "a.b", "a/b", "a b", "a*", "a>", "..", "é", "a\n"})
    CHECK_MESSAGE(!is_valid_slot_name(bad), bad);
  CHECK_FALSE(is_valid_slot_name(std::string(64, 'z')));
  CHECK(kind_of([] { require_slot_name("a/b"); }) == Errc::bad_input);
}

TEST_CASE("LeaseName_IsSlotTokensJoinedByDots") {
  // task.T-42 and user.alice are leases; empty tokens and wildcards are not.
  for (const char* good : {"task.T-42", "user.alice", "leader", "a.b.c"})
    CHECK_MESSAGE(is_valid_lease_name(good), good);
  for (const char* bad : {"", ".a", "a.", "a..b", "a.*", "a.>", "a b", "a._x"})
    CHECK_MESSAGE(!is_valid_lease_name(bad), bad);
  CHECK(is_valid_task_id(std::string(255, 'x')));
  for (const char* good : {"T-42", "gh#17", "acme/api#9", "T 42", "tâche-é", "日本", "a.b"})
    CHECK_MESSAGE(is_valid_task_id(good), good);
  for (const std::string& bad : {std::string(), std::string(256, 'x'), std::string("a\nb"), std::string("tab\t"),
                                std::string("del\x7f"), std::string("\xc2\x85"), std::string("\xff"),
                                std::string("\xc0\xaf"), std::string("\xed\xa0\x80"), std::string("\xe2\x82")})
    CHECK_MESSAGE(!is_valid_task_id(bad), bad);
  CHECK(kind_of([] { require_task_id("a\nb"); }) == Errc::bad_input);
}

TEST_CASE("Duration_ParsesUnitsAndCombinations") {
  // 90s, 5m, 1h30m, 250ms, 1.5s and a bare 0.
  CHECK(parse_duration("90s") == 90s);
  CHECK(parse_duration("5m") == 5min);
  CHECK(parse_duration("1h30m") == 90min);
  CHECK(parse_duration("250ms") == 250ms);
  CHECK(parse_duration("1.5s") == 1500ms);
  CHECK(parse_duration("1m30s") == 90s);
  CHECK(parse_duration("0") == 0ms);
  CHECK(parse_duration("0s") == 0ms);
  CHECK(parse_duration("1.5ms") == 2ms);  // to the nearest millisecond
  CHECK(parse_duration("0.25h") == 15min);
  CHECK(parse_duration("1000000s") == 1000000s);
}

TEST_CASE("Duration_RejectsWhatIsNotADuration") {
  // a unitless number, a negative, an unknown unit or junk is bad input with the accepted form.
  for (const char* bad : {"", "90", "-5s", "5d", "s", "1h30", "abc", "1..5s", " 5s", "5 s", "5S", ".s", "1e3s",
                          "1000001s", "300h", "1e400s"})
    CHECK_MESSAGE(kind_of([&] { parse_duration(bad); }) == Errc::bad_input, bad);
  // Hundreds of digits are bad input too (they once escaped as an exception of the standard library).
  const std::string huge = std::string(400, '1') + "s";
  CHECK(kind_of([&] { parse_duration(huge); }) == Errc::bad_input);
  CHECK(kind_of([&] { parse_duration(std::string(30, '9') + "ms"); }) == Errc::bad_input);
  try {
    parse_duration("90");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("e.g. 90s, 5m, 1h30m") != std::string::npos);
  }
}

TEST_CASE("Duration_FormatsToTheShortestForm") {
  // format_duration parses back to the same value.
  CHECK(format_duration(90s) == "1m30s");
  CHECK(format_duration(5min) == "5m");
  CHECK(format_duration(90min) == "1h30m");
  CHECK(format_duration(250ms) == "250ms");
  CHECK(format_duration(1500ms) == "1.5s");
  CHECK(format_duration(0ms) == "0s");
  for (auto d : {1ms, 999ms, 1000ms, 61001ms, 3600000ms, 3723004ms})
    CHECK(parse_duration(format_duration(d)) == d);
}

TEST_CASE("Rfc3339_ParsesAndFormatsUtc") {
  // UTC with milliseconds out; any RFC 3339 offset or fraction in.
  auto t = parse_rfc3339("2026-11-22T10:00:00Z");
  REQUIRE(t);
  CHECK(format_rfc3339(*t) == "2026-11-22T10:00:00.000Z");
  CHECK(parse_rfc3339("2026-11-22T11:30:00+01:30") == parse_rfc3339("2026-11-22T10:00:00Z"));
  CHECK(parse_rfc3339("2026-11-22t10:00:00.5z") == *t + 500ms);
  CHECK(format_rfc3339(*parse_rfc3339("2026-11-22T10:00:00.123456789Z")) == "2026-11-22T10:00:00.123Z");
  CHECK(parse_rfc3339("2024-02-29T00:00:00Z"));
  CHECK(format_compact_utc(*t + 7ms) == "20261122T100000.007Z");
  for (const char* bad : {"", "2026-11-22", "2026-11-22 10:00:00Z", "2026-13-01T00:00:00Z", "2025-02-29T00:00:00Z",
                          "2026-11-22T10:00:00", "2026-11-22T10:00:00Zjunk", "2026-11-22T25:00:00Z",
                          "2026-11-22T10:00:00.Z", "2026-11-22T10:00:00+0100"})
    CHECK_MESSAGE(!parse_rfc3339(bad), bad);
}
