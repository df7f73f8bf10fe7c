// swarm elect, continued: --check gates an act on the leader's token; elect
// state hands a leader's state to its successor, fenced by token and digest.
#include <doctest/doctest.h>

#include <signal.h>

#include <algorithm>

#include <fstream>
#include <functional>
#include <thread>

#include "e2e/swarm_fixture.h"
#include "support/eventually.h"
#include "kv/bucket.h"
#include "kv/connection.h"
#include "kv/sha256.h"

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// One candidate (`verb`: elect, or lock) for lease sched, TTL 2 s, whose command writes its holder to `log` when
// it starts leading, then sleeps; `extra` options before the --.
Process contender(const SwarmWorkspace& ws, const fs::path& log, const std::string& who,
                  const std::vector<std::string>& extra = {}, const std::string& verb = "elect") {
  std::vector<std::string> args = {verb, "sched", "--ttl", "2s", "--holder", who};
  args.insert(args.end(), extra.begin(), extra.end());
  for (const std::string& word : {std::string("--"), std::string("sh"), std::string("-c"),
                                  "echo " + who + " >> " + log.string() + "; exec sleep 60"})
    args.push_back(word);
  return Process(ws.command(args));
}

// The token of whoever leads `name` now, by lease show (0: nobody).
std::uint64_t leader_token(const SwarmWorkspace& ws, const std::string& name) {
  auto r = ws.swarm({"lease", "show", name, "--json"});
  if (r.exit != 0) return 0;
  auto doc = json_of(r);
  const cJSON* lease = cJSON_GetArrayItem(cJSON_GetObjectItem(doc.get(), "leases"), 0);
  const cJSON* state = cJSON_GetObjectItem(lease, "state");
  const cJSON* token = cJSON_GetObjectItem(lease, "token");
  if (!cJSON_IsString(state) || std::string(state->valuestring) != "held" || !cJSON_IsNumber(token)) return 0;
  return static_cast<std::uint64_t>(token->valuedouble);
}

// Kills the leader `leading` (token `token`) once the candidate started just
// before had a moment to join the line, and returns the token of whoever
// leads next.
std::uint64_t take_over(const SwarmWorkspace& ws, Process& leading, std::uint64_t token) {
  std::this_thread::sleep_for(300ms);
  leading.signal(SIGKILL);
  leading.wait(5s);
  std::uint64_t next = 0;
  REQUIRE(eventually([&] { return (next = leader_token(ws, "sched")) != 0 && next != token; }, 10s));
  return next;
}

// Until `waiters` candidates wait in sched's line (bounded): the order they
// were started in is then their order in line.
void require_waiting(const SwarmWorkspace& ws, int waiters) {
  const std::string want = "\"waiters\":" + std::to_string(waiters);
  REQUIRE_MESSAGE(eventually([&] { return ws.swarm({"lease", "show", "sched", "--json"}).out.find(want) != std::string::npos; },
                             10s),
                  waiters << " candidates never waited in line together");
}

Process candidate(const SwarmWorkspace& ws, const std::string& who) {
  return Process(ws.command({"elect", "sched", "--ttl", "2s", "--holder", who, "--", "sleep", "60"}));
}

std::string sha256_of(const std::string& data) {
  kv::Sha256 sha;
  sha.add(data.data(), data.size());
  return kv::hex_of(sha.finish());
}

}  // namespace

TEST_CASE("Elect_CheckIsExit0ForTheLeadersTokenAnd3ForAnyOther") {
  // --check --token T: 0 while T leads; 3 for another token, for a deposed leader's token after a takeover, and
  // once nobody leads; bad input is exit 2 before any I/O.
  SwarmWorkspace ws;
  Process a = candidate(ws, "a");
  std::uint64_t ta = 0;
  REQUIRE(eventually([&] { return (ta = leader_token(ws, "sched")) != 0; }, 10s));
  auto ok = ws.swarm({"elect", "sched", "--check", "--token", std::to_string(ta), "--json"});
  CHECK_MESSAGE(ok.exit == 0, ok.err);
  CHECK(field(json_of(ok), "leader") == "a");
  auto other = ws.swarm({"elect", "sched", "--check", "--token", std::to_string(ta + 1000)});
  CHECK(other.exit == 3);
  CHECK(other.err.find("token " + std::to_string(ta) + " (a on ") != std::string::npos);  // names who leads

  Process b = candidate(ws, "b");
  const std::uint64_t tb = take_over(ws, a, ta);
  CHECK(ws.swarm({"elect", "sched", "--check", "--token", std::to_string(ta)}).exit == 3);
  CHECK(ws.swarm({"elect", "sched", "--check", "--token", std::to_string(tb)}).exit == 0);
  b.signal(SIGTERM);
  b.wait(10s);
  auto gone = ws.swarm({"elect", "sched", "--check", "--token", std::to_string(tb)});
  CHECK(gone.exit == 3);
  CHECK(gone.err.find("nobody leads it now") != std::string::npos);

  for (const auto& bad : std::vector<std::vector<std::string>>{{"elect", "sched", "--check"},
                                                              {"elect", "sched", "--token", "4"},
                                                              {"elect", "sched", "--check", "--token", "0"},
                                                              {"elect", "sched", "--check", "--token", "-1"},
                                                              {"elect", "sched", "--check", "--token", "4", "--", "true"},
                                                              {"elect", "--check", "--token", "4"}}) {
    auto r = ws.swarm(bad);
    CHECK_MESSAGE(r.exit == 2, r.err);
  }
}

TEST_CASE("ElectState_ASuccessorReadsWhatItsPredecessorPut") {
  // the leader puts its state under its token; get by the same token gives the bytes back; another token's put or
  // get is exit 3 and changes nothing; after a takeover the successor gets what its predecessor put, and the
  // deposed leader can neither put nor get.
  SwarmWorkspace ws;
  const fs::path file = ws.root() / "state.bin";
  std::string data = "cursor=41\n";
  data += std::string("\0\x01\xff binary", 10);
  { std::ofstream(file, std::ios::binary) << data; }
  Process a = candidate(ws, "a");
  std::uint64_t ta = 0;
  REQUIRE(eventually([&] { return (ta = leader_token(ws, "sched")) != 0; }, 10s));
  const std::string token_a = std::to_string(ta);

  auto none = ws.swarm({"elect", "state", "sched", "get", "--token", token_a});
  CHECK(none.exit == 4);
  auto put = ws.swarm({"elect", "state", "sched", "put", file.string(), "--token", token_a, "--json"});
  REQUIRE_MESSAGE(put.exit == 0, put.err);
  auto doc = json_of(put);
  CHECK(field(doc, "sha256") == sha256_of(data));
  CHECK(number(doc, "size") == static_cast<double>(data.size()));
  auto got = ws.swarm({"elect", "state", "sched", "get", "--token", token_a});
  REQUIRE_MESSAGE(got.exit == 0, got.err);
  CHECK(got.out == data);
  auto wrong = ws.swarm({"elect", "state", "sched", "put", file.string(), "--token", std::to_string(ta + 1000)});
  CHECK(wrong.exit == 3);
  CHECK(ws.swarm({"elect", "state", "sched", "get", "--token", std::to_string(ta + 1000)}).exit == 3);
  auto log = ws.swarm({"log", "--kind", "elect.state", "--json"});
  CHECK_MESSAGE(log.exit == 0, log.err);
  CHECK(log.out.find(sha256_of(data)) != std::string::npos);

  Process b = candidate(ws, "b");
  const std::uint64_t tb = take_over(ws, a, ta);
  auto successor = ws.swarm({"elect", "state", "sched", "get", "--token", std::to_string(tb)});
  CHECK_MESSAGE(successor.exit == 0, successor.err);
  CHECK(successor.out == data);
  CHECK(ws.swarm({"elect", "state", "sched", "put", file.string(), "--token", token_a}).exit == 3);
  CHECK(ws.swarm({"elect", "state", "sched", "get", "--token", token_a}).exit == 3);
  { std::ofstream(file, std::ios::binary | std::ios::trunc) << "cursor=42\n"; }
  REQUIRE(ws.swarm({"elect", "state", "sched", "put", file.string(), "--token", std::to_string(tb)}).exit == 0);
  CHECK(ws.swarm({"elect", "state", "sched", "get", "--token", std::to_string(tb)}).out == "cursor=42\n");
  b.signal(SIGTERM);
  b.wait(10s);
}

TEST_CASE("ElectState_ADeposedLeadersLateWriteAndABadDigestAreNeverHandedOut") {
  // planted by another client: a state of an earlier token written after the leader's grant (a deposed leader's
  // late write) is exit 3 naming it; one whose bytes do not match their SHA-256 is exit 3 (corrupt); a header
  // with control bytes is printed escaped. A state over 512 KiB and bad usage are exit 2 before any I/O.
  SwarmWorkspace ws;
  Process a = candidate(ws, "a");
  std::uint64_t ta = 0;
  REQUIRE(eventually([&] { return (ta = leader_token(ws, "sched")) != 0; }, 10s));
  const std::string token_a = std::to_string(ta);
  auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
  auto leases = kv::Bucket::open(connection, ws.names().leases);
  const std::string late = "late";
  leases.create("_state.sched", R"({"name":"sched","token":)" + std::to_string(ta - 1) +
                                    R"(,"holder":"z\u001b[2J","host":"h","sha256":")" + sha256_of(late) +
                                    R"(","size":4})" + "\n" + late);
  auto deposed = ws.swarm({"elect", "state", "sched", "get", "--token", token_a});
  CHECK(deposed.exit == 3);
  CHECK(deposed.err.find("deposed leader") != std::string::npos);
  CHECK(deposed.err.find('\x1b') == std::string::npos);
  auto last = leases.get("_state.sched");
  REQUIRE(last);
  leases.update("_state.sched",
                R"({"name":"sched","token":)" + token_a + R"(,"holder":"a","host":"h","sha256":")" + sha256_of(late) +
                    R"(","size":4})" + "\nlatf",
                last->revision);
  auto bad_digest = ws.swarm({"elect", "state", "sched", "get", "--token", token_a});
  CHECK(bad_digest.exit == 3);
  CHECK(bad_digest.err.find("SHA-256") != std::string::npos);

  const fs::path big = ws.root() / "big";
  { std::ofstream(big, std::ios::binary) << std::string(512 * 1024 + 1, 'x'); }
  for (const auto& bad : std::vector<std::vector<std::string>>{
           {"elect", "state", "sched", "put", big.string(), "--token", token_a},
           {"elect", "state", "sched", "put", "--token", token_a},
           {"elect", "state", "sched", "get", "extra", "--token", token_a},
           {"elect", "state", "sched", "frob", "--token", token_a},
           {"elect", "state", "sched", "get"},
           {"elect", "state", "bad name", "get", "--token", token_a},
           {"elect", "state", "sched", "put", (ws.root() / "missing").string(), "--token", token_a}}) {
    auto r = ws.swarm(bad);
    CHECK_MESSAGE(r.exit == 2, r.err);
  }
  a.signal(SIGTERM);
  a.wait(10s);
}

TEST_CASE("ElectState_ALateWriteNobodyConfirmedIsRefusedByEveryLaterLeader") {
  // a's put is held after its leader check, before its write (the test seam); a dies, b leads; the put lands
  // (after b's grant) and says exit 3, unconfirmed. b dies without a put of its own, c leads: c's get refuses the
  // late write (its token is older than c's and it landed before c's grant, so the revision rule alone would hand
  // it out). c's own put is confirmed and handed out. Then planted records: see below.
  SwarmWorkspace ws;
  const fs::path file = ws.root() / "state.txt";
  { std::ofstream(file) << "cursor=7\n"; }
  Process a = candidate(ws, "a");
  std::uint64_t ta = 0;
  REQUIRE(eventually([&] { return (ta = leader_token(ws, "sched")) != 0; }, 10s));
  auto held_put = ws.command({"elect", "state", "sched", "put", file.string(), "--token", std::to_string(ta)});
  held_put.env["SWARM_TEST_LEASE_STOP"] = "state-checked";
  Process late(held_put);
  REQUIRE(eventually([&] { return process_state(late.pid()) == 'T'; }, 10s));
  Process b = candidate(ws, "b");
  const std::uint64_t tb = take_over(ws, a, ta);
  late.signal(SIGCONT);
  auto landed = late.wait(20s);
  CHECK(landed.exit == 3);
  CHECK(landed.err.find("unconfirmed") != std::string::npos);

  Process c = candidate(ws, "c");
  const std::uint64_t tc = take_over(ws, b, tb);
  auto refused = ws.swarm({"elect", "state", "sched", "get", "--token", std::to_string(tc)});
  CHECK(refused.exit == 3);
  CHECK_MESSAGE(refused.err.find("never confirmed") != std::string::npos, refused.err);
  CHECK(refused.out.empty());
  { std::ofstream(file, std::ios::trunc) << "cursor=8\n"; }
  auto put = ws.swarm({"elect", "state", "sched", "put", file.string(), "--token", std::to_string(tc)});
  CHECK_MESSAGE(put.exit == 0, put.err);
  auto got = ws.swarm({"elect", "state", "sched", "get", "--token", std::to_string(tc)});
  CHECK_MESSAGE(got.exit == 0, got.err);
  CHECK(got.out == "cursor=8\n");

  // Planted by another client: a state without a confirmation (as an older swarm writes it) once one exists is
  // refused; a confirmation naming no state of ours (too large to be a revision, or above the state's own) is
  // replaced by the next put, which is handed out again.
  auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
  auto leases = kv::Bucket::open(connection, ws.names().leases);
  auto state = leases.get("_state.sched");
  REQUIRE(state);
  leases.update("_state.sched",
                R"({"name":"sched","token":)" + std::to_string(tc) + R"(,"holder":"old","host":"h","sha256":")" +
                    sha256_of("old") + R"(","size":3})" + "\nold",
                state->revision);
  auto legacy = ws.swarm({"elect", "state", "sched", "get", "--token", std::to_string(tc)});
  CHECK(legacy.exit == 3);
  CHECK(legacy.err.find("never confirmed") != std::string::npos);
  for (const std::string planted : {"1e300", "9007199254740000"}) {
    CAPTURE(planted);
    REQUIRE(ws.swarm({"elect", "state", "sched", "put", file.string(), "--token", std::to_string(tc)}).exit == 0);
    auto ok = leases.get("_state_ok.sched");
    REQUIRE(ok);
    leases.update("_state_ok.sched", R"({"revision":)" + planted + R"(,"token":1})", ok->revision);
    CHECK(ws.swarm({"elect", "state", "sched", "get", "--token", std::to_string(tc)}).exit == 3);
    auto again = ws.swarm({"elect", "state", "sched", "put", file.string(), "--token", std::to_string(tc)});
    CHECK_MESSAGE(again.exit == 0, again.err);
    auto healed = ws.swarm({"elect", "state", "sched", "get", "--token", std::to_string(tc)});
    CHECK_MESSAGE(healed.exit == 0, healed.err);
    CHECK(healed.out == "cursor=8\n");
  }
  c.signal(SIGTERM);
  c.wait(10s);
}

TEST_CASE("Elect_APriorityCandidateNeverUnseatsTheLeaderAndGoesBeforeEarlierLowerOnes") {
  // a leads; b and c (priority 0) wait, then d (priority 5) comes: a keeps leading; when a dies d leads, not b or
  // c, which came earlier; when d dies, b (then c) by arrival. lease show names d's priority.
  SwarmWorkspace ws;
  const fs::path log = ws.root() / "leaders";
  auto start = [&](const std::string& who, const std::string& priority) {
    return contender(ws, log, who, {"--priority", priority});
  };
  auto leaders = [&] { return read_file(log); };
  Process a = start("a", "0");
  REQUIRE(eventually([&] { return leaders() == "a\n"; }, 10s));
  Process b = start("b", "0");
  std::this_thread::sleep_for(200ms);
  Process c = start("c", "0");
  std::this_thread::sleep_for(200ms);
  Process d = start("d", "5");
  require_waiting(ws, 3);
  std::this_thread::sleep_for(1s);
  CHECK(leaders() == "a\n");  // never unseated
  a.signal(SIGKILL);
  a.wait(5s);
  REQUIRE(eventually([&] { return leaders() == "a\nd\n"; }, 10s));
  auto shown = ws.swarm({"lease", "show", "sched"});
  CHECK(shown.out.find("sched: priority 5") != std::string::npos);
  CHECK(ws.swarm({"lease", "show", "sched", "--json"}).out.find("\"priority\":5") != std::string::npos);
  d.signal(SIGKILL);
  d.wait(5s);
  REQUIRE(eventually([&] { return leaders() == "a\nd\nb\n"; }, 10s));
  b.signal(SIGKILL);
  b.wait(5s);
  REQUIRE(eventually([&] { return leaders() == "a\nd\nb\nc\n"; }, 10s));
  c.signal(SIGTERM);
  c.wait(10s);
}

TEST_CASE("Elect_AMinimumTermHoldsAResignUntilItEnds") {
  // a leader with --min-term 3s asked at once to step down says so, and so does the one who asked; it steps down
  // only once it has led 3s, and then the next candidate leads. Bad values are exit 2 before any I/O.
  SwarmWorkspace ws;
  const fs::path log = ws.root() / "leaders";
  auto start = [&](const std::string& who) { return contender(ws, log, who, {"--min-term", "3s"}); };
  Process a = start("a");
  REQUIRE(eventually([&] { return read_file(log) == "a\n"; }, 10s));
  const auto led = std::chrono::steady_clock::now();
  Process b = start("b");
  require_waiting(ws, 1);
  auto resign = ws.swarm({"elect", "sched", "--resign"});
  const auto stepped_down = std::chrono::steady_clock::now();
  CHECK_MESSAGE(resign.exit == 0, resign.err);
  CHECK(resign.err.find("minimum term of 3s") != std::string::npos);
  CHECK(stepped_down - led >= 2800ms);
  MESSAGE("stepped down " << std::chrono::duration_cast<std::chrono::milliseconds>(stepped_down - led).count()
                          << " ms after it was elected (minimum term 3s)");
  auto a_end = a.wait(15s);
  CHECK(a_end.exit == 0);
  CHECK(a_end.err.find("minimum term ends in") != std::string::npos);
  REQUIRE(eventually([&] { return read_file(log) == "a\nb\n"; }, 10s));
  b.signal(SIGTERM);
  b.wait(10s);
  for (const auto& bad : std::vector<std::vector<std::string>>{{"elect", "sched", "--min-term", "2h", "--", "true"},
                                                              {"elect", "sched", "--min-term", "soon", "--", "true"},
                                                              {"elect", "sched", "--priority", "1001", "--", "true"},
                                                              {"elect", "sched", "--priority", "-1", "--", "true"},
                                                              {"elect", "sched", "--priority", "3", "--observe"},
                                                              {"elect", "sched", "--min-term", "3s", "--resign"}}) {
    auto r = ws.swarm(bad);
    CHECK_MESSAGE(r.exit == 2, r.err);
  }
}

TEST_CASE("Elect_ResignToHandsOverToTheNamedCandidateAndNobodyElse") {
  // a leads, b, c and d wait in that order: --resign --to d makes d the leader, not b that came first; the
  // journal says elect.handover to d. A candidate that is not waiting is exit 4, and nothing is asked.
  SwarmWorkspace ws;
  const fs::path log = ws.root() / "leaders";
  auto start = [&](const std::string& who) { return contender(ws, log, who); };
  Process a = start("a");
  REQUIRE(eventually([&] { return read_file(log) == "a\n"; }, 10s));
  Process b = start("b");
  std::this_thread::sleep_for(200ms);  // b, c, d join the line in that order
  Process c = start("c");
  std::this_thread::sleep_for(200ms);
  Process d = start("d");
  require_waiting(ws, 3);
  Process observer(ws.command({"elect", "sched", "--observe"}));
  REQUIRE(observer.read_line(10s));  // who leads now
  auto nobody = ws.swarm({"elect", "sched", "--resign", "--to", "e"});
  CHECK(nobody.exit == 4);
  CHECK(nobody.err.find("waiting: ") != std::string::npos);
  std::this_thread::sleep_for(300ms);
  CHECK(read_file(log) == "a\n");
  auto handed = ws.swarm({"elect", "sched", "--resign", "--to", "d", "--json"});
  CHECK_MESSAGE(handed.exit == 0, handed.err);
  CHECK(field(json_of(handed), "leader") == "d");
  CHECK(field(json_of(handed), "handed_to") == "d");
  REQUIRE(eventually([&] { return read_file(log) == "a\nd\n"; }, 10s));
  CHECK(a.wait(10s).exit == 0);
  // --observe says why each leader ended: handed over to d.
  std::vector<std::string> seen;
  for (int i = 0; i < 4; ++i) {
    auto line = observer.read_line(5s);
    if (!line) break;
    auto doc = swarm::Json::parse(*line);
    seen.push_back(field(doc, "change") + "/" + field(doc, "reason"));
    if (field(doc, "leader") == "d") break;
  }
  CHECK(std::find(seen.begin(), seen.end(), "released/handed_over") != seen.end());
  CHECK(std::find(seen.begin(), seen.end(), "elected/handed_over") != seen.end());
  auto journal = ws.swarm({"log", "--kind", "elect.handover", "--json"});
  CHECK(journal.out.find("\"to\":\"d\"") != std::string::npos);
  // then the line goes on in order: d resigns plainly, b leads
  CHECK(ws.swarm({"elect", "sched", "--resign"}).exit == 0);
  REQUIRE(eventually([&] { return read_file(log) == "a\nd\nb\n"; }, 10s));
  bool resigned = false;
  for (int i = 0; i < 4 && !resigned; ++i) {
    auto line = observer.read_line(5s);
    if (!line) break;
    resigned = field(swarm::Json::parse(*line), "reason") == "resigned";
  }
  CHECK(resigned);
  observer.signal(SIGINT);
  observer.wait(10s);
  for (Process* p : {&b, &c, &d}) p->signal(SIGTERM);
  for (Process* p : {&b, &c, &d}) p->wait(10s);
}

TEST_CASE("Elect_AHandoverToAFrozenCandidateIsNeverTakenWhileItIsFrozen") {
  // a leads, b then c wait; c is frozen (SIGSTOP) and a is asked to hand over to it: a steps down, c cannot take
  // the lease, and the others wait for it only until its place is past its TTL: then b leads. Thawed, c does
  // not unseat b.
  SwarmWorkspace ws;
  const fs::path log = ws.root() / "leaders";
  auto start = [&](const std::string& who) { return contender(ws, log, who); };
  Process a = start("a");
  REQUIRE(eventually([&] { return read_file(log) == "a\n"; }, 10s));
  Process b = start("b");
  std::this_thread::sleep_for(200ms);
  Process c = start("c");
  require_waiting(ws, 2);
  c.signal(SIGSTOP);
  const auto frozen = std::chrono::steady_clock::now();
  auto handed = ws.swarm({"elect", "sched", "--resign", "--to", "c"});
  CHECK(handed.exit == 3);  // stepped down for c, but b leads
  CHECK(handed.err.find("now b") != std::string::npos);
  REQUIRE(eventually([&] { return read_file(log) == "a\nb\n"; }, 10s));
  const auto b_led = std::chrono::steady_clock::now();
  CHECK(b_led - frozen >= 1500ms);  // the line waited for c until its place was past its TTL (2s after its last beat)
  MESSAGE("b led " << std::chrono::duration_cast<std::chrono::milliseconds>(b_led - frozen).count()
                   << " ms after c froze (TTL 2s)");
  c.signal(SIGCONT);
  std::this_thread::sleep_for(1500ms);
  CHECK(read_file(log) == "a\nb\n");
  CHECK(ws.swarm({"elect", "sched", "--check", "--token", std::to_string(leader_token(ws, "sched"))}).exit == 0);
  for (Process* p : {&b, &c}) p->signal(SIGTERM);
  for (Process* p : {&a, &b, &c}) p->wait(10s);
}

TEST_CASE("Elect_AHandoverToAWaiterThatDoesNotHearItHoldsTheLineOneTtlAtMost") {
  // a leads, b waits first, w waits behind it through `swarm lock` (which does not hear hand-overs): a steps down
  // for w, w never takes the lease, and b leads once one TTL has passed since the release; the line never stalls.
  SwarmWorkspace ws;
  const fs::path log = ws.root() / "leaders";
  auto start = [&](const std::string& verb, const std::string& who) { return contender(ws, log, who, {}, verb); };
  Process a = start("elect", "a");
  REQUIRE(eventually([&] { return read_file(log) == "a\n"; }, 10s));
  Process b = start("elect", "b");
  std::this_thread::sleep_for(200ms);
  Process w = start("lock", "w");
  require_waiting(ws, 2);
  const auto asked = std::chrono::steady_clock::now();
  auto handed = ws.swarm({"elect", "sched", "--resign", "--to", "w"});
  CHECK(handed.exit == 3);
  REQUIRE(eventually([&] { return read_file(log) == "a\nb\n"; }, 15s));
  const auto waited = std::chrono::steady_clock::now() - asked;
  CHECK(waited < 8s);
  MESSAGE("b led " << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()
                   << " ms after the hand-over to w was asked (TTL 2s)");
  for (Process* p : {&b, &w}) p->signal(SIGTERM);
  for (Process* p : {&a, &b, &w}) p->wait(10s);
}
