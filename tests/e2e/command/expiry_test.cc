// Expiry announced by the server (2.11+): a session's and a lease's end by
// TTL reaches every watcher, as two hosts, within a second of the server's
// end, and is journaled once; on 2.9 each watcher's clock still judges it.
#include <doctest/doctest.h>

#include <signal.h>

#include <thread>

#include "e2e/swarm_fixture.h"
#include "kv/bucket.h"
#include "kv/connection.h"
#include "support/eventually.h"
#include "support/json_fields.h"
#include "swarm/base/clock.h"

using namespace testing;
using namespace std::chrono_literals;

namespace {

bool announces(SwarmWorkspace& ws) {
  auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
  return !kv::version_before(connection.server_version(), 2, 11);
}

// The journal's events of `kind`, as `log --json` gives them.
std::vector<swarm::Json> logged(const SwarmWorkspace& ws, const std::string& kind) {
  std::vector<swarm::Json> out;
  auto log = ws.swarm({"log", "--kind", kind, "--json"});
  REQUIRE_MESSAGE(log.exit == 0, log.err);
  std::size_t at = 0;
  while (at < log.out.size()) {
    const auto end = log.out.find('\n', at);
    const std::string line = log.out.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (!line.empty()) out.push_back(swarm::Json::parse(line));
    at = end == std::string::npos ? log.out.size() : end + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("Expiry_ASessionsEndIsTheServersOnEveryHostAndJournaledOnce") {
  SwarmWorkspace ws({.up_args = {"--ttl", "3s"}});
  const bool server = announces(ws);
  // Two hosts watch.
  Process a(ws.command({"status", "--watch", "--json"}, kHostA));
  Process b(ws.command({"status", "--watch", "--json"}, kHostB));
  REQUIRE(a.read_line(10s));  // the snapshots
  REQUIRE(b.read_line(10s));
  REQUIRE(ws.swarm({"join", "--slot", "w", "--task", "T-1"}).exit == 0);
  for (Process* p : {&a, &b}) {
    auto put = p->read_line(10s);
    REQUIRE(put);
    CHECK(text_of(cJSON_GetObjectItem(swarm::Json::parse(*put).get(), "change"), "event") == "put");
  }
  // Nothing renews it: it ends by its TTL.
  for (Process* p : {&a, &b}) {
    auto line = p->read_line(15s);
    const auto seen = std::chrono::system_clock::now();
    REQUIRE(line);
    auto doc = swarm::Json::parse(*line);
    cJSON* change = cJSON_GetObjectItem(doc.get(), "change");
    CHECK(text_of(change, "event") == "expired");
    CHECK(text_of(change, "slot") == "w");
    CHECK(text_of(change, "by") == (server ? "server" : "clock"));
    auto at = swarm::parse_rfc3339(text_of(change, "at"));
    REQUIRE(at);
    // One machine, one clock: seen within a second of the end it names.
    CHECK(seen - *at < 1s);
    MESSAGE("seen " << std::chrono::duration_cast<std::chrono::milliseconds>(seen - *at).count() << " ms after the "
                    << text_of(change, "by") << "'s end");
  }
  // Journaled once, though two hosts heard it; the server's time in it.
  if (server) {
    REQUIRE(eventually([&] { return !logged(ws, "session.expired").empty(); }, 5s));
    auto events = logged(ws, "session.expired");
    CHECK(events.size() == 1);
    CHECK(field(events[0], "slot") == "w");
    CHECK(field(events[0], "host") == "host-a");  // whose session it was
    CHECK(field(events[0], "task_id") == "T-1");
    CHECK(swarm::parse_rfc3339(field(events[0], "expired_at")));
    CHECK(field(events[0], "seen_by").find("host-") == 0);
  } else {
    std::this_thread::sleep_for(500ms);
    CHECK(logged(ws, "session.expired").empty());  // 2.9: nobody heard the server say so
  }
  for (Process* p : {&a, &b}) p->signal(SIGINT);
  for (Process* p : {&a, &b}) CHECK(p->wait(5s).exit == 0);
}

TEST_CASE("Expiry_ALeasesEndIsTheServersForObserversAndAWaiterStillTakesIt") {
  SwarmWorkspace ws;
  const bool server = announces(ws);
  // Held with nothing renewing it (lease acquire's holder is its caller).
  auto acquired = ws.swarm({"lease", "acquire", "job.nightly", "--ttl", "2s", "--json"});
  REQUIRE_MESSAGE(acquired.exit == 0, acquired.err);
  Process a(ws.command({"elect", "job.nightly", "--observe"}, kHostA));
  Process b(ws.command({"elect", "job.nightly", "--observe"}, kHostB));
  for (Process* p : {&a, &b}) {
    auto current = p->read_line(10s);
    REQUIRE(current);
    CHECK(field(swarm::Json::parse(*current), "change") == "current");
  }
  for (Process* p : {&a, &b}) {
    auto line = p->read_line(15s);
    REQUIRE(line);
    auto ended = swarm::Json::parse(*line);
    CHECK(field(ended, "change") == "expired");
    CHECK(field(ended, "reason") == "expired");
  }
  if (server) {
    REQUIRE(eventually([&] { return !logged(ws, "lease.expired").empty(); }, 5s));
    auto events = logged(ws, "lease.expired");
    CHECK(events.size() == 1);  // both observers heard it
    CHECK(field(events[0], "lease") == "job.nightly");
    CHECK(field(events[0], "host") == "host-a");  // whose lease it was
    CHECK(field(events[0], "holder").find("host-a") == 0);
    auto at = swarm::parse_rfc3339(field(events[0], "expired_at"));
    REQUIRE(at);
    auto grants = logged(ws, "lease.grant");
    REQUIRE(grants.size() == 1);
    auto granted = swarm::parse_rfc3339(field(grants[0], "time"));
    REQUIRE(granted);
    // The server's end: past the TTL, its margin and a second, rounded up to 4 s.
    CHECK(*at - *granted >= 3900ms);
    CHECK(*at - *granted < 5500ms);
  } else {
    CHECK(logged(ws, "lease.expired").empty());
  }
  for (Process* p : {&a, &b}) p->signal(SIGINT);
  for (Process* p : {&a, &b}) CHECK(p->wait(5s).exit == 0);

  // A waiter on the other host takes a dead holder's lease by its own
  // clock, as before: the grant names what it took over, the count goes on.
  REQUIRE(ws.swarm({"lease", "acquire", "job.weekly", "--ttl", "2s"}).exit == 0);
  Process waiter(ws.command({"lock", "job.weekly", "--wait", "20s", "--ttl", "5s", "--", "true"}, kHostB));
  auto done = waiter.wait(20s);
  CHECK_MESSAGE(done.exit == 0, done.err);
  auto log = ws.swarm({"log", "--lease", "job.weekly", "--kind", "lease.grant", "--json"});
  auto last = swarm::Json::parse(log.out.substr(log.out.rfind('\n', log.out.size() - 2) + 1));
  CHECK(field(last, "took_over") == "expired");
  CHECK(field(last, "previous_holder").find("host-a") == 0);
  CHECK(number_of(last.get(), "transitions") == 1);
}

TEST_CASE("Expiry_UpLetsTheServerAnnounceExpiryAndCommitATasksWritesTogether") {
  // What `up` turns on, as far as the server can: expiry markers on the
  // session and lease buckets (2.11+), atomic commits on the task bucket
  // (2.12+); `doctor` then notes nothing about them.
  SwarmWorkspace ws;
  auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
  const std::string version = connection.server_version();
  const auto names = ws.names();
  for (const auto& bucket : {names.sessions, names.leases})
    CHECK(kv::Bucket::open(connection, bucket).announces_expiry() == !kv::version_before(version, 2, 11));
  CHECK(kv::Bucket::open(connection, names.tasks).commits_atomically() == !kv::version_before(version, 2, 12));
  auto doctor = ws.swarm({"--json", "doctor"});
  CHECK(doctor.out.find("announce expiry") == std::string::npos);
  // A claim on it: the record and its hints, and the claim is what a
  // reader of the record sees.
  REQUIRE(ws.swarm({"task", "add", "Do it", "--id", "T-1"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "a", "--next"}).exit == 0);
  auto tasks = kv::Bucket::open(connection, names.tasks);
  bool ready_hint = false;
  for (const auto& key : tasks.keys()) ready_hint = ready_hint || (key.rfind("_ready", 0) == 0);
  CHECK_FALSE(ready_hint);
  auto shown = ws.swarm({"task", "show", "T-1", "--json"});
  CHECK(shown.out.find("\"state\":\"working\"") != std::string::npos);
}
