// Which failures are worth a retry: a cluster between leaders is, whether
// nats.c hands over the JetStream code or only the server's text.
#include <doctest/doctest.h>

#include "kv/nats_handles.h"

using kv::Errc;
using kv::detail::kind_of_failure;

TEST_CASE("ErrorKind_AClusterBetweenLeadersIsUnavailableWithOrWithoutItsCode") {
  CHECK(kind_of_failure(NATS_ERR, jsErrCode(10008), "JetStream system temporarily unavailable") ==
        Errc::unavailable);
  // Consumer creation loses the code: the text alone must do.
  for (const char* text : {"JetStream system temporarily unavailable", "JetStream cluster can not handle request",
                           "incomplete results", "JetStream cluster not assigned to this server",
                           "no suitable peers for placement"}) {
    CAPTURE(text);
    CHECK(kind_of_failure(NATS_ERR, jsErrCode(0), text) == Errc::unavailable);
  }
}

TEST_CASE("ErrorKind_OtherFailuresKeepTheirKinds") {
  CHECK(kind_of_failure(NATS_ERR, jsErrCode(10071), "wrong last sequence: 42") == Errc::conflict);
  CHECK(kind_of_failure(NATS_TIMEOUT, jsErrCode(0), "Timeout") == Errc::timeout);
  CHECK(kind_of_failure(NATS_ERR, jsErrCode(0), "Authorization Violation") == Errc::bad_request);
  CHECK(kind_of_failure(NATS_ERR, jsErrCode(0), "maximum consumers limit reached") == Errc::internal);
}

TEST_CASE("ErrorKind_OnlyTheJetStreamCodeMakesAConflictNeverTheText") {
  // a failure without code 10071 is no CAS conflict, whatever text it carries: a read that failed after a lost CAS
  // race of its thread once carried that race's text ("read config of bucket swarm-leases: wrong last sequence")
  // and was reported as a conflict (exit 3).
  CHECK(kind_of_failure(NATS_ERR, jsErrCode(0), "wrong last sequence: 42") != Errc::conflict);
  CHECK(kind_of_failure(NATS_TIMEOUT, jsErrCode(0), "wrong last sequence: 42") == Errc::timeout);
}

TEST_CASE("ErrorKind_AKeyWithAnotherCasWriteInFlightIsTriedAgain") {
  // nats-server 2.11+ refuses a CAS write whose key another such write has in flight with code 10164 ("wrong last
  // sequence", no number): who wins is not known yet, so it is no conflict (exit 3) but worth another try; a join
  // racing another on a 3-node 2.15.2 cluster while it elected a leader once ended with exit 1 on it.
  CHECK(kind_of_failure(NATS_ERR, jsErrCode(10164), "wrong last sequence") == Errc::unavailable);
}

TEST_CASE("ErrorKind_AFullStoreIsNoRoom") {
  // a storage limit met (the server's, the account's) and a write the server's disk refused are no_room (exit 9),
  // not worth a retry: a full disk once made `send` and `task add` exit 1 (10077 "no space left on device").
  for (int code : {10023, 10047, 10028, 10002}) {
    CAPTURE(code);
    CHECK(kind_of_failure(NATS_ERR, jsErrCode(code), "insufficient resources") == Errc::no_room);
  }
  CHECK(kind_of_failure(NATS_ERR, jsErrCode(10077),
                        "write /srv/jetstream/$G/streams/KV_swarm-tasks/msgs/1.blk: no space left on device") ==
        Errc::no_room);
  CHECK(kv::detail::store_full(10077, "write x: disk quota exceeded"));
  CHECK(kind_of_failure(NATS_ERR, jsErrCode(10077), "some other store failure") == Errc::internal);
}
