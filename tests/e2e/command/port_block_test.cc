// Port blocks: `up --ports A-B` gives the workspace a range, `join --ports K`
// a slot K consecutive ports no live slot on any host holds (a lease per
// block, renewed with the session, released by close and evict, free when
// the session expires).
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>
#include <thread>

#include "e2e/swarm_fixture.h"
#include "support/eventually.h"
#include "support/json_fields.h"
#include "support/raw_nats.h"

using namespace testing;
using namespace std::chrono_literals;

namespace {

struct Block {
  unsigned base = 0;
  unsigned count = 0;
};

// Each session's block as `status --json` shows it (slots without one left out).
std::map<std::string, Block> blocks_by_slot(const SwarmWorkspace& ws) {
  auto r = ws.swarm({"status", "--json"});
  auto doc = json_of(r);
  REQUIRE_MESSAGE(doc, r.err);
  std::map<std::string, Block> out;
  const cJSON* s = nullptr;
  cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(doc.get(), "sessions")) {
    const cJSON* base = cJSON_GetObjectItemCaseSensitive(s, "port_base");
    const cJSON* ports = cJSON_GetObjectItemCaseSensitive(s, "ports");
    if (cJSON_IsNumber(base) && cJSON_IsNumber(ports))
      out[cJSON_GetObjectItemCaseSensitive(s, "slot")->valuestring] = {static_cast<unsigned>(base->valuedouble),
                                                                        static_cast<unsigned>(ports->valuedouble)};
  }
  return out;
}

// The value of `export NAME=VALUE` in join --env's output ("" when absent).
std::string exported(const std::string& out, const std::string& name) {
  const std::string key = "export " + name + "=";
  auto at = out.find(key);
  if (at == std::string::npos) return {};
  at += key.size();
  return out.substr(at, out.find('\n', at) - at);
}

// The lease of the block, from `lease list --json` (empty when none held).
swarm::Json block_lease(const SwarmWorkspace& ws, const std::string& name) {
  auto doc = json_of(ws.swarm({"lease", "list", "--json"}));
  cJSON* item = nullptr;
  cJSON_ArrayForEach(item, cJSON_GetObjectItem(doc.get(), "leases")) {
    if (name == cJSON_GetObjectItem(item, "name")->valuestring) return swarm::Json::copy(item);
  }
  return {};
}

// `join --slot SLOT --ports K --env` asked again until it is granted (an
// expired block comes free within the TTL), within 15 s.
RunResult join_when_free(const SwarmWorkspace& ws, const std::string& slot, const std::string& task, const char* k) {
  RunResult taken;
  CHECK(eventually(
      [&] {
        taken = ws.swarm({"join", "--slot", slot, "--task", task, "--ports", k, "--env"});
        return taken.exit == 0;
      },
      15s));
  return taken;
}

// A second host's workspace on the first's NATS and hub, with `ports`.
RunResult up_second_host(SwarmWorkspace& a, SwarmWorkspace& b, const std::string& ports) {
  return b.swarm({"up", "--nats-url", a.server()->url(), "--hub", (a.root() / ".swarm/hub.git").string(), "--ports",
                  ports},
                 kHostB);
}

// A TCP socket listening on `address`:`port` for as long as this lives, as
// any other program of the host (another user's dev server) holds one.
struct Listener {
  int fd = -1;
  Listener(const char* address, unsigned port) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_port = htons(static_cast<std::uint16_t>(port));
    ::inet_pton(AF_INET, address, &at.sin_addr);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0);
    REQUIRE(::listen(fd, 1) == 0);
  }
  ~Listener() { ::close(fd); }
};

// doctor --json's finding `check` of `subject` (empty when there is none).
swarm::Json finding_of(const SwarmWorkspace& ws, const std::vector<std::string>& args, const std::string& check,
                       const std::string& subject) {
  std::vector<std::string> full = {"doctor", "--json"};
  full.insert(full.end(), args.begin(), args.end());
  auto doc = json_of(ws.swarm(full));
  cJSON* item = nullptr;
  cJSON_ArrayForEach(item, cJSON_GetObjectItem(doc.get(), "findings")) {
    if (text_of(item, "check") == check && text_of(item, "subject") == subject) return swarm::Json::copy(item);
  }
  return {};
}

}  // namespace

TEST_CASE("PortBlocks_TwentySlotsOnTwoHostsGetDisjointBlocks") {
  // 20 joins at once, 10 per host, of blocks of 3, 5, 7 and 10 ports: each gets a block inside the range, no two
  // share a port, each --env says what the record says; the range left too small for one more is exit 3 naming it.
  SwarmWorkspace a({.up_args = {"--ports", "21000-21199"}});
  SwarmWorkspace b({.up = false, .own_server = false});
  REQUIRE(up_second_host(a, b, "21000-21199").exit == 0);
  const unsigned sizes[] = {3, 5, 7, 10};
  std::vector<Process> joins;
  std::vector<std::pair<std::string, unsigned>> asked;
  for (int i = 0; i < 20; ++i) {
    const bool on_a = i % 2 == 0;
    const std::string slot = std::string(on_a ? "a" : "b") + std::to_string(i);
    const unsigned k = sizes[i % 4];
    asked.emplace_back(slot, k);
    joins.emplace_back((on_a ? a : b).command(
        {"join", "--slot", slot, "--task", "T-" + slot, "--ports", std::to_string(k), "--env"}, on_a ? kHostA : kHostB));
  }
  std::map<std::string, std::string> env_of;
  for (std::size_t i = 0; i < joins.size(); ++i) {
    auto r = joins[i].wait(120s);
    REQUIRE_MESSAGE(r.exit == 0, asked[i].first << ": " << r.err);
    env_of[asked[i].first] = r.out;
  }
  auto blocks = blocks_by_slot(a);
  REQUIRE(blocks.size() == 20);
  std::set<unsigned> used;
  for (const auto& [slot, k] : asked) {
    const Block got = blocks[slot];
    CHECK_MESSAGE(got.count == k, slot);
    CHECK(got.base >= 21000);
    CHECK(got.base + got.count - 1 <= 21199);
    for (unsigned p = got.base; p < got.base + got.count; ++p) CHECK_MESSAGE(used.insert(p).second, slot << " " << p);
    CHECK(exported(env_of[slot], "SWARM_PORT_BASE") == std::to_string(got.base));
    CHECK(exported(env_of[slot], "SWARM_PORTS") == std::to_string(k));
  }
  CHECK(used.size() == 5 * (3 + 5 + 7 + 10));  // 125 of the 200 ports
  // 75 ports are left, in holes; 76 never fit.
  auto too_big = b.swarm({"join", "--slot", "late", "--task", "T-late", "--ports", "76"}, kHostB);
  CHECK(too_big.exit == 3);
  CHECK(too_big.err.find("21000-21199") != std::string::npos);
  CHECK(b.swarm({"status", "--slot", "late"}, kHostB).exit == 4);  // nothing written
}

TEST_CASE("PortBlocks_ABlockOfAKilledAgentComesBackAfterExpiry") {
  // A session never renewed (its agent killed) keeps its block until the TTL passes, then another slot takes it.
  SwarmWorkspace ws({.up_args = {"--ttl", "2s", "--ports", "22000-22009"}});
  auto first = ws.swarm({"join", "--slot", "gone", "--task", "T-1", "--ports", "10", "--env"});
  REQUIRE_MESSAGE(first.exit == 0, first.err);
  CHECK(exported(first.out, "SWARM_PORT_BASE") == "22000");
  auto refused = ws.swarm({"join", "--slot", "next", "--task", "T-2", "--ports", "4"});
  CHECK(refused.exit == 3);
  CHECK(refused.err.find("22000-22009") != std::string::npos);
  CHECK(refused.err.find("slot gone") != std::string::npos);
  const RunResult taken = join_when_free(ws, "next", "T-2", "4");
  CHECK_MESSAGE(exported(taken.out, "SWARM_PORT_BASE") == "22000", taken.err);
}

TEST_CASE("PortBlocks_RenewedWithTheSessionKeptByRejoinReleasedByCloseAndEvict") {
  SwarmWorkspace ws({.up_args = {"--ports", "23000-23099"}});
  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-1", "--ports", "8"}).exit == 0);
  auto lease = block_lease(ws, "ports.23000-23007");
  REQUIRE(lease);
  CHECK(field(lease, "slot") == "a");
  CHECK(number(lease, "ttl_ms") == 300000);  // the session's TTL
  const double token = number(lease, "token");
  const double revision = number(lease, "revision");
  // renew and commit renew the block in the session's round trip: same token, a new revision
  REQUIRE(ws.swarm({"renew", "--slot", "a"}).exit == 0);
  auto renewed = block_lease(ws, "ports.23000-23007");
  CHECK(number(renewed, "token") == token);
  CHECK(number(renewed, "revision") > revision);
  // a --force rejoin of the same size keeps the block and its token
  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-1", "--ports", "8", "--force"}).exit == 0);
  CHECK(number(block_lease(ws, "ports.23000-23007"), "token") == token);
  // another size: a new block, the old one let go
  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-1", "--ports", "4", "--force"}).exit == 0);
  CHECK_FALSE(block_lease(ws, "ports.23000-23007"));
  CHECK(blocks_by_slot(ws)["a"].count == 4);
  const std::string name_a = "ports." + std::to_string(blocks_by_slot(ws)["a"].base) + "-" +
                             std::to_string(blocks_by_slot(ws)["a"].base + 3);
  CHECK(block_lease(ws, name_a));
  REQUIRE(ws.swarm({"close", "--slot", "a", "--result", "fail"}).exit == 0);
  CHECK_FALSE(block_lease(ws, name_a));
  REQUIRE(ws.swarm({"join", "--slot", "b", "--task", "T-2", "--ports", "2"}).exit == 0);
  CHECK(block_lease(ws, "ports.23000-23001"));
  REQUIRE(ws.swarm({"evict", "--slot", "b"}).exit == 0);
  CHECK_FALSE(block_lease(ws, "ports.23000-23001"));
}

TEST_CASE("PortBlocks_BadInputChangesNothing") {
  // --ports without a range is exit 2, bad ranges and sizes are exit 2 naming them, before anything is written.
  SwarmWorkspace ws;
  auto no_range = ws.swarm({"join", "--slot", "a", "--task", "T-1", "--ports", "3"});
  CHECK(no_range.exit == 2);
  CHECK(no_range.err.find("up --ports") != std::string::npos);
  CHECK(ws.swarm({"status", "--slot", "a"}).exit == 4);
  for (const char* bad : {"100", "9-1", "0-10", "1-70000", "a-b", "-5", "10-"}) {
    auto r = ws.swarm({"up", "--ports", bad});
    CHECK_MESSAGE(r.exit == 2, bad);
    CHECK_MESSAGE(r.err.find(std::string("'") + bad + "'") != std::string::npos, bad << ": " << r.err);
  }
  CHECK(ws.swarm({"join", "--slot", "a", "--task", "T-1", "--ports", "0"}).exit == 2);
  CHECK(ws.swarm({"join", "--slot", "a", "--task", "T-1", "--ports", "1025"}).exit == 2);
  REQUIRE(ws.swarm({"up", "--ports", "24000-24001"}).exit == 0);
  auto small = ws.swarm({"join", "--slot", "a", "--task", "T-1", "--ports", "3"});
  CHECK(small.exit == 3);
  CHECK(small.err.find("24000-24001") != std::string::npos);
  CHECK(ws.swarm({"status", "--slot", "a"}).exit == 4);
  CHECK_FALSE(std::filesystem::exists(ws.worktree("a")));
  // the range is kept: up again without --ports keeps it
  REQUIRE(ws.swarm({"up"}).exit == 0);
  CHECK(ws.swarm({"join", "--slot", "a", "--task", "T-1", "--ports", "2"}).exit == 0);
}

TEST_CASE("PortBlocks_AnExpiredBlockIsNeverRenewed") {
  // An agent frozen past the TTL: another slot takes an overlapping block (of another size, so another lease);
  // the frozen agent's renewal must not bring its old block back to life over it.
  SwarmWorkspace ws({.up_args = {"--ttl", "2s", "--ports", "25000-25009"}});
  REQUIRE(ws.swarm({"join", "--slot", "frozen", "--task", "T-1", "--ports", "10"}).exit == 0);
  const RunResult taken = join_when_free(ws, "next", "T-2", "5");
  REQUIRE(taken.exit == 0);
  CHECK(exported(taken.out, "SWARM_PORT_BASE") == "25000");
  // Its session may be gone (the server dropped it at the TTL), or still there to renew (servers drop expired
  // records when they get to it): either way its block stays given up, and a renewal says so.
  auto renew = ws.swarm({"renew", "--slot", "frozen"});
  if (renew.exit == 0) CHECK_MESSAGE(renew.err.find("port block 25000-25009") != std::string::npos, renew.err);
  auto old = block_lease(ws, "ports.25000-25009");
  if (old) CHECK(field(old, "state") != "held");
  CHECK(field(block_lease(ws, "ports.25000-25004"), "state") == "held");
}

TEST_CASE("PortBlocks_AJoinKilledBetweenItsGrantAndItsCheckLeavesNoOverlap") {
  // b's join reads the blocks (none), stops; a takes 26000-26004; b goes on, grants 26000-26002 over a's ports
  // and is SIGKILLed before it checks. The stray grant names no session: b's next join neither keeps it nor
  // overlaps a, and doctor --fix leaves a's live block alone.
  SwarmWorkspace ws({.up_args = {"--ports", "26000-26019"}});
  auto env = kHostA;
  env["SWARM_TEST_JOIN_STOP"] = "ports-listed,ports-granted";
  Process b(ws.command({"join", "--slot", "b", "--task", "T-b", "--ports", "3"}, env));
  REQUIRE(eventually([&] { return process_state(b.pid()) == 'T'; }, 20s));
  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-a", "--ports", "5"}).exit == 0);
  REQUIRE(blocks_by_slot(ws)["a"].base == 26000);
  // b goes on from what it read before a's grant: it grants 26000-26002, and stops again before its check.
  b.signal(SIGCONT);
  REQUIRE(eventually([&] { return block_lease(ws, "ports.26000-26002") && process_state(b.pid()) == 'T'; }, 20s));
  b.signal(SIGKILL);
  b.wait(10s);
  auto again = ws.swarm({"join", "--slot", "b", "--task", "T-b", "--ports", "3", "--env"});
  REQUIRE_MESSAGE(again.exit == 0, again.err);
  const auto blocks = blocks_by_slot(ws);
  const Block a = blocks.at("a"), bb = blocks.at("b");
  CHECK((bb.base > a.base + a.count - 1 || bb.base + bb.count - 1 < a.base));
  REQUIRE(ws.swarm({"doctor", "--fix"}).exit != 1);
  CHECK(field(block_lease(ws, "ports.26000-26004"), "state") == "held");
  CHECK(field(block_lease(ws, "ports.26000-26004"), "slot") == "a");
}

TEST_CASE("PortBlocks_AKeptBlockIsRenewedForTheNewSession") {
  // A --force rejoin of the same size keeps the block and renews it then: it does not expire before the session.
  SwarmWorkspace ws({.up_args = {"--ttl", "3s", "--ports", "27000-27009"}});
  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-1", "--ports", "5"}).exit == 0);
  std::this_thread::sleep_for(2s);
  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-1", "--ports", "5", "--force"}).exit == 0);
  auto lease = block_lease(ws, "ports.27000-27004");
  REQUIRE(lease);
  CHECK(number(lease, "age_seconds") < 1.5);
  // and doctor has nothing to say of it: a live session names it
  auto doctor = ws.swarm({"doctor"});
  CHECK(doctor.out.find("ports.27000-27004") == std::string::npos);
}

TEST_CASE("PortBlocks_APortAProgramOfTheHostBoundIsNeverHandedOut") {
  // Ports another program listens on (on 127.0.0.1, on every address) make a block no use: the next is taken,
  // and a range left with none is exit 3 naming the ports in use.
  SwarmWorkspace ws({.up_args = {"--ports", "28000-28009"}});
  Listener loopback("127.0.0.1", 28001);
  Listener wildcard("0.0.0.0", 28006);
  auto a = ws.swarm({"join", "--slot", "a", "--task", "T-1", "--ports", "3", "--env"});
  REQUIRE_MESSAGE(a.exit == 0, a.err);
  CHECK(exported(a.out, "SWARM_PORT_BASE") == "28002");
  auto b = ws.swarm({"join", "--slot", "b", "--task", "T-2", "--ports", "3", "--env"});
  REQUIRE_MESSAGE(b.exit == 0, b.err);
  CHECK(exported(b.out, "SWARM_PORT_BASE") == "28007");
  // Two ports in a row are free of blocks twice (28000-28001, 28005-28006), each with one in use.
  auto c = ws.swarm({"join", "--slot", "c", "--task", "T-3", "--ports", "2"});
  CHECK(c.exit == 3);
  CHECK(c.err.find("28000-28009") != std::string::npos);
  CHECK(c.err.find("in use on this host") != std::string::npos);
  CHECK(c.err.find("28001, 28006") != std::string::npos);
  CHECK(ws.swarm({"status", "--slot", "c"}).exit == 4);  // refused before the slot was taken
}

TEST_CASE("PortBlocks_DoctorClearsACorruptOrForeignBlockNoLiveSessionOwns") {
  // A corrupt ports.* record, and another host's block whose join was killed before its session was written,
  // each keep ports from every slot: doctor reports both as problems and --fix clears them; a live session's
  // block (of the other host too) stays.
  SwarmWorkspace a({.up_args = {"--ttl", "12s", "--ports", "29000-29009"}});
  SwarmWorkspace b({.up = false});
  REQUIRE(up_second_host(a, b, "29000-29009").exit == 0);
  REQUIRE(b.swarm({"join", "--slot", "h", "--task", "T-h", "--ports", "5"}, kHostB).exit == 0);
  REQUIRE(blocks_by_slot(a)["h"].base == 29000);

  {
    RawNats raw(a.server()->url());
    REQUIRE(raw.publish("$KV." + a.names().leases + ".ports.29005-29009", "not a record"));
  }
  CHECK(a.swarm({"join", "--slot", "x", "--task", "T-x", "--ports", "5"}).exit == 3);
  CHECK(field(finding_of(a, {}, "corrupt_lease", "ports.29005-29009"), "severity") == "problem");
  a.swarm({"doctor", "--fix"});
  REQUIRE(a.swarm({"join", "--slot", "x", "--task", "T-x", "--ports", "5"}).exit == 0);
  REQUIRE(a.swarm({"close", "--slot", "x", "--result", "fail"}).exit == 0);

  // Host B's join of g takes 29005-29009 and is killed before it writes its session.
  REQUIRE(b.swarm({"renew", "--slot", "h"}, kHostB).exit == 0);
  auto env = kHostB;
  env["SWARM_TEST_JOIN_STOP"] = "ports-granted";
  Process killed(b.command({"join", "--slot", "g", "--task", "T-g", "--ports", "5"}, env));
  REQUIRE(eventually([&] { return process_state(killed.pid()) == 'T'; }, 20s));
  killed.signal(SIGKILL);
  killed.wait(10s);
  CHECK(a.swarm({"join", "--slot", "y", "--task", "T-y", "--ports", "5"}).exit == 3);
  // A join under way is left alone a moment (a third of the TTL); then it is a problem.
  CHECK(eventually(
      [&] { return field(finding_of(a, {}, "orphan_port_block", "ports.29005-29009"), "severity") == "problem"; },
      20s));
  REQUIRE(b.swarm({"renew", "--slot", "h"}, kHostB).exit == 0);
  auto fixed = finding_of(a, {"--fix"}, "orphan_port_block", "ports.29005-29009");
  CHECK(cJSON_IsTrue(cJSON_GetObjectItem(fixed.get(), "fixed")));
  CHECK(field(block_lease(a, "ports.29000-29004"), "state") == "held");
  auto y = a.swarm({"join", "--slot", "y", "--task", "T-y", "--ports", "5", "--env"});
  REQUIRE_MESSAGE(y.exit == 0, y.err);
  CHECK(exported(y.out, "SWARM_PORT_BASE") == "29005");
  CHECK(blocks_by_slot(a)["h"].base == 29000);
}
