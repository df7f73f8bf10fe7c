// Delivery metadata read from JetStream ack subjects, both formats.
#include "kv/ack_subject.h"

#include <doctest/doctest.h>

using kv::detail::parse_ack_subject;

TEST_CASE("AckSubject_ReadsTheNineTokenForm") {
  // $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
  auto d = parse_ack_subject("$JS.ACK.KV_b.cons1.1.42.7.1700000000123456789.3");
  REQUIRE(d);
  CHECK(d->stream_seq == 42);
  CHECK(d->consumer_seq == 7);
  CHECK(d->timestamp == 1700000000123456789);
  CHECK(d->pending == 3);
  CHECK(d->consumer == "cons1");
}

TEST_CASE("AckSubject_ReadsTheDomainForm") {
  // $JS.ACK.<domain>.<hash>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>.<token>
  auto d = parse_ack_subject("$JS.ACK.hub.ACCHASH.KV_b.cons1.1.99.12.1700000000000000001.0.xyz");
  REQUIRE(d);
  CHECK(d->stream_seq == 99);
  CHECK(d->consumer_seq == 12);
  CHECK(d->pending == 0);
  CHECK(d->consumer == "cons1");
}

TEST_CASE("AckSubject_RefusesOtherShapes") {
  // anything else is left to nats.c (nullopt), never misread.
  for (const char* bad : {"", "_INBOX.abc", "$JS.ACK.a.b.c", "$JS.ACK.KV_b.c.1.x.7.8.9",
                          "$JS.ACK.KV_b.c.1.2.3.4", "$JS.ACK.KV_b.c.1.2.3.4.5.6.7", "$JS.ACK.KV_b.c.1.-2.3.4.5",
                          "$JS.ACK.KV_b.c.1..3.4.5", "$JS.ACK.KV_b.c.1.2x.3.4.5"})
    CHECK_MESSAGE(!parse_ack_subject(bad), bad);
}
