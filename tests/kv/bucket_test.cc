// Bucket against a real nats-server: CAS semantics, deletes, expiry, snapshot, watch.
#include "kv/bucket.h"

#include <doctest/doctest.h>
#include <cjson/cJSON.h>

#include <algorithm>
#include <chrono>
#include <atomic>
#include <future>
#include <set>
#include <thread>

#include "support/expect.h"
#include "support/nats_proxy.h"
#include "support/nats_server.h"
#include "support/eventually.h"
#include "support/raw_nats.h"

using namespace std::chrono_literals;
using testing::kv_kind_of;

namespace {

struct Fixture {
  testing::NatsServer server;
  kv::Connection connection = kv::Connection::connect({.urls = {server.url()}});

  kv::Bucket bucket(const std::string& name = "test", std::chrono::milliseconds ttl = 0ms) {
    return kv::Bucket::ensure(connection, {.name = name, .ttl = ttl});
  }
};

}  // namespace

TEST_CASE("Bucket_OpenDoesNotCreate") {
  // open binds an existing bucket only: a missing one is not_found, and stays missing.
  Fixture f;
  CHECK(kv_kind_of([&] { kv::Bucket::open(f.connection, "missing"); }) == kv::Errc::not_found);
  CHECK(kv_kind_of([&] { kv::Bucket::open(f.connection, "missing"); }) == kv::Errc::not_found);
  f.bucket("present");
  CHECK(kv::Bucket::open(f.connection, "present").name() == "present");
}

TEST_CASE("Bucket_EnsureReportsConfigDifferences") {
  // ensure on an existing bucket with another TTL or history names each difference.
  Fixture f;
  kv::Bucket::ensure(f.connection, {.name = "cfg", .ttl = 60s});
  auto config = kv::Bucket::open(f.connection, "cfg").config();
  CHECK(config.ttl == 60s);
  CHECK(config.history == 1);
  CHECK(config.replicas == 1);
  try {
    kv::Bucket::ensure(f.connection, {.name = "cfg", .ttl = 30s, .history = 3});
    FAIL("ensure accepted a different config");
  } catch (const kv::Error& e) {
    CHECK(e.kind() == kv::Errc::conflict);
    CHECK(std::string(e.what()).find("TTL is 60s, want 30s") != std::string::npos);
    CHECK(std::string(e.what()).find("history is 1, want 3") != std::string::npos);
  }
  // The same config again is fine and leaves the bucket as it was.
  CHECK(kv::Bucket::ensure(f.connection, {.name = "cfg", .ttl = 60s}).config().ttl == 60s);
}

TEST_CASE("Bucket_GetReturnsValueRevisionAndServerTime") {
  // get reports the value, the revision that create returned and the server's timestamp.
  Fixture f;
  auto b = f.bucket();
  auto before = std::chrono::system_clock::now();
  auto rev = b.create("k", "v1");
  auto entry = b.get("k");
  REQUIRE(entry);
  CHECK(entry->key == "k");
  CHECK(entry->value == "v1");
  CHECK(entry->revision == rev);
  CHECK(entry->created >= before - 2s);
  CHECK(entry->created <= std::chrono::system_clock::now() + 2s);
  CHECK_FALSE(b.get("absent"));
}

TEST_CASE("Bucket_CreateConflictsWhenKeyExists") {
  // create is "only if absent": a second create is a conflict carrying the current revision.
  Fixture f;
  auto b = f.bucket();
  auto rev = b.create("k", "first");
  try {
    b.create("k", "second");
    FAIL("second create succeeded");
  } catch (const kv::Error& e) {
    CHECK(e.kind() == kv::Errc::conflict);
    CHECK(e.current_revision() == rev);
    CHECK(std::string(e.what()).find("bucket test key k") != std::string::npos);
  }
  CHECK(b.get("k")->value == "first");
}

TEST_CASE("Bucket_UpdateOnStaleRevisionConflicts") {
  // update is CAS on the revision read: a stale revision loses and writes nothing.
  Fixture f;
  auto b = f.bucket();
  auto r1 = b.create("k", "a");
  auto r2 = b.update("k", "b", r1);
  CHECK(r2 > r1);
  try {
    b.update("k", "c", r1);
    FAIL("stale update succeeded");
  } catch (const kv::Error& e) {
    CHECK(e.kind() == kv::Errc::conflict);
    CHECK(e.current_revision() == r2);
  }
  CHECK(b.get("k")->value == "b");
  CHECK(b.update("k", "c", r2) > r2);
}

TEST_CASE("Bucket_EraseIsCasDelete") {
  // erase with a stale revision is refused and keeps the value; with the current one it deletes.
  Fixture f;
  auto b = f.bucket();
  auto r1 = b.create("k", "a");
  auto r2 = b.update("k", "b", r1);
  CHECK(kv_kind_of([&] { b.erase("k", r1); }) == kv::Errc::conflict);
  CHECK(b.get("k")->value == "b");
  b.erase("k", r2);
  CHECK_FALSE(b.get("k"));
  // Erasing the deleted key again: its revision moved on to the marker.
  CHECK(kv_kind_of([&] { b.erase("k", r2); }) == kv::Errc::conflict);
}

TEST_CASE("Bucket_CreateAfterDeleteSucceeds") {
  // a delete marker counts as absent for create; a live value does not.
  Fixture f;
  auto b = f.bucket();
  auto r1 = b.create("k", "a");
  b.erase("k", r1);
  auto r2 = b.create("k", "again");
  CHECK(r2 > r1);
  CHECK(b.get("k")->value == "again");
  CHECK(kv_kind_of([&] { b.create("k", "third"); }) == kv::Errc::conflict);
}

TEST_CASE("Bucket_UpdateAfterDeleteConflicts") {
  // an update with the revision from before a delete must not resurrect the key.
  Fixture f;
  auto b = f.bucket();
  auto r1 = b.create("k", "a");
  b.erase("k", r1);
  CHECK(kv_kind_of([&] { b.update("k", "zombie", r1); }) == kv::Errc::conflict);
  CHECK_FALSE(b.get("k"));
}

TEST_CASE("Bucket_EntriesExpireAfterTtl") {
  // in a short-TTL bucket an entry not rewritten vanishes; create then works again.
  Fixture f;
  f.bucket("short", 1s).create("k", "v");
  auto b = kv::Bucket::open(f.connection, "short");  // opened while it holds an entry
  CHECK(b.get("k"));
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (b.get("k") && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(100ms);
  CHECK_FALSE(b.get("k"));
  CHECK(b.snapshot().empty());
  CHECK(b.create("k", "new") > 0);
}

TEST_CASE("Bucket_SnapshotReturnsEveryCurrentEntry") {
  // snapshot streams all 2,000 current values, skips deleted keys, keeps latest revisions.
  Fixture f;
  auto b = f.bucket();
  std::uint64_t rev_of_7 = 0;
  for (int i = 0; i < 2000; ++i) {
    auto rev = b.create("key" + std::to_string(i), "value" + std::to_string(i));
    if (i == 7) rev_of_7 = rev;
  }
  auto rev_of_8 = b.get("key8")->revision;
  b.erase("key8", rev_of_8);
  auto new_rev_of_7 = b.update("key7", "changed", rev_of_7);

  auto entries = b.snapshot();
  CHECK(entries.size() == 1999);
  std::set<std::string> keys;
  for (const auto& e : entries) {
    keys.insert(e.key);
    if (e.key == "key7") {
      CHECK(e.value == "changed");
      CHECK(e.revision == new_rev_of_7);
    } else if (e.key == "key1999") {
      CHECK(e.value == "value1999");
    }
  }
  CHECK(keys.size() == 1999);
  CHECK(keys.count("key8") == 0);
  CHECK(b.keys().size() == 1999);
}

TEST_CASE("Bucket_SnapshotOfEmptyOrAllDeletedBucketIsEmpty") {
  // snapshot ends at once on an empty bucket and on one whose last message is a delete marker.
  Fixture f;
  auto b = f.bucket();
  CHECK(b.snapshot().empty());
  auto rev = b.create("k", "v");
  b.erase("k", rev);
  CHECK(b.snapshot().empty());
  CHECK(b.keys().empty());
}

TEST_CASE("Bucket_WatchSeesCurrentValuesThenChanges") {
  // a watch replays current values, reports caught_up, then each put and delete as it happens.
  Fixture f;
  auto b = f.bucket();
  auto r1 = b.create("a", "1");
  auto watch = b.watch(">");
  auto first = watch.next(2s);
  REQUIRE(first);
  CHECK(first->kind == kv::WatchEvent::Kind::put);
  CHECK(first->entry.key == "a");
  CHECK(first->entry.revision == r1);
  auto marker = watch.next(2s);
  REQUIRE(marker);
  CHECK(marker->kind == kv::WatchEvent::Kind::caught_up);
  CHECK_FALSE(watch.next(100ms));

  auto r2 = b.update("a", "2", r1);
  auto put = watch.next(2s);
  REQUIRE(put);
  CHECK(put->kind == kv::WatchEvent::Kind::put);
  CHECK(put->entry.value == "2");
  b.erase("a", r2);
  auto erased = watch.next(2s);
  REQUIRE(erased);
  CHECK(erased->kind == kv::WatchEvent::Kind::erase);
  CHECK(erased->entry.key == "a");
}

TEST_CASE("Bucket_SnapshotSeesWritesAfterOpen") {
  // a bucket opened empty still lists what was written after it was opened.
  Fixture f;
  auto b = f.bucket();
  CHECK(b.snapshot().empty());
  b.create("late", "1");
  auto entries = b.snapshot();
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].key == "late");
}

TEST_CASE("Bucket_WatchOfAKeyWithNoValueCatchesUpAtOnce") {
  // a watch of a key that has no value reports caught_up quickly, then the key's first put.
  Fixture f;
  auto b = f.bucket();
  b.create("other", "x");
  auto watch = b.watch("k");
  auto start = std::chrono::steady_clock::now();
  auto marker = watch.next(5s);
  REQUIRE(marker);
  CHECK(marker->kind == kv::WatchEvent::Kind::caught_up);
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  b.create("k", "v");
  auto put = watch.next(2s);
  REQUIRE(put);
  CHECK(put->entry.key == "k");
}

TEST_CASE("Bucket_WatchPatternMatchesTokens") {
  // "a.*" sees a.x and a.y but not b.x or a.x.y; bad patterns are bad requests.
  Fixture f;
  auto b = f.bucket();
  for (const char* key : {"a.x", "a.y", "b.x", "a.x.y"}) b.create(key, "v");
  auto watch = b.watch("a.*");
  std::set<std::string> keys;
  while (true) {
    auto event = watch.next(2s);
    REQUIRE(event);
    if (event->kind == kv::WatchEvent::Kind::caught_up) break;
    keys.insert(event->entry.key);
  }
  CHECK(keys == std::set<std::string>{"a.x", "a.y"});
  CHECK(kv_kind_of([&] { b.watch("a.>.b"); }) == kv::Errc::bad_request);
  CHECK(kv_kind_of([&] { b.watch("a b"); }) == kv::Errc::bad_request);
}

TEST_CASE("Bucket_RejectsBadKeysAndNames") {
  // keys and bucket names that are not subject-safe are bad requests, sent nowhere.
  Fixture f;
  auto b = f.bucket();
  for (const char* key : {"", "a b", "a*", "a.>", ".a", "a.", "a..b"})
    CHECK(kv_kind_of([&] { b.create(key, "v"); }) == kv::Errc::bad_request);
  CHECK(kv_kind_of([&] { kv::Bucket::open(f.connection, "bad.name"); }) == kv::Errc::bad_request);
  CHECK(kv_kind_of([&] { b.update("k", "v", 0); }) == kv::Errc::bad_request);
}

TEST_CASE("Bucket_ServerClockOffsetIsTheServersClock") {
  // on one machine the server's clock is ours: the offset is a round trip's worth, not a unit or epoch error.
  Fixture f;
  auto b = f.bucket();
  for (int i = 0; i < 3; ++i) {
    auto offset = b.server_clock_offset();
    CHECK(offset < 250ms);
    CHECK(offset > -250ms);
  }
  // Against a local clock ten minutes slow, the server is ten minutes ahead (not behind).
  auto slow = [] { return std::chrono::system_clock::now() - 10min; };
  auto ahead = b.server_clock_offset(slow);
  CHECK(ahead > 10min - 250ms);
  CHECK(ahead < 10min + 250ms);
  // Written entries carry the same clock: an entry stored now is about "now" on it.
  b.create("k", "v");
  auto server_now = std::chrono::system_clock::now() + b.server_clock_offset();
  auto age = server_now - b.get("k")->created;
  CHECK(age > -250ms);
  CHECK(age < 2s);
}

TEST_CASE("Bucket_SnapshotEndsWhileWritersKeepWriting") {
  // a listing while writers never pause still ends, with each key once. (nats-server 2.9 can report one message
  // pending for ever when a write lands as the listing's consumer is made: "nothing pending" never comes.)
  Fixture f;
  auto b = f.bucket();
  constexpr int kKeys = 20;
  constexpr int kWriters = 3;
  for (int i = 0; i < kKeys; ++i) b.create("k" + std::to_string(i), "0");
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w)
    writers.emplace_back([&, w] {
      auto writer_connection = kv::Connection::connect({.urls = {f.server.url()}});
      auto wb = kv::Bucket::open(writer_connection, "test");
      const std::string key = "k" + std::to_string(w);
      auto revision = wb.get(key)->revision;
      for (int n = 1; !stop; ++n) {
        revision = wb.update(key, std::to_string(n), revision);
        std::this_thread::sleep_for(1ms);
      }
    });
  int ended = 0;
  constexpr int kRounds = 200;
  for (int round = 0; round < kRounds; ++round) {
    auto reader = kv::Bucket::open(f.connection, "test");
    auto listing = std::async(std::launch::async, [&] { return reader.snapshot(); });
    if (listing.wait_for(5s) != std::future_status::ready) break;  // (it ends once the writers stop, below)
    ++ended;
    auto entries = listing.get();
    std::set<std::string> keys;
    for (const auto& e : entries) keys.insert(e.key);
    CHECK(entries.size() == kKeys);
    CHECK(keys.size() == kKeys);
  }
  stop = true;
  for (auto& w : writers) w.join();
  CHECK(ended == kRounds);
}

TEST_CASE("Bucket_CurrentMissesNoKeyRewrittenWhileItReads") {
  // current(pattern) names every key of the pattern, however often writers rewrite them as it reads (a filtered
  // replay could end on a message "with nothing pending" before a rewritten key's newer revision came: that let two
  // conflicting holds both stand, and on nats-server 2.15 missed 2 of these 12 keys at once), and leaves out other
  // keys and deleted ones.
  Fixture f;
  auto b = f.bucket();
  constexpr int kKeys = 12;
  constexpr int kWriters = 3;
  for (int i = 0; i < kKeys; ++i) b.create("hold.s" + std::to_string(i) + ".1", "0");
  b.create("other.x", "0");
  b.erase("hold.gone.1", b.create("hold.gone.1", "0"));
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w)
    writers.emplace_back([&, w] {
      auto writer_connection = kv::Connection::connect({.urls = {f.server.url()}});
      auto wb = kv::Bucket::open(writer_connection, "test");
      std::vector<std::uint64_t> revisions;
      for (int i = w; i < kKeys; i += kWriters) revisions.push_back(wb.get("hold.s" + std::to_string(i) + ".1")->revision);
      for (int n = 1; !stop; ++n)
        for (std::size_t j = 0; j < revisions.size(); ++j)
          revisions[j] = wb.update("hold.s" + std::to_string(w + static_cast<int>(j) * kWriters) + ".1",
                                   std::to_string(n), revisions[j]);
    });
  for (int round = 0; round < 300; ++round) {
    auto entries = b.current("hold.>");
    CHECK(entries.size() == kKeys);
    if (entries.size() != kKeys) break;  // (the writers are stopped below)
    for (std::size_t i = 0; i + 1 < entries.size(); ++i) CHECK(entries[i].key < entries[i + 1].key);
    for (const auto& e : entries) CHECK(e.key.rfind("hold.s", 0) == 0);
  }
  stop = true;
  for (auto& w : writers) w.join();
  CHECK(b.current("other.*").size() == 1);
  CHECK(b.current("none.>").empty());
  CHECK(kv_kind_of([&] { b.current("bad pattern"); }) == kv::Errc::bad_request);
}

TEST_CASE("Bucket_UpdateTogetherWritesEachByItsOwnCas") {
  // several CAS updates of keys in two buckets sent together: each succeeds or fails on its own, as update() would.
  Fixture f;
  auto a = f.bucket("a");
  auto b = f.bucket("b");
  auto ra = a.create("k", "1");
  auto rb = b.create("k", "1");
  auto rc = b.create("other", "1");
  auto results = kv::Bucket::update_together({{&a, "k", "2", ra}, {&b, "k", "2", rb}, {&b, "other", "2", rc + 1000}});
  REQUIRE(results.size() == 3);
  CHECK_FALSE(results[0].error);
  CHECK_FALSE(results[1].error);
  REQUIRE(results[2].error);
  CHECK(results[2].error->kind() == kv::Errc::conflict);
  CHECK(a.get("k")->value == "2");
  CHECK(a.get("k")->revision == results[0].revision);
  CHECK(b.get("k")->value == "2");
  CHECK(b.get("k")->revision == results[1].revision);
  CHECK(b.get("other")->value == "1");  // its CAS lost: unchanged
  // Again with the new revisions; then a stale one.
  auto again = kv::Bucket::update_together({{&a, "k", "3", results[0].revision}, {&b, "k", "3", results[1].revision}});
  CHECK_FALSE(again[0].error);
  CHECK_FALSE(again[1].error);
  auto stale = kv::Bucket::update_together({{&a, "k", "4", results[0].revision}, {&b, "k", "4", again[1].revision}});
  REQUIRE(stale[0].error);
  CHECK(stale[0].error->kind() == kv::Errc::conflict);
  CHECK_FALSE(stale[1].error);
}

TEST_CASE("Bucket_AWriteWhoseAnswerWasLostIsRecognisedOnItsRetry") {
  // a create, an update and a delete each land, but their acknowledgement is held past the attempt's wait (a
  // leader change loses it the same way): the retry loses its own CAS to the write that landed, and the write
  // reports the revision it made, never a conflict (on 2.15 the server does not deduplicate a CAS retry).
  Fixture f;
  f.bucket("lost");
  testing::NatsProxy proxy(f.server.port());
  kv::Connection through = kv::Connection::connect({.urls = {proxy.url()}, .request_timeout = 5s});
  kv::Bucket bucket = kv::Bucket::open(through, "lost");
  const std::string subject = "$KV.lost.k ";
  auto retries = [&] {
    int sent = 0;
    for (const auto& m : proxy.seen()) sent += m == "PUB $KV.lost.k" || m == "HPUB $KV.lost.k";
    return sent;
  };

  proxy.hold_next({subject}, 1500ms, testing::NatsProxy::Hold::answers);
  const std::uint64_t created = bucket.create("k", "one");
  CHECK(proxy.holds_ended() == 1);
  CHECK(retries() >= 2);
  CHECK(bucket.get("k")->revision == created);

  proxy.hold_next({subject}, 1500ms, testing::NatsProxy::Hold::answers);
  const std::uint64_t updated = bucket.update("k", "two", created);
  CHECK(proxy.holds_ended() == 2);
  CHECK(updated > created);
  CHECK(bucket.get("k")->value == "two");
  CHECK(bucket.get("k")->revision == updated);

  proxy.hold_next({subject}, 1500ms, testing::NatsProxy::Hold::answers);
  CHECK_NOTHROW(bucket.erase("k", updated));
  CHECK(proxy.holds_ended() == 3);
  CHECK_FALSE(bucket.get("k"));
}

TEST_CASE("Bucket_AReadAfterALostCasRaceIsNoConflict") {
  // a thread that lost a CAS race, then fails a read (its server gone), is told the read failed (unavailable or
  // timeout), never a conflict: nats.c's last error of that thread is the race's, and must not be the read's.
  Fixture f;
  auto bucket = f.bucket("stale");
  bucket.create("k", "v");
  CHECK(kv_kind_of([&] { bucket.create("k", "w"); }) == kv::Errc::conflict);
  f.server.stop();
  const auto kind = kv_kind_of([&] { bucket.with_budget(600ms).get("k"); });
  CHECK(kind != kv::Errc::conflict);
  CHECK((kind == kv::Errc::unavailable || kind == kv::Errc::timeout));
}

namespace {

// What get() says of a key, as one comparable line.
// How many of the messages a client sent through `proxy` start with `prefix`.
int sent_with(testing::NatsProxy& proxy, const std::string& prefix) {
  int n = 0;
  for (const auto& m : proxy.seen()) n += m.rfind(prefix, 0) == 0;
  return n;
}

std::string shown(const std::optional<kv::Entry>& e) {
  if (!e) return "absent";
  return e->key + " rev " + std::to_string(e->revision) + " at " +
         std::to_string(e->created.time_since_epoch().count()) + " = " + e->value;
}

}  // namespace

TEST_CASE("Bucket_GetTogetherSaysWhatGetSaysOfEachKey") {
  // Several keys at once: values of any bytes (sent base64 by the server),
  // an absent key, a deleted one whose marker carries data, a key asked
  // twice: each exactly what get() says of it, revision and server time too.
  Fixture f;
  auto b = f.bucket();
  b.create("plain", "v1");
  const std::string bytes("a\0b\r\n\xff\xc3\xa9{\"x\":1}", 14);
  b.create("bytes", bytes);
  b.create("empty", "");
  const auto gone = b.create("gone", "was");
  b.erase("gone", gone, "marker data");
  b.update("plain", "v2", b.get("plain")->revision);
  const std::vector<std::string> keys = {"plain", "bytes", "absent", "gone", "empty", "plain"};
  const auto together = b.get_together(keys);
  REQUIRE(together.size() == keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    INFO(keys[i]);
    CHECK(shown(together[i]) == shown(b.get(keys[i])));
  }
  CHECK(together[1]->value == bytes);
  CHECK(together[0]->value == "v2");
  CHECK_FALSE(together[2]);
  CHECK_FALSE(together[3]);
  CHECK(b.get_together({}).empty());
  CHECK(kv_kind_of([&] { b.get_together({"ok", "bad key"}); }) == kv::Errc::bad_request);
}

TEST_CASE("Bucket_GetTogetherReadsAloneWhatGotNoAnswerInTime") {
  // Answers held past the batch's wait: each key is read again alone, and
  // the late answers of the batch change nothing.
  Fixture f;
  auto b = f.bucket("late");
  b.create("a", "1");
  b.create("c", "3");
  testing::NatsProxy proxy(f.server.port());
  kv::Connection through = kv::Connection::connect({.urls = {proxy.url()}, .request_timeout = 3s});
  auto slow = kv::Bucket::open(through, "late");
  // A server alone answers the batch's direct gets; alone, a key is read
  // from the stream's leader.
  proxy.hold_next({"DIRECT.GET.KV_late"}, 900ms, testing::NatsProxy::Hold::answers);
  const auto got = slow.get_together({"a", "b", "c"});
  CHECK(proxy.holds_begun() == 1);
  CHECK(sent_with(proxy, "PUB $JS.API.DIRECT.GET.KV_late.$KV.late.") == 3);  // together
  CHECK(sent_with(proxy, "PUB $JS.API.STREAM.MSG.GET.KV_late") == 3);        // alone
  REQUIRE(got.size() == 3);
  CHECK(shown(got[0]) == shown(b.get("a")));
  CHECK_FALSE(got[1]);
  CHECK(shown(got[2]) == shown(b.get("c")));
  CHECK(shown(slow.get_together({"c"})[0]) == shown(b.get("c")));
}

TEST_CASE("Bucket_PassesLeaveNoConsumerBehind") {
  // A pass ends its consumer without waiting for the deletion's answer: the
  // deletion still reaches the server, with the connection's next write,
  // however many passes ran (their subscriptions are freed now and then).
  Fixture f;
  auto b = f.bucket("passes");
  for (int i = 0; i < 5; ++i) b.create("k" + std::to_string(i), "v");
  for (int pass = 0; pass < 40; ++pass) REQUIRE(b.snapshot().size() == 5);
  b.get("k0");  // a request of the connection's own: its write carries the last deletion
  testing::RawNats raw(f.server.url());
  auto consumers = [&] {
    jsStreamInfo* info = nullptr;
    if (js_GetStreamInfo(&info, raw.js, "KV_passes", nullptr, nullptr) != NATS_OK) return -1;
    const int count = static_cast<int>(info->State.Consumers);
    jsStreamInfo_Destroy(info);
    return count;
  };
  // Well within the 5 s after which the server would drop an idle one itself.
  CHECK(testing::eventually([&] { return consumers() == 0; }, 3s));
  CHECK(consumers() == 0);
}

TEST_CASE("Bucket_GetTogetherOfABucketWithoutDirectGetsAsksTheLeader") {
  // A bucket whose stream answers no direct gets (made or edited by another
  // tool), bound without a round trip on a server alone: the batch's direct
  // gets find no responder (2.10 and later say so, 2.9 stays silent: the
  // trial is short), every key is read alone and right, and the next batch
  // asks the stream's leader at once. No answer is left to end a later
  // batch early.
  Fixture f;
  auto b = f.bucket("nodirect");
  b.create("a", "1");
  b.create("c", "3");
  {
    testing::RawNats raw(f.server.url());
    jsStreamInfo* info = nullptr;
    REQUIRE(js_GetStreamInfo(&info, raw.js, "KV_nodirect", nullptr, nullptr) == NATS_OK);
    info->Config->AllowDirect = false;
    jsStreamInfo* updated = nullptr;
    REQUIRE(js_UpdateStream(&updated, raw.js, info->Config, nullptr, nullptr) == NATS_OK);
    CHECK_FALSE(updated->Config->AllowDirect);
    jsStreamInfo_Destroy(updated);
    jsStreamInfo_Destroy(info);
  }
  testing::NatsProxy proxy(f.server.port());
  kv::Connection through = kv::Connection::connect({.urls = {proxy.url()}, .request_timeout = 3s});
  kv::Bucket::ensure(through, {.name = "other"});  // says the server is alone
  auto bound = kv::Bucket::bind(through, "nodirect");
  for (int round = 0; round < 2; ++round) {
    const auto started = std::chrono::steady_clock::now();
    const auto got = bound.get_together({"a", "b", "c"});
    CHECK(std::chrono::steady_clock::now() - started < 2s);  // not the 3 s request timeout
    REQUIRE(got.size() == 3);
    CHECK(shown(got[0]) == shown(b.get("a")));
    CHECK_FALSE(got[1]);
    CHECK(shown(got[2]) == shown(b.get("c")));
  }
  CHECK(sent_with(proxy, "PUB $JS.API.DIRECT.GET.KV_nodirect.") == 3);     // the first batch only
  CHECK(sent_with(proxy, "PUB $JS.API.STREAM.MSG.GET.KV_nodirect") == 6);  // alone after it, then together
  const auto took = std::chrono::steady_clock::now();
  CHECK(shown(bound.get_together({"a"})[0]) == shown(b.get("a")));
  CHECK(std::chrono::steady_clock::now() - took < 2s);  // no answer left over to wait on
}

namespace {

}  // namespace

TEST_CASE("Bucket_AKeyTheServerExpiredIsGoneEverywhere") {
  // On 2.11+ a stream may have the server write a marker when a key's
  // message expires (Nats-Marker-Reason: MaxAge, an empty body): get, the
  // listings and a watch's replay read it as the key gone, and create takes
  // the key again over it. nats.c alone would read it as an empty value.
  Fixture f;
  if (kv::version_before(f.connection.server_version(), 2, 11)) {
    MESSAGE("nats-server " << f.connection.server_version() << " writes no expiry markers: nothing to read");
    return;
  }
  auto b = f.bucket("expiring");
  b.create("kept", "v");
  testing::RawNats raw(f.server.url());
  REQUIRE(kv::Bucket::announce_expiry(f.connection, "expiring", 60s));
  natsMsg* msg = nullptr;
  REQUIRE(natsMsg_Create(&msg, "$KV.expiring.gone", nullptr, "soon", 4) == NATS_OK);
  REQUIRE(natsMsgHeader_Set(msg, "Nats-TTL", "1s") == NATS_OK);
  REQUIRE(js_PublishMsg(nullptr, raw.js, msg, nullptr, nullptr) == NATS_OK);
  natsMsg_Destroy(msg);
  CHECK(b.get("gone"));
  // The server's marker, as any client reads the key's last message.
  std::string reason;
  REQUIRE(testing::eventually([&] {
    natsMsg* last = nullptr;
    if (js_GetLastMsg(&last, raw.js, "KV_expiring", "$KV.expiring.gone", nullptr, nullptr) != NATS_OK) return false;
    const char* value = nullptr;
    if (natsMsgHeader_Get(last, "Nats-Marker-Reason", &value) == NATS_OK && value != nullptr) reason = value;
    natsMsg_Destroy(last);
    return !reason.empty();
  }, 10s));
  CHECK(reason == "MaxAge");
  CHECK_FALSE(b.get("gone"));
  const auto together = b.get_together({"gone", "kept"});
  CHECK_FALSE(together[0]);
  CHECK(together[1]);
  const auto keys = b.keys();
  CHECK(std::find(keys.begin(), keys.end(), "gone") == keys.end());
  CHECK(std::find(keys.begin(), keys.end(), "kept") != keys.end());
  for (const auto& e : b.snapshot()) CHECK(e.key != "gone");
  CHECK(b.create("gone", "again") > 0);
  REQUIRE(b.get("gone"));
  CHECK(b.get("gone")->value == "again");
}

TEST_CASE("Bucket_AWatchSeesTheServersExpiryAsItHappens") {
  // With expiry announced, a key that ends by the bucket's TTL reaches a
  // watch as an erase marked `expired`, stamped with the server's time of
  // the end, within a second of it; a client's delete is not `expired`.
  // Turning it on twice, and a TTL set afterwards, keep the markers on.
  Fixture f;
  auto b = f.bucket("announcing", 2s);
  if (kv::version_before(f.connection.server_version(), 2, 11)) {
    CHECK_FALSE(kv::Bucket::announce_expiry(f.connection, "announcing", 60s));
    MESSAGE("nats-server " << f.connection.server_version() << " announces no expiry: left as it was");
    return;
  }
  CHECK(kv::Bucket::announce_expiry(f.connection, "announcing", 60s));
  CHECK(kv::Bucket::announce_expiry(f.connection, "announcing", 60s));
  CHECK(kv_kind_of([&] { kv::Bucket::announce_expiry(f.connection, "absent", 60s); }) == kv::Errc::not_found);

  auto expiry_seen = [&](const std::string& key, std::chrono::milliseconds ttl) {
    auto watch = b.watch(key);
    auto first = watch.next(5s);
    REQUIRE(first);
    REQUIRE(first->kind == kv::WatchEvent::Kind::caught_up);
    b.create(key, "alive");
    auto put = watch.next(5s);
    REQUIRE(put);
    REQUIRE(put->kind == kv::WatchEvent::Kind::put);
    CHECK_FALSE(put->expired);
    auto end = watch.next(ttl + 5s);
    const auto arrived = std::chrono::system_clock::now();
    REQUIRE(end);
    CHECK(end->kind == kv::WatchEvent::Kind::erase);
    CHECK(end->expired);
    // The server's time of the end: its TTL after the put, not before.
    CHECK(end->entry.created - put->entry.created >= ttl);
    CHECK(end->entry.created - put->entry.created < ttl + 1500ms);
    // One machine, one clock: seen here within a second of the server's end.
    CHECK(arrived - end->entry.created < 1s);
    using ms = std::chrono::milliseconds;
    MESSAGE(key << ": the server ended it " << std::chrono::duration_cast<ms>(end->entry.created - put->entry.created - ttl).count()
                << " ms after its TTL; seen " << std::chrono::duration_cast<ms>(arrived - end->entry.created).count()
                << " ms after that");
    CHECK_FALSE(b.get(key));
  };
  expiry_seen("first", 2s);

  // A client's delete is an erase, never an expiry.
  {
    const auto revision = b.create("deleted", "v");
    auto watch = b.watch("deleted");
    REQUIRE(watch.next(5s));  // the put
    REQUIRE(watch.next(5s));  // caught_up
    b.erase("deleted", revision);
    auto erase = watch.next(5s);
    REQUIRE(erase);
    CHECK(erase->kind == kv::WatchEvent::Kind::erase);
    CHECK_FALSE(erase->expired);
  }

  // nats.c's own update would drop the markers (or be refused): set_ttl
  // keeps them.
  kv::Bucket::set_ttl(f.connection, "announcing", 3s);
  b = kv::Bucket::open(f.connection, "announcing");
  CHECK(b.config().ttl == 3s);
  expiry_seen("second", 3s);
}

TEST_CASE("Bucket_AValuesOwnTtlEndsItWithTheServersMarker") {
  // A write given a TTL of its own (a lease's) ends then, with the server's
  // marker, long before the bucket's age would end it; renewing it with a
  // new TTL starts it again; a stream that refuses message TTLs still takes
  // the write, without one (an older swarm's bucket); 2.9 gets none at all.
  Fixture f;
  auto b = f.bucket("own-ttl", 1h);
  const bool announces = !kv::version_before(f.connection.server_version(), 2, 11);
  CHECK(kv::Bucket::announce_expiry(f.connection, "own-ttl", 60s) == announces);
  CHECK(b.announces_expiry() == announces);
  const auto short_lived = b.with_message_ttl(1500ms);  // sent as 2 s
  auto watch = b.watch("k");
  auto first = watch.next(5s);
  REQUIRE(first);
  REQUIRE(first->kind == kv::WatchEvent::Kind::caught_up);
  const auto created = short_lived.create("k", "v1");
  auto put = watch.next(5s);
  REQUIRE(put);
  // A renewal with its TTL: the clock starts again from it.
  std::this_thread::sleep_for(1s);
  short_lived.update("k", "v2", created);
  auto renewed = watch.next(5s);
  REQUIRE(renewed);
  REQUIRE(renewed->kind == kv::WatchEvent::Kind::put);
  if (!announces) {
    CHECK_FALSE(watch.next(3s));  // 2.9: the bucket's hour, as before
    CHECK(b.get("k"));
    MESSAGE("nats-server " << f.connection.server_version() << " takes no message TTL: the value stays");
    return;
  }
  auto end = watch.next(5s);
  REQUIRE(end);
  CHECK(end->kind == kv::WatchEvent::Kind::erase);
  CHECK(end->expired);
  CHECK(end->entry.created - renewed->entry.created >= 2s);
  CHECK(end->entry.created - renewed->entry.created < 3500ms);
  CHECK_FALSE(b.get("k"));
  // Created again over the server's marker.
  CHECK(short_lived.create("k", "v3") > 0);

  // Several updates sent together carry their TTLs too.
  const auto r = b.create("together", "a");
  auto results = kv::Bucket::update_together({{&b, "together", "b", r, 1s}});
  REQUIRE_FALSE(results[0].error);
  auto together = b.watch("together");
  bool ended = false;
  for (auto e = together.next(5s); e && !ended; e = together.next(5s)) ended = e->expired;
  CHECK(ended);

  // A bucket made without message TTLs refuses them: the write goes without.
  auto plain = f.bucket("no-own-ttl", 1h).with_message_ttl(1s);
  const auto p = plain.create("k", "v");
  CHECK(p > 0);
  const auto q = plain.update("k", "w", p);
  CHECK(q > p);
  // A handle of its own, which has not heard the refusal yet.
  const auto reopened = kv::Bucket::open(f.connection, "no-own-ttl");
  CHECK(kv::Bucket::update_together({{&reopened, "k", "x", q, 1s}})[0].revision > q);
  std::this_thread::sleep_for(2500ms);
  REQUIRE(plain.get("k"));
  CHECK(plain.get("k")->value == "x");
}

TEST_CASE("Bucket_WritesCommittedTogetherLandAllOrNone") {
  // On 2.12+, with atomic batches allowed: a record's CAS and its hints
  // land as one commit (contiguous revisions); one failed condition stores
  // none of them; a key twice is refused before anything is sent. Before
  // they are allowed (or on 2.9), nothing is sent and the caller is told.
  Fixture f;
  auto b = f.bucket("together-commit");
  const bool can = !kv::version_before(f.connection.server_version(), 2, 12);
  const auto record = b.create("task.T-1", "v1");
  b.put_hint("_ready.T-1", "hint");
  std::vector<kv::Bucket::Commit> claim{{"task.T-1", "v2", record},
                                        {"_ready.T-1", "", std::nullopt, true},
                                        {"_working.T-1", "working", std::nullopt}};
  CHECK_FALSE(b.commits_atomically());
  CHECK_FALSE(b.commit_together(claim));  // not allowed yet: nothing sent
  CHECK(b.get("task.T-1")->value == "v1");
  CHECK(kv::Bucket::allow_atomic(f.connection, "together-commit") == can);
  CHECK(kv::Bucket::allow_atomic(f.connection, "together-commit") == can);
  auto reopened = kv::Bucket::open(f.connection, "together-commit");
  CHECK(reopened.commits_atomically() == can);
  if (!can) {
    CHECK_FALSE(reopened.commit_together(claim));
    MESSAGE("nats-server " << f.connection.server_version() << " has no atomic batches: the caller writes one by one");
    return;
  }
  auto revisions = reopened.commit_together(claim);
  REQUIRE(revisions);
  REQUIRE(revisions->size() == 3);
  // One after another, the conditioned write last (it is the commit).
  CHECK((*revisions)[1] + 1 == (*revisions)[2]);
  CHECK((*revisions)[2] + 1 == (*revisions)[0]);
  CHECK(reopened.get("_working.T-1")->revision == (*revisions)[2]);
  CHECK(reopened.get("task.T-1")->revision == (*revisions)[0]);
  CHECK(reopened.get("task.T-1")->value == "v2");
  CHECK_FALSE(reopened.get("_ready.T-1"));
  CHECK(reopened.get("_working.T-1")->value == "working");
  // A stale revision: the whole commit is refused, its hint writes too.
  const auto before = reopened.last_revision();
  std::vector<kv::Bucket::Commit> stale{{"_working.T-1", "", std::nullopt, true}, {"task.T-1", "v3", record}};
  CHECK(kv_kind_of([&] { reopened.commit_together(stale); }) == kv::Errc::conflict);
  CHECK(reopened.last_revision() == before);
  CHECK(reopened.get("_working.T-1")->value == "working");
  CHECK(reopened.get("task.T-1")->value == "v2");
  // Bad input, before anything is sent.
  CHECK(kv_kind_of([&] { reopened.commit_together({{"k", "a"}, {"k", "b"}}); }) == kv::Errc::bad_request);
  CHECK(kv_kind_of([&] { reopened.commit_together({{"k", "a", std::uint64_t{0}}}); }) == kv::Errc::bad_request);
  CHECK(reopened.last_revision() == before);
}
