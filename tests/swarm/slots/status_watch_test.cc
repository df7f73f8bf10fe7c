// The live status feed (swarm/status_watch.h) against a real nats-server:
// the first view, then each put and erase, and a session that outlives its
// TTL dropped as expired without any event from the server.
#include "swarm/slots/status_watch.h"

#include <doctest/doctest.h>

#include "support/nats_server.h"

using namespace swarm;
using namespace std::chrono_literals;

namespace {

Session session(const std::string& slot, const std::string& host) {
  Session s;
  s.slot = slot;
  s.task_id = "T-" + slot;
  s.host = host;
  s.host_id = "id-" + host;
  s.started_at = std::chrono::system_clock::now();
  s.last_renewed = s.started_at;
  return s;
}

std::vector<std::string> slots_of(const SessionTable& table) {
  std::vector<std::string> out;
  for (const auto& row : table.rows()) out.emplace_back(row.slot);
  return out;
}

}  // namespace

TEST_CASE("StatusWatch_FirstTheViewThenEachChangeThenExpiry") {
  testing::NatsServer server;
  auto connection = kv::Connection::connect({.urls = {server.url()}});
  SessionStore store = SessionStore::ensure(connection, kDefaultSessionBucket, 2s, 1);
  store.create(session("b", "h1"));
  const HostIdentity me{"h1", "id-h1"};
  StatusWatch feed(store, me);
  CHECK(feed.ttl() == 2s);

  auto first = feed.next(5s);
  REQUIRE(first);
  CHECK(first->first);
  CHECK(first->changes.empty());
  CHECK(slots_of(first->view) == std::vector<std::string>{"b"});
  CHECK(first->view.rows()[0].local);  // h1's, as `me`

  const auto a = store.create(session("a", "h2"));
  auto put = feed.next(5s);
  REQUIRE(put);
  CHECK_FALSE(put->first);
  REQUIRE(put->changes.size() == 1);
  CHECK(put->changes[0].kind == LiveSessions::Change::Kind::put);
  CHECK(put->changes[0].slot == "a");
  CHECK(slots_of(put->view) == std::vector<std::string>{"a", "b"});  // sorted by slot
  CHECK_FALSE(put->view.rows()[0].local);

  store.erase("a", a);
  auto erase = feed.next(5s);
  REQUIRE(erase);
  REQUIRE(erase->changes.size() == 1);
  CHECK(erase->changes[0].kind == LiveSessions::Change::Kind::erase);
  CHECK(slots_of(erase->view) == std::vector<std::string>{"b"});

  // Nothing happens for a while: no update, but the view still ages.
  CHECK_FALSE(feed.next(100ms));
  // b is never renewed: past its TTL it goes as expired, with no event.
  std::optional<StatusWatch::Update> expired;
  const auto until = std::chrono::steady_clock::now() + 6s;
  while (!expired && std::chrono::steady_clock::now() < until) expired = feed.next(250ms);
  REQUIRE(expired);
  REQUIRE(expired->changes.size() == 1);
  CHECK(expired->changes[0].kind == LiveSessions::Change::Kind::expired);
  CHECK(expired->changes[0].slot == "b");
  CHECK(expired->view.rows().empty());
  feed.stop();
}

TEST_CASE("StatusWatch_OneSlotOnly") {
  testing::NatsServer server;
  auto connection = kv::Connection::connect({.urls = {server.url()}});
  SessionStore store = SessionStore::ensure(connection, kDefaultSessionBucket, kDefaultSessionTtl, 1);
  store.create(session("a", "h1"));
  store.create(session("b", "h1"));
  StatusWatch feed(store, HostIdentity{"h1", "id-h1"}, "b");
  auto first = feed.next(5s);
  REQUIRE(first);
  CHECK(slots_of(first->view) == std::vector<std::string>{"b"});
  store.create(session("c", "h1"));
  CHECK_FALSE(feed.next(300ms));  // another slot's change is no update of this view
}
