// SessionStore against a real nats-server: typed CAS, corrupt records, list, watch.
#include "swarm/slots/session_store.h"

#include <doctest/doctest.h>

#include <set>
#include <thread>

#include "support/expect.h"
#include "support/nats_server.h"
#include "swarm/base/error.h"

using namespace swarm;
using namespace std::chrono_literals;
using testing::kind_of;

namespace {

struct Fixture {
  testing::NatsServer server;
  kv::Connection connection = kv::Connection::connect({.urls = {server.url()}});
  SessionStore store = SessionStore::ensure(connection, kDefaultSessionBucket, kDefaultSessionTtl, 1);
};

Session session(const std::string& slot) {
  Session s;
  s.slot = slot;
  s.task_id = "T-1";
  s.host = "h1";
  s.host_id = "id1";
  s.started_at = parse_rfc3339("2026-11-22T10:00:00Z");
  s.last_renewed = s.started_at;
  return s;
}

}  // namespace

TEST_CASE("SessionStore_OpenWithoutBucketIsNotBootstrapped") {
  // binding a workspace whose bucket was never made is exit-6 territory, not a crash or a create.
  testing::NatsServer server;
  auto connection = kv::Connection::connect({.urls = {server.url()}});
  CHECK(kind_of([&] { SessionStore::open(connection); }) == Errc::not_bootstrapped);
  SessionStore::ensure(connection, kDefaultSessionBucket, 5min, 1);
  CHECK(SessionStore::open(connection).ttl() == 5min);
}

TEST_CASE("SessionStore_EnsureReportsAnotherTtl") {
  // a bucket made with another TTL is a conflict naming both TTLs.
  Fixture f;
  try {
    SessionStore::ensure(f.connection, kDefaultSessionBucket, 1min, 1);
    FAIL("ensure accepted another TTL");
  } catch (const Error& e) {
    CHECK(e.kind() == Errc::conflict);
    CHECK(std::string(e.what()).find("TTL is 300s, want 60s") != std::string::npos);
  }
}

TEST_CASE("SessionStore_CreateGetUpdateErase") {
  // the typed CAS cycle: create once, update on the read revision, erase on the current one.
  Fixture f;
  auto rev = f.store.create(session("a"));
  CHECK(kind_of([&] { f.store.create(session("a")); }) == Errc::conflict);
  auto entry = f.store.get("a");
  REQUIRE(entry);
  REQUIRE(entry->session);
  CHECK(entry->revision == rev);
  CHECK(entry->session->task_id == "T-1");
  Session renewed = *entry->session;
  renewed.last_renewed = parse_rfc3339("2026-11-22T10:01:00Z");
  auto rev2 = f.store.update(renewed, rev);
  CHECK(kind_of([&] { f.store.update(renewed, rev); }) == Errc::conflict);
  CHECK(kind_of([&] { f.store.erase("a", rev); }) == Errc::conflict);
  f.store.erase("a", rev2);
  CHECK_FALSE(f.store.get("a"));
  CHECK(kind_of([&] { f.store.get("bad/slot"); }) == Errc::bad_input);
}

TEST_CASE("SessionStore_PreservesUnknownFieldsOnUpdate") {
  // a field written by a newer client survives this client's renewal.
  Fixture f;
  auto rev = f.store.bucket().create("a", R"({"slot":"a","host":"h1","gpu":{"model":"x","count":2},"note":"n"})");
  auto entry = f.store.get("a");
  REQUIRE(entry->session);
  Session s = *entry->session;
  s.last_renewed = parse_rfc3339("2026-11-22T10:05:00Z");
  f.store.update(s, rev);
  auto raw = f.store.bucket().get("a")->value;
  CHECK(raw.find(R"("gpu":{"model":"x","count":2})") != std::string::npos);
  CHECK(raw.find(R"("note":"n")") != std::string::npos);
  CHECK(raw.find(R"("last_renewed":"2026-11-22T10:05:00.000Z")") != std::string::npos);
}

TEST_CASE("SessionStore_CorruptRecordsAreEntriesNotErrors") {
  // garbage under a slot key is reported as corrupt with a reason, in get and in list.
  Fixture f;
  f.store.create(session("good"));
  f.store.bucket().create("junk", "{not json");
  f.store.bucket().create("nohost", R"({"slot":"nohost"})");
  f.store.bucket().create("mismatch", R"({"slot":"other","host":"h"})");
  auto junk = f.store.get("junk");
  REQUIRE(junk);
  CHECK(junk->corrupt());
  CHECK(junk->corrupt_reason == "the value is not valid JSON");
  CHECK(junk->raw == "{not json");
  CHECK(f.store.get("mismatch")->corrupt_reason == "field 'slot' is 'other' but the key is 'mismatch'");
  auto all = f.store.list();
  CHECK(all.size() == 4);
  int corrupt = 0;
  for (const auto& e : all) corrupt += e.corrupt() ? 1 : 0;
  CHECK(corrupt == 3);
}

TEST_CASE("SessionStore_ListOfManyRecordsIsCompleteAndTyped") {
  // a list large enough to be parsed on a worker thread returns every record, parsed, corrupt ones flagged.
  Fixture f;
  for (int i = 0; i < 2600; ++i) {
    if (i % 500 == 7) f.store.bucket().create("bad" + std::to_string(i), "not json " + std::to_string(i));
    else f.store.create(session("s" + std::to_string(i)));
  }
  auto reopened = SessionStore::open(f.connection);  // its size hint now says 2,600
  auto all = reopened.list();
  REQUIRE(all.size() == 2600);
  std::set<std::string> slots;
  int corrupt = 0;
  for (const auto& e : all) {
    slots.insert(e.slot);
    if (e.corrupt()) {
      ++corrupt;
      CHECK(e.raw.rfind("not json ", 0) == 0);
    } else {
      CHECK(e.session->slot == e.slot);
      CHECK(e.session->task_id == "T-1");
    }
  }
  CHECK(slots.size() == 2600);
  CHECK(corrupt == 6);
}

TEST_CASE("SessionStore_AVisitThatThrowsOnTheParserThreadStopsTheListingWithItsError") {
  // for_each of a big bucket visits on a worker thread: what a visit throws reaches the caller (no terminate), and
  // no record is visited after it.
  Fixture f;
  for (int i = 0; i < 2600; ++i) f.store.create(session("s" + std::to_string(i)));
  auto reopened = SessionStore::open(f.connection);
  int visited = 0;
  const auto caller = std::this_thread::get_id();
  std::thread::id visitor;
  CHECK(kind_of([&] {
          reopened.for_each([&](SessionEntry&&) {
            visitor = std::this_thread::get_id();
            if (++visited == 700) throw Error(Errc::unavailable, "the server went away");
          });
        }) == Errc::unavailable);
  CHECK(visited == 700);
  CHECK(visitor != caller);  // it was the worker's throw
  CHECK(reopened.list().size() == 2600);  // and the store is fine for the next listing
}

TEST_CASE("SessionStore_ListAndWatch") {
  // list reads every record; a watch reports the replay, caught_up, then puts and erases.
  Fixture f;
  for (int i = 0; i < 25; ++i) f.store.create(session("s" + std::to_string(i)));
  CHECK(f.store.list().size() == 25);
  auto watch = f.store.watch();
  int replayed = 0;
  while (true) {
    auto event = watch.next(2s);
    REQUIRE(event);
    if (event->kind == SessionEvent::Kind::caught_up) break;
    ++replayed;
  }
  CHECK(replayed == 25);
  auto rev = f.store.create(session("new"));
  auto put = watch.next(2s);
  REQUIRE(put);
  CHECK(put->kind == SessionEvent::Kind::put);
  CHECK(put->entry.slot == "new");
  f.store.erase("new", rev);
  auto erased = watch.next(2s);
  REQUIRE(erased);
  CHECK(erased->kind == SessionEvent::Kind::erase);
  CHECK(erased->entry.slot == "new");
}
