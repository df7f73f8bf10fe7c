// A message as the bus stores it and a reader takes it back (swarm/bus/
// message.h), and a cursor's record (cursors.h): pure functions of the
// stored text, no server. A reader never throws on what it cannot read: it
// says why the message is corrupt.
#include "swarm/bus/message.h"

#include <doctest/doctest.h>

#include "swarm/base/error.h"
#include "swarm/bus/cursors.h"

using namespace swarm;

namespace {

constexpr std::string_view kRoot = "swarm-w-bus.";
constexpr std::string_view kBucket = "swarm-w-sessions";

Message message_to(const std::string& to) {
  Message m;
  m.id = "m-1";
  m.from = "lead";
  m.to = to;
  m.type = "review";
  m.corr = "T-4";
  m.reply_to = "lead";
  m.body = "line one\nline two \xe2\x9c\x93";
  return m;
}

kv::StreamMessage stored(std::string subject, std::string data, std::uint64_t seq = 7) {
  return {std::move(subject), std::move(data), seq, std::chrono::system_clock::time_point(std::chrono::seconds(100))};
}

}  // namespace

TEST_CASE("Message_ReadBackAsSentToAnInboxAndToAll") {
  for (const std::string& to : {std::string("b"), std::string(kToAll)}) {
    CAPTURE(to);
    Message sent = message_to(to);
    sent.blob = BlobRef{std::string(64, 'a'), 70000, "notes.txt"};
    const std::string subject = to == kToAll ? all_subject(kRoot, kBucket) : inbox_subject(kRoot, kBucket, to);
    const Delivered d = delivered_of(stored(subject, sent.to_json()), kRoot, kBucket);
    REQUIRE_MESSAGE(!d.corrupt(), d.corrupt_reason);
    CHECK(d.seq == 7);
    CHECK(d.time == TimePoint(std::chrono::seconds(100)));
    CHECK(d.message->id == sent.id);
    CHECK(d.message->from == sent.from);
    CHECK(d.message->to == to);
    CHECK(d.message->type == sent.type);
    CHECK(d.message->corr == sent.corr);
    CHECK(d.message->reply_to == sent.reply_to);
    CHECK(d.message->body == sent.body);
    REQUIRE(d.message->blob);
    CHECK(d.message->blob->size == 70000);
    CHECK(d.message->blob->name == "notes.txt");
  }
}

TEST_CASE("Message_WhatIsNoMessageOfSwarmsIsCorruptWithWhy") {
  const std::string inbox_b = inbox_subject(kRoot, kBucket, "b");
  const std::string good = message_to("b").to_json();
  struct Case {
    std::string subject, data, why;
  };
  std::string wrong_type = good;
  wrong_type.replace(wrong_type.find("\"from\":\"lead\""), 13, "\"from\":42");
  std::string bad_blob = good;
  bad_blob.replace(bad_blob.find("\"blob\":null"), 11, "\"blob\":{\"sha256\":\"xyz\",\"size\":1,\"name\":\"\"}");
  const Case cases[] = {
      {inbox_b, "not json", "JSON"},
      {inbox_b, "[1,2]", "not a JSON object"},
      {inbox_b, "{\"schema\":\"swarm.event.v1\"}", "not swarm.message.v1"},
      {inbox_b, wrong_type, "should be text"},
      {inbox_b, bad_blob, "SHA-256"},
      // Sent to c's inbox but saying it is b's: not what swarm sends.
      {inbox_subject(kRoot, kBucket, "c"), good, "is not the inbox it was sent to"},
      // Another workspace's bus of the same server.
      {inbox_subject("swarm-other-bus.", kBucket, "b"), good, "is not the inbox it was sent to"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.data);
    const Delivered d = delivered_of(stored(c.subject, c.data), kRoot, kBucket);
    CHECK(d.corrupt());
    CHECK(d.corrupt_reason.find(c.why) != std::string::npos);
    // Shown as corrupt, with its place, never thrown.
    CHECK(d.to_json().dump().find("corrupt") != std::string::npos);
  }
}

TEST_CASE("Message_WordsAreShortPlainTextAndIdsAreKeptApartByInboxAndWorkspace") {
  CHECK_NOTHROW(require_message_word(std::string(255, 'x'), "--type"));
  CHECK_THROWS_WITH_AS(require_message_word(std::string(256, 'x'), "--type"), doctest::Contains("--type"), Error);
  CHECK_THROWS_AS(require_message_word("a\x1b[2Jb", "--corr"), Error);
  CHECK_THROWS_AS(require_message_word("\xff\xfe", "--id"), Error);
  const Message to_b = message_to("b"), to_c = message_to("c");
  CHECK(dedup_id(kBucket, to_b) != dedup_id(kBucket, to_c));
  CHECK(dedup_id(kBucket, to_b) != dedup_id("swarm-other-sessions", to_b));
  CHECK(dedup_id(kBucket, to_b) == dedup_id(kBucket, message_to("b")));
  CHECK(fresh_message_id() != fresh_message_id());
  CHECK(is_sha256_hex(std::string(64, 'f')));
  CHECK_FALSE(is_sha256_hex(std::string(64, 'F')));
  CHECK_FALSE(is_sha256_hex(std::string(63, 'a')));
}

TEST_CASE("Cursor_ARecordSaysItsSequenceAndBusOrNothing") {
  CHECK(Cursors::parse("{\"seq\":12,\"bus\":1700000000}") == std::pair<std::uint64_t, std::int64_t>{12, 1700000000});
  // What no ack writes reads as nothing acked, of no known bus.
  for (const char* planted : {"", "junk", "{\"seq\":-1,\"bus\":-5}", "{\"seq\":1e300,\"bus\":\"x\"}", "[]"}) {
    CAPTURE(planted);
    CHECK(Cursors::parse(planted) == std::pair<std::uint64_t, std::int64_t>{0, -1});
  }
  CHECK(Cursors::at_of("{\"at\":1700000000123}") == 1700000000123);
  CHECK(Cursors::at_of("{\"at\":-3}") == -1);
}
