// The journal through the real binary: each verb's event with its fields,
// `swarm log`'s filters and refusals, a follower, a lost lease and a resign.
#include <doctest/doctest.h>
#include <nats/nats.h>
#include <signal.h>

#include <set>
#include <sstream>
#include <thread>

#include "e2e/swarm_fixture.h"
#include "kv/stream.h"
#include "support/json_fields.h"
#include "support/raw_nats.h"

using namespace testing;
using namespace std::chrono_literals;

namespace {

// Every event `swarm log ARGS --json` prints, one JSON object per line.
std::vector<swarm::Json> events(const SwarmWorkspace& ws, std::vector<std::string> args) {
  args.insert(args.begin(), "log");
  args.push_back("--json");
  auto r = ws.swarm(args);
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  std::vector<swarm::Json> out;
  std::size_t at = 0;
  while (at < r.out.size()) {
    auto nl = r.out.find('\n', at);
    REQUIRE(nl != std::string::npos);  // every line ends
    auto doc = swarm::Json::parse(r.out.substr(at, nl - at));
    REQUIRE_MESSAGE(doc, r.out.substr(at, nl - at));
    CHECK(testing::text_of(doc.get(), "schema") == "swarm.event.v1");
    out.push_back(std::move(doc));
    at = nl + 1;
  }
  return out;
}

std::vector<std::string> kinds_of(const std::vector<swarm::Json>& docs) {
  std::vector<std::string> kinds;
  for (const auto& d : docs) kinds.push_back(testing::text_of(d.get(), "kind"));
  return kinds;
}

const cJSON* member(const swarm::Json& doc, const char* name) { return cJSON_GetObjectItem(doc.get(), name); }

}  // namespace

TEST_CASE("Journal_EveryVerbWritesItsEvent") {
  SwarmWorkspace ws;
  auto joined = ws.swarm({"join", "--slot", "a", "--task", "T-1", "--json"});
  REQUIRE_MESSAGE(joined.exit == 0, joined.err);
  const double token = number(json_of(joined), "session_token");
  write_file(ws.worktree("a") / "f.txt", "f\n");
  auto committed = ws.swarm({"commit", "--slot", "a", "-m", "f", "--json"});
  REQUIRE_MESSAGE(committed.exit == 0, committed.err);
  write_file(ws.worktree("a") / "left.txt", "uncommitted\n");
  REQUIRE(ws.swarm({"close", "--slot", "a", "--result", "fail"}).exit == 0);

  auto a = events(ws, {"--slot", "a"});
  REQUIRE(kinds_of(a) == std::vector<std::string>{"join", "commit", "close"});
  for (const auto& e : a) {
    CHECK(testing::text_of(e.get(), "slot") == "a");
    CHECK(testing::text_of(e.get(), "host") == "host-a");
    CHECK(testing::text_of(e.get(), "host_id") == "id-a");
    CHECK(testing::text_of(e.get(), "task_id") == "T-1");
    CHECK(testing::number_of(e.get(), "token") == token);
    CHECK(!testing::text_of(e.get(), "time").empty());
  }
  CHECK(cJSON_IsNull(member(a[0], "replaced")));
  CHECK(testing::text_of(a[1].get(), "head") == field(json_of(committed), "commit"));
  CHECK(cJSON_IsTrue(member(a[1], "pushed")));
  CHECK(testing::text_of(a[2].get(), "result") == "fail");
  CHECK(testing::text_of(a[2].get(), "head") == field(json_of(committed), "commit"));
  CHECK(testing::number_of(a[2].get(), "salvaged") >= 1);
  const std::string recovery = testing::text_of(a[2].get(), "recovery");
  CHECK(std::filesystem::exists(std::filesystem::path(recovery) / "left.txt"));

  // A forced rejoin names what it replaced; an eviction what it removed.
  auto first = ws.swarm({"join", "--slot", "b", "--task", "T-2", "--json"});
  REQUIRE(first.exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "b", "--task", "T-2", "--force"}).exit == 0);
  REQUIRE(ws.swarm({"evict", "--slot", "b"}, kHostB).exit == 0);
  auto b = events(ws, {"--slot", "b"});
  REQUIRE(kinds_of(b) == std::vector<std::string>{"join", "join", "evict"});
  CHECK(testing::text_of(b[1].get(), "replaced") == "force");
  CHECK(testing::number_of(b[1].get(), "replaced_token") == number(json_of(first), "session_token"));
  CHECK(testing::text_of(b[1].get(), "replaced_host") == "host-a");
  CHECK(testing::text_of(b[2].get(), "host") == "host-b");  // who evicted
  CHECK(testing::text_of(member(b[2], "removed"), "host") == "host-a");

  // A lock: its grant and release, with the token CMD saw.
  auto lock = ws.swarm({"lock", "job", "--", "sh", "-c", "echo $SWARM_FENCING_TOKEN"});
  REQUIRE_MESSAGE(lock.exit == 0, lock.err);
  auto job = events(ws, {"--lease", "job"});
  REQUIRE(kinds_of(job) == std::vector<std::string>{"lease.grant", "lease.release"});
  for (const auto& e : job) CHECK(std::to_string(static_cast<long long>(testing::number_of(e.get(), "token"))) + "\n" == lock.out);
  CHECK(cJSON_IsNull(member(job[0], "took_over")));

  // The task leases of the slots are journaled as leases; --kind and -n narrow.
  CHECK(kinds_of(events(ws, {"--lease", "task.T-1"})) == std::vector<std::string>{"lease.grant", "lease.release"});
  auto closes = events(ws, {"--kind", "close", "--kind", "evict"});
  CHECK(kinds_of(closes) == std::vector<std::string>{"close", "evict"});
  auto last2 = events(ws, {"-n", "2"});
  CHECK(kinds_of(last2) == std::vector<std::string>{"lease.grant", "lease.release"});
  CHECK(events(ws, {"--since", "1h"}).size() == events(ws, {}).size());
  CHECK(events(ws, {"--since", "2099-01-01T00:00:00Z"}).empty());

  // Text rows: TIME KIND SUBJECT HOST TOKEN DETAIL.
  auto text = ws.swarm({"log", "--slot", "a"});
  REQUIRE(text.exit == 0);
  CHECK(text.out.find(" close ") != std::string::npos);
  CHECK(text.out.find("slot/a") != std::string::npos);
  CHECK(text.out.find("result=fail") != std::string::npos);
  auto none = ws.swarm({"log", "--slot", "never"});
  CHECK(none.exit == 0);
  CHECK(none.out.empty());
  CHECK(none.err.find("no events") != std::string::npos);
}

TEST_CASE("Journal_StaleTakeoverAndDoctorFix") {
  // a stale session replaced by a join says "stale"; doctor --fix's repair of an orphan folder is a fix event.
  SwarmWorkspace ws({.up_args = {"--ttl", "3s"}});
  auto first = ws.swarm({"join", "--slot", "a", "--task", "T-1", "--json"});
  REQUIRE(first.exit == 0);
  std::this_thread::sleep_for(2200ms);  // past 2/3 of the TTL: stale, not yet expired
  auto again = ws.swarm({"join", "--slot", "a", "--task", "T-1"});
  REQUIRE_MESSAGE(again.exit == 0, again.err);
  auto a = events(ws, {"--slot", "a", "--kind", "join"});
  REQUIRE(a.size() == 2);
  CHECK(testing::text_of(a[1].get(), "replaced") == "stale");
  CHECK(testing::number_of(a[1].get(), "replaced_token") == number(json_of(first), "session_token"));

  // Slot c's record evicted: its folder is an orphan that doctor --fix salvages and removes.
  REQUIRE(ws.swarm({"join", "--slot", "c", "--task", "T-3"}).exit == 0);
  REQUIRE(ws.swarm({"evict", "--slot", "c"}).exit == 0);
  auto fixed = ws.swarm({"doctor", "--fix"});
  CHECK_MESSAGE(!std::filesystem::exists(ws.root() / ".swarm/slots/c"), fixed.out << fixed.err);
  auto c = events(ws, {"--slot", "c", "--kind", "fix"});
  REQUIRE(c.size() == 1);
  CHECK(testing::text_of(c[0].get(), "check") == "orphan_folder");
  CHECK(testing::text_of(c[0].get(), "did").find("removed") != std::string::npos);
}

TEST_CASE("Journal_LogRefusesBadInputBeforeAnyIO") {
  SwarmWorkspace ws({.up = false});  // no workspace at all: refusals come first
  for (std::vector<std::string> args : {std::vector<std::string>{"log", "--kind", "joined"},
                                        {"log", "--since", "yesterday"},
                                        {"log", "--since", "40000d"},
                                        {"log", "--slot", "a", "--lease", "b"},
                                        {"log", "-n", "0"},
                                        {"log", "--slot", "a.b"},
                                        {"log", "--lease", "a..b"}}) {
    auto r = ws.swarm(args);
    CHECK_MESSAGE(r.exit == 2, args.back() << ": " << r.err);
    CHECK(r.out.empty());
  }
  auto r = ws.swarm({"log", "--kind", "joined"});
  CHECK(r.err.find("joined") != std::string::npos);
}

TEST_CASE("Journal_LogKindTakesEveryKindTheJournalWritesAndListsOnlyThose") {
  // Every kind the journal writes (the contract's, and the builders' of swarm/) is a --kind that log takes;
  // the refusal of a bad one lists exactly those; --kind task.claim finds a claim.
  SwarmWorkspace ws;
  const std::set<std::string> written = {
      "join",          "commit",        "close",       "evict",      "fix",          "sync",
      "overlap",       "hold.conflict", "session.lost", "session.expired", "lease.grant", "lease.release",
      "lease.lost",    "lease.expired", "elect.resign", "elect.handover", "elect.state", "land",
      "land.refused",  "task.add",      "task.claim",  "task.state", "task.edit",   "review.approve",
      "review.reject"};
  for (const auto& kind : written) {
    auto r = ws.swarm({"log", "--kind", kind});
    CHECK_MESSAGE(r.exit == 0, kind << ": " << r.err);
  }
  auto refused = ws.swarm({"log", "--kind", "joined"});
  REQUIRE(refused.exit == 2);
  std::string list = refused.err.substr(refused.err.find("one of ") + 7);
  list = list.substr(0, list.find(" ("));  // what the parser adds: (see `swarm log --help`)
  std::set<std::string> listed;
  std::istringstream words(list);
  for (std::string w; words >> w;) {
    while (!w.empty() && (w.back() == ',' || w.back() == '\n')) w.pop_back();
    if (!w.empty()) listed.insert(w);
  }
  CHECK(listed == written);
  REQUIRE(ws.swarm({"task", "add", "A", "--id", "T-1"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "a", "--next"}).exit == 0);
  auto claims = events(ws, {"--kind", "task.claim"});
  REQUIRE(claims.size() == 1);
  CHECK(text_of(claims[0].get(), "task_id") == "T-1");
}

TEST_CASE("Journal_FollowPrintsActsAsTheyHappen") {
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "old", "--task", "T-0"}).exit == 0);
  Process follow(ws.command({"log", "--follow", "--json", "--kind", "join", "--kind", "close"}));
  auto backlog = follow.read_line(10s);  // the last events first (as tail -f)
  REQUIRE(backlog);
  CHECK(backlog->find("\"slot\":\"old\"") != std::string::npos);
  REQUIRE(ws.swarm({"join", "--slot", "new", "--task", "T-1"}).exit == 0);
  auto line = follow.read_line(5s);
  REQUIRE(line);
  CHECK(line->find("\"kind\":\"join\"") != std::string::npos);
  CHECK(line->find("\"slot\":\"new\"") != std::string::npos);
  REQUIRE(ws.swarm({"close", "--slot", "new", "--result", "fork", "--no-artifact"}).exit == 0);
  line = follow.read_line(5s);
  REQUIRE(line);
  CHECK(line->find("\"result\":\"fork\"") != std::string::npos);
  follow.signal(SIGINT);
  auto end = follow.wait(10s);
  CHECK(end.exit == 0);
}

TEST_CASE("Journal_LeaseLostAndLeaderResign") {
  SwarmWorkspace ws;
  // A lock whose lease is released under it (by its token, from elsewhere) loses it: lease.lost.
  Process lock(ws.command({"lock", "job", "--ttl", "3s", "--", "sh", "-c", "echo $SWARM_FENCING_TOKEN; sleep 30"}));
  auto token = lock.read_line(10s);
  REQUIRE(token);
  REQUIRE(ws.swarm({"lease", "release", "job", "--token", *token}).exit == 0);
  auto ended = lock.wait(20s);
  CHECK(ended.exit != 0);
  auto job = events(ws, {"--lease", "job"});
  REQUIRE(kinds_of(job) == std::vector<std::string>{"lease.grant", "lease.release", "lease.lost"});
  CHECK(std::to_string(static_cast<long long>(testing::number_of(job[2].get(), "token"))) == *token);

  // A leader asked to step down: elect.resign after its release.
  Process leader(ws.command({"elect", "lead", "--ttl", "3s", "--", "sh", "-c", "echo up; sleep 30"}));
  REQUIRE(leader.read_line(10s));
  auto resign = ws.swarm({"elect", "lead", "--resign"});
  CHECK_MESSAGE(resign.exit == 0, resign.err);
  leader.wait(20s);
  auto lead = events(ws, {"--lease", "lead"});
  CHECK(kinds_of(lead) == std::vector<std::string>{"lease.grant", "lease.release", "elect.resign"});
}

TEST_CASE("Journal_MissingIsNamedActsGoOnAndUpMakesItAgain") {
  // the stream deleted under a workspace: acts warn and succeed, log and doctor name it, up makes it again.
  SwarmWorkspace ws;
  {
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    REQUIRE(natsConnection_ConnectTo(&nc, ws.server()->url().c_str()) == NATS_OK);
    REQUIRE(natsConnection_JetStream(&js, nc, nullptr) == NATS_OK);
    REQUIRE(js_DeleteStream(js, ws.names().events.c_str(), nullptr, nullptr) == NATS_OK);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
  }
  auto join = ws.swarm({"join", "--slot", "a", "--task", "T-1"});
  CHECK_MESSAGE(join.exit == 0, join.err);
  CHECK(join.took < 3s);  // a deleted journal is known at once, never waited out
  CHECK(join.err.find("the journal did not record the join of slot a") != std::string::npos);
  auto log = ws.swarm({"log", "--slot", "a"});
  CHECK_MESSAGE(log.exit == 6, log.err);
  CHECK(log.err.find("swarm up") != std::string::npos);
  auto doctor = ws.swarm({"doctor", "--json"});
  CHECK(doctor.exit == 8);
  CHECK(doctor.out.find("\"check\":\"journal\"") != std::string::npos);
  REQUIRE(ws.swarm({"up"}).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "a", "--result", "fail"}).exit == 0);
  CHECK(kinds_of(events(ws, {"--slot", "a"})) == std::vector<std::string>{"close"});
  CHECK(ws.swarm({"doctor"}).exit == 0);
}

namespace {

// A raw nats.c connection to a workspace's own test server.

}  // namespace

TEST_CASE("Journal_AStreamThatTakesOtherSubjectsIsNamedAndRepaired") {
  // the stream's subjects changed under the workspace: acts (a lock too) go on at once and warn; doctor names it;
  // up puts the subjects back.
  SwarmWorkspace ws;
  {
    RawNats raw(ws.server()->url());
    jsStreamInfo* info = nullptr;
    REQUIRE(js_GetStreamInfo(&info, raw.js, ws.names().events.c_str(), nullptr, nullptr) == NATS_OK);
    const char* elsewhere[] = {"swarm.elsewhere.>"};
    const char** own = info->Config->Subjects;
    info->Config->Subjects = elsewhere;
    jsStreamInfo* updated = nullptr;
    CHECK(js_UpdateStream(&updated, raw.js, info->Config, nullptr, nullptr) == NATS_OK);
    info->Config->Subjects = own;
    jsStreamInfo_Destroy(updated);
    jsStreamInfo_Destroy(info);
  }
  auto lock = ws.swarm({"lock", "LK", "--ttl", "2s", "--", "true"});
  CHECK_MESSAGE(lock.exit == 0, lock.err);
  CHECK(lock.err.find("does not take") != std::string::npos);
  auto join = ws.swarm({"join", "--slot", "a", "--task", "T-1"});
  CHECK(join.exit == 0);
  CHECK(join.took < 3s);
  auto doctor = ws.swarm({"doctor"});
  CHECK(doctor.exit == 8);
  CHECK(doctor.out.find("does not take " + ws.names().event_subjects()) != std::string::npos);
  REQUIRE(ws.swarm({"up"}).exit == 0);
  CHECK(ws.swarm({"doctor"}).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "a", "--result", "fail"}).exit == 0);
  CHECK(kinds_of(events(ws, {"--slot", "a"})) == std::vector<std::string>{"close"});
}

TEST_CASE("Journal_UpSetsEachLimitOnItsOwn") {
  SwarmWorkspace ws({.up_args = {"--events-max-age", "1d"}});
  auto up = ws.swarm({"up", "--events-max-bytes", "2MiB", "--json"});
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  // Applied, so nothing to warn about (but what an old leg's server lacks).
  std::istringstream lines(up.err);
  for (std::string line; std::getline(lines, line);)
    CHECK_MESSAGE(line.find("the workspace's server lacks ") != std::string::npos, line);
  auto doc = json_of(up);
  const cJSON* journal = cJSON_GetObjectItem(doc.get(), "journal");
  CHECK(testing::number_of(journal, "max_age_seconds") == 86400);
  CHECK(testing::number_of(journal, "max_bytes") == 2 * 1024 * 1024);
  up = ws.swarm({"up", "--json"});  // given nothing: both kept
  doc = json_of(up);
  journal = cJSON_GetObjectItem(doc.get(), "journal");
  CHECK(testing::number_of(journal, "max_age_seconds") == 86400);
  CHECK(testing::number_of(journal, "max_bytes") == 2 * 1024 * 1024);
  for (const char* bad : {"0", "1ms", "90s", "x", "40000d"}) {
    auto r = ws.swarm({"up", "--events-max-age", bad});
    CHECK_MESSAGE(r.exit == 2, bad << ": " << r.err);
  }
  for (const char* bad : {"0", "1KiB", "1.5GiB", "-1", "99999999999999999999"}) {
    auto r = ws.swarm({"up", "--events-max-bytes", bad});
    CHECK_MESSAGE(r.exit == 2, bad << ": " << r.err);
  }
}

TEST_CASE("Journal_ActsWithNoRecordAreEachRecorded") {
  // two closes of a slot whose record was evicted (no revision to name them) are two events.
  SwarmWorkspace ws;
  for (int i = 1; i <= 2; ++i) {
    REQUIRE(ws.swarm({"join", "--slot", "e", "--task", "T-" + std::to_string(i)}).exit == 0);
    REQUIRE(ws.swarm({"evict", "--slot", "e"}).exit == 0);
    REQUIRE(ws.swarm({"close", "--slot", "e", "--result", "fail"}).exit == 0);
  }
  CHECK(kinds_of(events(ws, {"--slot", "e"})) ==
        std::vector<std::string>{"join", "evict", "close", "join", "evict", "close"});
}

TEST_CASE("Journal_HostileEventsPrintEscaped") {
  // an event published by someone else with escape sequences in its kind, a detail key and its host.
  SwarmWorkspace ws;
  {
    RawNats raw(ws.server()->url());
    const swarm::WorkspaceNames names = ws.names();
    const std::string event =
        "{\"schema\":\"swarm.event.v1\",\"kind\":\"join\\u001b[31m\",\"slot\":\"s1\",\"bucket\":\"" + names.sessions + "\","
        "\"host\":\"h\\u001b[2J\",\"k\\u001b[5m\":\"v\\u0007\",\"token\":1e30}";
    REQUIRE(js_Publish(nullptr, raw.js, (names.event_root + names.sessions + ".slot.s1").c_str(), event.data(),
                       static_cast<int>(event.size()), nullptr, nullptr) == NATS_OK);
  }
  auto text = ws.swarm({"log", "--slot", "s1"});
  REQUIRE(text.exit == 0);
  CHECK(!text.out.empty());
  CHECK(text.out.find('\x1b') == std::string::npos);
  CHECK(text.out.find('\x07') == std::string::npos);
  auto json = events(ws, {"--slot", "s1"});  // valid JSON lines, the token out of range read as 0
  REQUIRE(json.size() == 1);
  CHECK(testing::number_of(json[0].get(), "token") == 0);
}

TEST_CASE("Journal_LogLastNInAFreshProcessIsTheScansTail") {
  // ~200 events of real acts (20 slots joined, committed, closed and landed, 20 locks), then `swarm log -n N` as a new process each time (a new connection, a new ordered
  // reader), 40 times: each prints exactly the last N rows a full scan by direct gets finds, at once. On nats-server
  // 2.9.10 the reader's pending count sometimes promised messages no read delivered, and `-n 3` waited 5 s for them
  // and exited 7 (about one call in six).
  SwarmWorkspace ws({.git_repo = true});
  for (int i = 0; i < 20; ++i) {
    const std::string slot = "s" + std::to_string(i);
    REQUIRE(ws.swarm({"join", "--slot", slot, "--task", "T-" + slot}).exit == 0);
    write_file(ws.worktree(slot) / ("f" + slot), "x\n");
    REQUIRE(ws.swarm({"commit", "--slot", slot, "-m", "m"}).exit == 0);
    REQUIRE(ws.swarm({"close", "--slot", slot, "--result", "success"}).exit == 0);
    REQUIRE(ws.swarm({"lock", "l" + std::to_string(i % 3), "--", "true"}).exit == 0);
  }
  REQUIRE(ws.swarm({"land", "--ready"}).exit == 0);
  // The oracle: every event, one direct get at a time (no consumer, no count).
  std::vector<std::uint64_t> all;
  {
    auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
    auto stream = kv::Stream::bind(connection, ws.names().events);
    for (std::uint64_t seq = 1;;) {
      auto m = stream.next(ws.names().event_subjects(), seq);
      if (!m) break;
      all.push_back(m->seq);
      seq = m->seq + 1;
    }
  }
  REQUIRE(all.size() > 120);
  for (int round = 0; round < 40; ++round) {
    const std::size_t n = 1 + static_cast<std::size_t>(round % 20);
    auto r = ws.swarm({"log", "-n", std::to_string(n), "--json"});
    REQUIRE_MESSAGE(r.exit == 0, "-n " << n << ": " << r.err);
    CHECK(r.took < 3s);
    std::vector<std::uint64_t> got;
    std::size_t at = 0;
    while (at < r.out.size()) {
      auto nl = r.out.find('\n', at);
      auto doc = swarm::Json::parse(r.out.substr(at, nl - at));
      got.push_back(static_cast<std::uint64_t>(cJSON_GetNumberValue(cJSON_GetObjectItem(doc.get(), "seq"))));
      at = nl + 1;
    }
    const std::vector<std::uint64_t> want(all.end() - static_cast<std::ptrdiff_t>(n), all.end());
    CHECK_MESSAGE(got == want, "-n " << n);
  }
}
