// The session record: round trips, every corrupt shape, unknown fields kept.
#include "support/json_fields.h"
#include "swarm/slots/session.h"

#include <doctest/doctest.h>

#include <random>

#include "swarm/base/json.h"

using namespace swarm;

namespace {

Session sample() {
  Session s;
  s.slot = "render";
  s.task_id = "T-42";
  s.agent_id = "slot-render";
  s.host = "build-7";
  s.host_id = "3f9c0a";
  s.leaf_pid = 4121;
  s.hub_url = "file:///w/.swarm/hub.git";
  s.started_at = parse_rfc3339("2026-11-22T10:00:00Z");
  s.last_renewed = parse_rfc3339("2026-11-22T10:04:10.250Z");
  return s;
}

std::string reason_for(const std::string& json) {
  auto parsed = parse_session(json);
  CHECK_FALSE(parsed.session);
  return parsed.corrupt_reason;
}

}  // namespace

TEST_CASE("Session_RoundTripsEveryField") {
  // to_json then parse_session gives back the same record, field for field.
  Session s = sample();
  auto parsed = parse_session(to_json(s));
  REQUIRE(parsed.session);
  const Session& r = *parsed.session;
  CHECK(r.slot == s.slot);
  CHECK(r.task_id == s.task_id);
  CHECK(r.agent_id == s.agent_id);
  CHECK(r.host == s.host);
  CHECK(r.host_id == s.host_id);
  CHECK(r.leaf_pid == s.leaf_pid);
  CHECK(r.hub_url == s.hub_url);
  CHECK(r.started_at == s.started_at);
  CHECK(r.last_renewed == s.last_renewed);
  CHECK(r.same_session_as(s));
  CHECK(to_json(r) == to_json(s));
}

TEST_CASE("Session_WritesContractFieldNamesAndUtcTimes") {
  // the JSON carries the contract's field names and RFC 3339 UTC times.
  Json json = Json::parse(to_json(sample()));
  REQUIRE(json);
  for (const char* field : {"slot", "task_id", "agent_id", "host", "host_id", "hub_url", "started_at", "last_renewed"})
    CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(json.get(), field)));
  CHECK(cJSON_GetObjectItemCaseSensitive(json.get(), "leaf_pid")->valuedouble == 4121);
  CHECK(std::string(cJSON_GetObjectItemCaseSensitive(json.get(), "started_at")->valuestring) ==
        "2026-11-22T10:00:00.000Z");
}

TEST_CASE("Session_ReadsBonesRecordWithoutHostId") {
  // a record from an older client (no host_id, second-precision times) reads fine.
  auto parsed = parse_session(
      R"({"slot":"a","task_id":"T-1","agent_id":"slot-a","host":"h","leaf_pid":7,)"
      R"("hub_url":"file:///x","started_at":"2026-11-22T10:00:00Z","last_renewed":"2026-11-22T10:01:00+01:00"})");
  REQUIRE(parsed.session);
  CHECK(parsed.session->host_id.empty());
  CHECK(*parsed.session->last_renewed == *parse_rfc3339("2026-11-22T09:01:00Z"));
}

TEST_CASE("Session_ToleratesMissingOptionalFields") {
  // only slot and host are required.
  auto parsed = parse_session(R"({"slot":"a","host":"h"})");
  REQUIRE(parsed.session);
  CHECK(parsed.session->leaf_pid == 0);
  CHECK_FALSE(parsed.session->started_at);
  auto with_nulls = parse_session(R"({"slot":"a","host":"h","task_id":null,"leaf_pid":null})");
  CHECK(with_nulls.session);
}

TEST_CASE("Session_KeepsUnknownFieldsAcrossAnUpdate") {
  // fields a newer writer added survive a read-modify-write by this version.
  auto parsed = parse_session(
      R"({"slot":"a","host":"h","future":{"x":[1,2,{"y":null}]},"remark":"keep me","n":1.5,"flag":false})");
  REQUIRE(parsed.session);
  Session s = *parsed.session;
  CHECK(s.unknown_fields.size() == 4);
  s.last_renewed = parse_rfc3339("2026-11-22T11:00:00Z");
  Json out = Json::parse(to_json(s));
  REQUIRE(out);
  char* future = cJSON_PrintUnformatted(cJSON_GetObjectItem(out.get(), "future"));
  CHECK(std::string(future) == R"({"x":[1,2,{"y":null}]})");
  cJSON_free(future);
  CHECK(testing::text_of(out.get(), "remark") == "keep me");
  CHECK(testing::number_of(out.get(), "n") == 1.5);
  CHECK(cJSON_IsFalse(cJSON_GetObjectItem(out.get(), "flag")));
  CHECK(testing::text_of(out.get(), "last_renewed") == "2026-11-22T11:00:00.000Z");
}

TEST_CASE("Session_CorruptShapesAreReportedNotThrown") {
  // every unreadable value gives a plain reason, never an exception or crash.
  CHECK(reason_for("") == "the value is empty");
  CHECK(reason_for("{") == "the value is not valid JSON");
  CHECK(reason_for("not json at all") == "the value is not valid JSON");
  CHECK(reason_for("\xff\xfe") == "the value is not valid UTF-8");
  CHECK(reason_for("[1,2]") == "the value is not a JSON object");
  CHECK(reason_for("\"slot\"") == "the value is not a JSON object");
  CHECK(reason_for("null") == "the value is not a JSON object");
  CHECK(reason_for("42") == "the value is not a JSON object");
  CHECK(reason_for("{}") == "field 'slot' is missing");
  CHECK(reason_for(R"({"host":"h"})") == "field 'slot' is missing");
  CHECK(reason_for(R"({"slot":"a"})") == "field 'host' is missing");
  CHECK(reason_for(R"({"slot":"","host":"h"})") == "field 'slot' is missing");
  CHECK(reason_for(R"({"slot":1,"host":"h"})") == "field 'slot' is not a string");
  CHECK(reason_for(R"({"slot":"a","host":["h"]})") == "field 'host' is not a string");
  CHECK(reason_for(R"({"slot":"a","host":"h","task_id":{}})") == "field 'task_id' is not a string");
  CHECK(reason_for(R"({"slot":"a","host":"h","leaf_pid":"12"})") == "field 'leaf_pid' is not a process id");
  CHECK(reason_for(R"({"slot":"a","host":"h","leaf_pid":-1})") == "field 'leaf_pid' is not a process id");
  CHECK(reason_for(R"({"slot":"a","host":"h","leaf_pid":1.5})") == "field 'leaf_pid' is not a process id");
  CHECK(reason_for(R"({"slot":"a","host":"h","started_at":12})") == "field 'started_at' is not a string");
  CHECK(reason_for(R"({"slot":"a","host":"h","started_at":"yesterday"})") ==
        "field 'started_at' is not an RFC 3339 time of the years 1678 to 2261: 'yesterday'");
  CHECK(reason_for(R"({"slot":"a","host":"h","last_renewed":"2026-02-30T00:00:00Z"})").find("last_renewed") !=
        std::string::npos);
  CHECK(reason_for(R"({"slot":"a","host":"h"} trailing)") == "the value is not valid JSON");
  CHECK(reason_for(std::string(R"({"slot":"a","host":"h"})") + '\0' + "x") == "the value is not valid JSON");
}

TEST_CASE("Session_SameSessionIsSlotHostAndStart") {
  // the CAS retry identity: a new start time on the same slot and host is another session.
  Session a = sample();
  Session b = a;
  b.last_renewed = parse_rfc3339("2026-11-22T12:00:00Z");
  b.task_id = "other";
  CHECK(a.same_session_as(b));
  b.started_at = parse_rfc3339("2026-11-22T10:00:00.001Z");
  CHECK_FALSE(a.same_session_as(b));
  Session c = a;
  c.host = "build-8";
  CHECK_FALSE(a.same_session_as(c));
}

TEST_CASE("Session_TimesAClockCannotHoldAreCorrupt") {
  // a time outside 1678-2261 would overflow a nanosecond time_point: the record is corrupt, never wrapped around.
  for (const char* t : {"1500-01-01T00:00:00Z", "1677-09-21T00:12:43Z", "2262-04-12T00:00:00Z", "9999-12-31T23:59:59Z"}) {
    CHECK_MESSAGE(!parse_rfc3339(t), t);
    auto parsed = parse_session(std::string(R"({"slot":"a","host":"h","started_at":")") + t + "\"}");
    CHECK_MESSAGE(!parsed.session, t);
    CHECK(parsed.corrupt_reason.find("1678 to 2261") != std::string::npos);
  }
  CHECK(parse_rfc3339("1678-01-01T00:00:00Z"));
  CHECK(parse_rfc3339("2261-12-31T23:59:59Z"));
}

TEST_CASE("Session_RenewalWritesBackWhatItDidNotChangeExactlyAsRead") {
  // another writer's started_at (nanoseconds, an offset) and an unknown field swarm cannot hold exactly in a double
  // survive a renewal byte for byte; only last_renewed changes.
  const std::string started = "2026-11-22T11:00:00.123456789+01:00";
  auto parsed = parse_session(R"({"slot":"a","host":"h","started_at":")" + started +
                              R"(","big":12345678901234567890,"tiny":1e-400,"nested":{"n":1.000}})");
  REQUIRE(parsed.session);
  Session s = *parsed.session;
  s.last_renewed = parse_rfc3339("2026-11-22T11:00:00Z");
  std::string written = to_json(s);
  CHECK(written.find(R"("started_at":")" + started + "\"") != std::string::npos);
  CHECK(written.find(R"("big":12345678901234567890)") != std::string::npos);
  CHECK(written.find(R"("tiny":1e-400)") != std::string::npos);
  CHECK(written.find(R"("nested":{"n":1.000})") != std::string::npos);
  CHECK(written.find(R"("last_renewed":"2026-11-22T11:00:00.000Z")") != std::string::npos);
  // A changed start is written in swarm's own form.
  s.started_at = *s.started_at + std::chrono::seconds(1);
  CHECK(to_json(s).find(started) == std::string::npos);
}

TEST_CASE("Session_NulInAStringIsCorruptNotCut") {
  // "v\u0000m" is not the host "v": such a record is corrupt; an escaped backslash before u0000 is plain text.
  auto parsed = parse_session(R"({"slot":"a","host":"v\u0000m"})");
  CHECK_FALSE(parsed.session);
  CHECK(parsed.corrupt_reason.find("NUL") != std::string::npos);
  auto literal = parse_session(R"({"slot":"a","host":"v\\u0000m"})");
  REQUIRE(literal.session);
  CHECK(literal.session->host == "v\\u0000m");
}

TEST_CASE("Session_SaysWhenItsTextIsExactlyWhatSwarmWrites") {
  // status --json shows a record's stored bytes when they are exactly what
  // to_json writes of it. Random sessions as swarm writes them are; each
  // change another writer could make (spaces, an order of its own, a number
  // written otherwise, an empty or null field, a repeated or unknown field)
  // is either not, or (when it is said to be) still to_json's bytes.
  std::mt19937_64 rng(1127);
  auto pick = [&](std::initializer_list<const char*> options) {
    return std::string(*(options.begin() + rng() % options.size()));
  };
  int exact = 0, changed_exact = 0;
  for (int i = 0; i < 3000; ++i) {
    Session s;
    s.slot = "s" + std::to_string(rng() % 1000);
    s.host = pick({"build-7", "h\xc3\xa9te", "a/b"});
    s.task_id = pick({"", "T-1", "T-x y"});
    s.agent_id = pick({"", "slot-a"});
    s.host_id = pick({"", "3f9c0a"});
    s.leaf_pid = static_cast<std::int64_t>(rng() % 3 == 0 ? 0 : rng() % 100000);
    s.hub_url = pick({"", "file:///w/.swarm/hub.git"});
    if (rng() % 2) s.started_at = parse_rfc3339(pick({"2026-11-22T10:00:00Z", "2026-11-22T10:00:00.5+02:00"}));
    if (rng() % 2) s.last_renewed = parse_rfc3339("2026-11-22T10:04:10.250Z");
    s.session_token = rng() % 3 == 0 ? 0 : rng() % 1000;
    if (rng() % 4 == 0) {
      s.port_base = 20000;
      s.ports = 4;
    }
    const std::string text = to_json(s);
    const ParsedSession as_is = parse_session(text);
    REQUIRE(as_is.session);
    CHECK_MESSAGE(as_is.as_written, text);
    exact += as_is.as_written;

    std::string other = text;
    switch (rng() % 8) {
      case 0: other.insert(1, " "); break;                                           // a space
      case 1: other.insert(other.size() - 1, ",\"newer\":1"); break;                 // an unknown field
      case 2: other.insert(other.size() - 1, ",\"slot\":\"" + s.slot + "\""); break;  // a repeat
      case 3: other.insert(1, "\"task_id\":null,"); break;                           // null, and out of order
      case 4: other.insert(other.size() - 1, ",\"agent_id\":\"\""); break;            // an empty text
      case 5: other.insert(other.size() - 1, ",\"leaf_pid\":7.0"); break;             // a number as 7.0
      case 6: other.insert(other.size() - 1, ",\"ports\":0"); break;                  // a 0 written
      default: {
        // The first two members swapped.
        const auto first_end = other.find(",\"");
        const auto second_end = other.find(",\"", first_end + 1);
        if (second_end == std::string::npos) break;
        other = "{" + other.substr(first_end + 1, second_end - first_end - 1) + "," +
                other.substr(1, first_end - 1) + other.substr(second_end);
      }
    }
    const ParsedSession read = parse_session(other);
    if (!read.session || !read.as_written) continue;
    ++changed_exact;
    CHECK_MESSAGE(to_json(*read.session) == other, other);
  }
  CHECK(exact == 3000);
  MESSAGE(changed_exact << " changed texts were still swarm's own bytes");
}
