// Holds through the real binary (swarm hold, holds; commit, land, doctor,
// serve): of 20 holds of overlapping paths taken at once exactly one wins;
// a conflicting hold names the holder and takes nothing; holds live and die
// with their session (renewed by renew and by swarm run, released by close,
// evict, a replacing join, expiry); commit warns or refuses under the
// workspace's policy; land refuses unless --force; doctor releases holds of
// sessions that are gone; records planted by others are data.
#include <doctest/doctest.h>

#include <cstdlib>
#include <set>
#include <thread>

#include "e2e/serve_fixture.h"
#include "e2e/swarm_fixture.h"
#include "kv/bucket.h"
#include "kv/connection.h"
#include "support/eventually.h"
#include "support/json_fields.h"
#include "swarm/base/text.h"

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct Listed {
  std::string name, slot, kind;
  std::vector<std::string> patterns;
  double token = 0;
};

// `swarm holds --json`, as rows.
std::vector<Listed> holds_of(const SwarmWorkspace& ws) {
  auto r = ws.swarm({"holds", "--json"});
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  auto doc = json_of(r);
  REQUIRE(doc);
  CHECK(field(doc, "schema") == "swarm.holds.v1");
  std::vector<Listed> out;
  const cJSON* item = nullptr;
  cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(doc.get(), "holds")) {
    Listed l{text_of(item, "name"), text_of(item, "slot"), text_of(item, "kind"), {}, number_of(item, "token")};
    const cJSON* p = nullptr;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(item, "patterns")) l.patterns.push_back(p->valuestring);
    out.push_back(std::move(l));
  }
  return out;
}

std::size_t holds_of_slot(const SwarmWorkspace& ws, const std::string& slot) {
  std::size_t n = 0;
  for (const auto& h : holds_of(ws)) n += h.slot == slot ? 1 : 0;
  return n;
}

void join(const SwarmWorkspace& ws, const std::string& slot) {
  auto r = ws.swarm({"join", "--slot", slot, "--task", "T-" + slot});
  REQUIRE_MESSAGE(r.exit == 0, r.err);
}

// Writes `path` in the slot's worktree (folders made).
void edit(const SwarmWorkspace& ws, const std::string& slot, const std::string& path, const std::string& text) {
  fs::create_directories((ws.worktree(slot) / path).parent_path());
  write_file(ws.worktree(slot) / path, text);
}

std::string tip(const SwarmWorkspace& ws, const std::string& branch) {
  return ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "rev-parse", branch}).out;
}

bool has_control_bytes(const std::string& text) {
  for (unsigned char c : text)
    if ((c < 0x20 && c != '\n') || c == 0x7f) return true;
  return false;
}

}  // namespace

TEST_CASE("Hold_TwentyAtOnceOfOverlappingPathsHaveExactlyOneWinner") {
  // 20 slots hold patterns that all share src/api/x.go (src/**, src/api/**, src/*/x.go, src/api/x.go), each
  // by its own process started at once: exactly one exits 0, the 19 others exit 3 naming a holder, and only
  // the winner's hold is left. Three rounds, each after the winner lets go.
  SwarmWorkspace ws;
  constexpr int kSlots = 20;
  for (int i = 0; i < kSlots; ++i) join(ws, "s" + std::to_string(i));
  const std::vector<std::string> patterns = {"src/**", "src/api/**", "src/*/x.go", "src/api/x.go"};
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    std::vector<Process> holds;
    for (int i = 0; i < kSlots; ++i)
      holds.emplace_back(ws.command({"hold", "--slot", "s" + std::to_string(i), patterns[(i + round) % 4]}));
    int won = 0;
    std::string winner;
    for (int i = 0; i < kSlots; ++i) {
      auto r = holds[static_cast<std::size_t>(i)].wait(60s);
      CHECK_MESSAGE((r.exit == 0 || r.exit == 3), r.err);
      if (r.exit == 0) {
        ++won;
        winner = "s" + std::to_string(i);
      } else {
        CHECK(r.err.find("holds ") != std::string::npos);  // names who holds what
      }
    }
    CHECK(won == 1);
    auto left = holds_of(ws);
    REQUIRE(left.size() == 1);
    CHECK(left[0].slot == winner);
    REQUIRE(ws.swarm({"hold", "--slot", winner, "--release", "--all"}).exit == 0);
    CHECK(holds_of(ws).empty());
  }
}

TEST_CASE("Hold_AConflictNamesTheHolderAndTakesNothing") {
  // exclusive against any overlap, shared against exclusive only, a slot's own holds never against each
  // other; the refusal names slot, host and patterns and leaves no lease of the refused slot behind.
  SwarmWorkspace ws;
  join(ws, "a");
  join(ws, "b");
  auto held = ws.swarm({"hold", "--slot", "a", "src/api/**", "--reason", "new API", "--json"});
  REQUIRE_MESSAGE(held.exit == 0, held.err);
  auto doc = json_of(held);
  CHECK(field(doc, "schema") == "swarm.hold.v1");
  CHECK(field(doc, "name") == "hold.a.1");
  CHECK(field(doc, "kind") == "exclusive");
  CHECK(number(doc, "token") > 0);
  auto refused = ws.swarm({"hold", "--slot", "b", "src/**"});
  CHECK(refused.exit == 3);
  CHECK(refused.err.find("slot a (host host-a) holds src/api/** exclusively") != std::string::npos);
  CHECK(refused.err.find("new API") != std::string::npos);
  CHECK(ws.swarm({"hold", "--slot", "b", "src/api/x.go", "--shared"}).exit == 3);
  CHECK(ws.swarm({"lease", "list"}).out.find("hold.b.") == std::string::npos);
  // Disjoint paths, shared beside shared, and a slot's own overlapping holds are all held.
  CHECK(ws.swarm({"hold", "--slot", "b", "src/web/**", "docs/*.md"}).exit == 0);
  CHECK(ws.swarm({"hold", "--slot", "a", "README.md", "--shared"}).exit == 0);
  CHECK(ws.swarm({"hold", "--slot", "b", "README.md", "--shared"}).exit == 0);
  CHECK(ws.swarm({"hold", "--slot", "a", "src/api/v2/**"}).exit == 0);
  CHECK(ws.swarm({"hold", "--slot", "b", "README.md"}).exit == 3);  // exclusive beside a's shared
  auto list = holds_of(ws);
  CHECK(list.size() == 5);
  auto text = ws.swarm({"holds"});
  CHECK(text.out.find("SLOT") == 0);
  CHECK(text.out.find("src/web/**, docs/*.md") != std::string::npos);
  // The session's record names its holds (status --json).
  auto status = ws.swarm({"status", "--json", "--slot", "a"});
  CHECK(status.out.find("\"holds\":[\"hold.a.1\",\"hold.a.2\",\"hold.a.3\"]") != std::string::npos);
}

TEST_CASE("Hold_ExpiresWithItsSessionAndLivesWhileItIsRenewed") {
  // TTL 2s: renewed by `renew` every 0.5s for 4s, the hold keeps its token and keeps b out; once renewals
  // stop it is gone within the TTL and its margin, and b takes the paths.
  SwarmWorkspace ws({.up_args = {"--ttl", "2s"}});
  join(ws, "a");
  join(ws, "b");
  REQUIRE(ws.swarm({"hold", "--slot", "a", "src/**"}).exit == 0);
  const double token = holds_of(ws).at(0).token;
  for (int i = 0; i < 8; ++i) {
    std::this_thread::sleep_for(500ms);
    REQUIRE(ws.swarm({"renew", "--slot", "a"}).exit == 0);
    REQUIRE(ws.swarm({"renew", "--slot", "b"}).exit == 0);
  }
  auto still = holds_of(ws);
  REQUIRE(still.size() == 1);
  CHECK(still[0].token == token);
  CHECK(ws.swarm({"hold", "--slot", "b", "src/x.go"}).exit == 3);
  const auto stopped = std::chrono::steady_clock::now();
  // b goes on renewing; a does not.
  CHECK(eventually([&] {
    return ws.swarm({"renew", "--slot", "b"}).exit == 0 && ws.swarm({"hold", "--slot", "b", "src/x.go"}).exit == 0;
  }, 10s));
  CHECK(std::chrono::steady_clock::now() - stopped < 6s);
  CHECK(holds_of_slot(ws, "a") == 0);
}

TEST_CASE("Hold_LetGoByReleaseCloseEvictAndAReplacingJoin") {
  // --release of some patterns narrows a hold (its token kept), of the rest releases it; a pattern not held
  // is exit 4 and lets go of nothing; close, evict and join --force release the session's holds.
  SwarmWorkspace ws;
  join(ws, "a");
  REQUIRE(ws.swarm({"hold", "--slot", "a", "src/**", "docs/**"}).exit == 0);
  REQUIRE(ws.swarm({"hold", "--slot", "a", "README.md"}).exit == 0);
  const double token = holds_of(ws).at(0).token;
  auto missing = ws.swarm({"hold", "--slot", "a", "--release", "lib/**", "docs/**"});
  CHECK(missing.exit == 4);
  CHECK(missing.err.find("'lib/**'") != std::string::npos);
  CHECK(holds_of(ws).size() == 2);
  auto narrowed = ws.swarm({"hold", "--slot", "a", "--release", "docs/**", "--json"});
  REQUIRE_MESSAGE(narrowed.exit == 0, narrowed.err);
  CHECK(narrowed.out.find("\"narrowed\":[\"hold.a.1\"]") != std::string::npos);
  auto after = holds_of(ws);
  REQUIRE(after.size() == 2);
  CHECK(after[0].patterns == std::vector<std::string>{"src/**"});
  CHECK(after[0].token == token);
  REQUIRE(ws.swarm({"hold", "--slot", "a", "--release", "README.md"}).exit == 0);
  CHECK(holds_of(ws).size() == 1);
  CHECK(ws.swarm({"status", "--json", "--slot", "a"}).out.find("\"holds\":[\"hold.a.1\"]") != std::string::npos);
  REQUIRE(ws.swarm({"close", "--slot", "a", "--result", "fail"}).exit == 0);
  CHECK(holds_of(ws).empty());
  join(ws, "b");
  REQUIRE(ws.swarm({"hold", "--slot", "b", "src/**"}).exit == 0);
  REQUIRE(ws.swarm({"evict", "--slot", "b"}).exit == 0);
  CHECK(holds_of(ws).empty());
  join(ws, "c");
  REQUIRE(ws.swarm({"hold", "--slot", "c", "src/**"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "c", "--task", "T-c2", "--force"}).exit == 0);
  CHECK(holds_of(ws).empty());
}

TEST_CASE("Hold_OfAnotherHostsSlotOrOfAReplacedSessionTakesNothing") {
  // another host's slot is exit 5 (hold and release); the token of a session a join --force replaced is exit 3;
  // neither leaves a hold lease behind.
  SwarmWorkspace ws;
  auto first = ws.swarm({"join", "--slot", "a", "--task", "T-1", "--json"});
  REQUIRE(first.exit == 0);
  const std::string old_token = std::to_string(static_cast<long long>(number(json_of(first), "session_token")));
  auto foreign = ws.swarm({"hold", "--slot", "a", "src/**"}, kHostB);
  CHECK(foreign.exit == 5);
  CHECK(foreign.err.find("host-a") != std::string::npos);
  CHECK(ws.swarm({"hold", "--slot", "a", "--release", "--all"}, kHostB).exit == 5);
  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-2", "--force"}).exit == 0);
  auto replaced = ws.swarm({"hold", "--slot", "a", "--session", old_token, "src/**"});
  CHECK(replaced.exit == 3);
  CHECK(replaced.err.find("T-2") != std::string::npos);
  CHECK(ws.swarm({"lease", "list"}).out.find("hold.") == std::string::npos);
  CHECK(holds_of(ws).empty());
}

TEST_CASE("Hold_BadInputIsExit2BeforeAnyIo") {
  // no workspace at all: each is refused by its parse, naming the bad value.
  TempDir nowhere;
  auto in_nowhere = [&](const std::vector<std::string>& args) {
    Command c{{swarm_binary()}, kHostA, nowhere.path()};
    c.args.insert(c.args.end(), args.begin(), args.end());
    c.env["SWARM_WORKSPACE"] = "";
    return run(c);
  };
  for (const auto& [args, named] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"hold", "--slot", "a", "/etc/passwd"}, "/etc/passwd"},
           {{"hold", "--slot", "a", "src/../x"}, "src/../x"},
           {{"hold", "--slot", "a", ""}, "bad pattern ''"},
           {{"hold", "--slot", "a"}, "no pattern"},
           {{"hold", "--slot", "a", "--release"}, "--release"},
           {{"hold", "--slot", "a", "--all", "x"}, "--all"},
           {{"hold", "--slot", "a", "--release", "--shared", "x"}, "--shared"},
           {{"hold", "--slot", "a", "x", "--reason", "a\x1b[2Jb"}, "--reason"},
           {{"hold", "--slot", "a b", "x"}, "a b"},
           {{"up", "--holds", "maybe"}, "maybe"}}) {
    CAPTURE(args);
    auto r = in_nowhere(args);
    CHECK(r.exit == 2);
    CHECK(r.err.find(named) != std::string::npos);
    CHECK_FALSE(has_control_bytes(r.err));
  }
  CHECK(fs::is_empty(nowhere.path()));
}

TEST_CASE("Commit_WarnsOfOrRefusesPathsAnotherSlotHolds") {
  // warn (the default): the commit stands, stderr names the path and the holder, hold.conflict is journaled;
  // refuse (up --holds refuse): exit 3, the branch, index and files as they were; a shared hold or the
  // slot's own hold never counts; paths nobody holds commit quietly.
  SwarmWorkspace ws;
  join(ws, "a");
  join(ws, "b");
  REQUIRE(ws.swarm({"hold", "--slot", "a", "src/api/**"}).exit == 0);
  REQUIRE(ws.swarm({"hold", "--slot", "a", "docs/**", "--shared"}).exit == 0);
  REQUIRE(ws.swarm({"hold", "--slot", "b", "src/web/**"}).exit == 0);
  edit(ws, "b", "src/web/page.ts", "page\n");
  edit(ws, "b", "docs/guide.md", "guide\n");
  auto quiet = ws.swarm({"commit", "--slot", "b", "-m", "web"});
  REQUIRE_MESSAGE(quiet.exit == 0, quiet.err);
  CHECK(quiet.err.find("hold") == std::string::npos);
  edit(ws, "b", "src/api/v2.go", "v2\n");
  auto warned = ws.swarm({"commit", "--slot", "b", "-m", "api v2", "--json"});
  REQUIRE_MESSAGE(warned.exit == 0, warned.err);
  CHECK(warned.err.find("src/api/v2.go (held by slot a on host host-a)") != std::string::npos);
  auto log = ws.swarm({"log", "--kind", "hold.conflict", "--json"});
  CHECK(log.out.find("\"act\":\"commit\",\"policy\":\"warn\",\"paths\":[\"src/api/v2.go\"]") != std::string::npos);
  CHECK(log.out.find("\"hold\":\"hold.a.1\"") != std::string::npos);
  REQUIRE(ws.swarm({"up", "--holds", "refuse"}).exit == 0);
  edit(ws, "b", "src/api/v2.go", "v2, changed\n");
  edit(ws, "b", "notes.txt", "notes\n");
  const std::string before = ws.git({"rev-parse", "HEAD"}, ws.worktree("b")).out;
  const std::string status_before = ws.git({"status", "--porcelain"}, ws.worktree("b")).out;
  auto refused = ws.swarm({"commit", "--slot", "b", "-m", "api again"});
  CHECK(refused.exit == 3);
  CHECK(refused.err.find("nothing was committed") != std::string::npos);
  CHECK(refused.err.find("src/api/v2.go") != std::string::npos);
  CHECK(ws.git({"rev-parse", "HEAD"}, ws.worktree("b")).out == before);
  CHECK(ws.git({"status", "--porcelain"}, ws.worktree("b")).out == status_before);
  CHECK(read_file(ws.worktree("b") / "src/api/v2.go") == "v2, changed\n");
  CHECK(ws.swarm({"log", "--kind", "hold.conflict", "--json"}).out.find("\"policy\":\"refuse\"") != std::string::npos);
  // Only the paths nobody holds: committed under the same policy.
  auto other = ws.swarm({"commit", "--slot", "b", "-m", "notes", (ws.worktree("b") / "notes.txt").string()});
  CHECK_MESSAGE(other.exit == 0, other.err);
  // Once a lets go, the refused change commits.
  REQUIRE(ws.swarm({"hold", "--slot", "a", "--release", "src/api/**"}).exit == 0);
  CHECK(ws.swarm({"commit", "--slot", "b", "-m", "api again"}).exit == 0);
}

TEST_CASE("Land_RefusesABranchTouchingAnotherSlotsHoldUnlessForced") {
  // land --slot and land --ready refuse (reason hold, the paths) a branch that changes what another live slot
  // holds exclusively, and journal land.refused and hold.conflict; a batch lands its other slots; --force lands
  // it (journaled forced); once the hold ends the plain land goes through.
  SwarmWorkspace ws;
  join(ws, "owner");
  REQUIRE(ws.swarm({"hold", "--slot", "owner", "src/api/**"}).exit == 0);
  for (const std::string slot : {"b", "c"}) {
    join(ws, slot);
    edit(ws, slot, slot == "b" ? "src/api/b.go" : "src/web/c.ts", slot + "\n");
    REQUIRE(ws.swarm({"commit", "--slot", slot, "-m", slot}).exit == 0);
    REQUIRE(ws.swarm({"close", "--slot", slot, "--result", "success"}).exit == 0);
  }
  const std::string main_before = tip(ws, "main");
  auto one = ws.swarm({"land", "--slot", "b", "--json"});
  CHECK(one.exit == 3);
  CHECK(one.err.find("src/api/b.go (held by slot owner") != std::string::npos);
  CHECK(tip(ws, "main") == main_before);
  auto ready = ws.swarm({"land", "--ready", "--batch", "4", "--json"});
  CHECK(ready.exit == 3);
  CHECK(ready.out.find("\"slot\":\"b\"") != std::string::npos);
  CHECK(ready.out.find("\"reason\":\"hold\"") != std::string::npos);
  CHECK(ready.out.find("\"slot\":\"c\",\"onto\":\"main\"") != std::string::npos);
  CHECK(ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "show", "main:src/web/c.ts"}).exit == 0);
  CHECK(ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "show", "main:src/api/b.go"}).exit != 0);
  auto refusals = ws.swarm({"log", "--kind", "land.refused", "--json"});
  CHECK(refusals.out.find("\"reason\":\"hold\",\"paths\":[\"src/api/b.go\"]") != std::string::npos);
  CHECK(ws.swarm({"log", "--kind", "hold.conflict", "--json"}).out.find("\"act\":\"land\",\"policy\":\"refuse\"") !=
        std::string::npos);
  SUBCASE("forced") {
    auto forced = ws.swarm({"land", "--slot", "b", "--force", "--json"});
    REQUIRE_MESSAGE(forced.exit == 0, forced.err);
    CHECK(forced.out.find("\"forced\":true") != std::string::npos);
    CHECK(ws.swarm({"log", "--kind", "hold.conflict", "--json"}).out.find("\"policy\":\"forced\"") !=
          std::string::npos);
  }
  SUBCASE("after the hold") {
    REQUIRE(ws.swarm({"close", "--slot", "owner", "--result", "fail"}).exit == 0);
    auto landed = ws.swarm({"land", "--slot", "b"});
    CHECK_MESSAGE(landed.exit == 0, landed.err);
  }
}

TEST_CASE("Hold_UnderSwarmRunLivesWithTheRunAndGoesWhenItsSessionIsLost") {
  // TTL 2s: the agent holds src/** and thinks for 5s without renewing; its run keeps the hold (same token)
  // and b is kept out; an operator's evict loses the session: the agent is stopped and the hold is gone.
  SwarmWorkspace ws({.up_args = {"--ttl", "2s"}});
  auto held = ws.root() / "held";
  Process run(ws.command({"run", "--slot", "a", "--task", "T-a", "--", "sh", "-c",
                          "swarm hold 'src/**' && touch " + held.string() + "; sleep 60"},
                         [] {
                           auto env = kHostA;
                           env["PATH"] = fs::path(swarm_binary()).parent_path().string() + ":" + getenv("PATH");
                           return env;
                         }()));
  REQUIRE(eventually([&] { return fs::exists(held); }, 20s));
  const double token = holds_of(ws).at(0).token;
  std::this_thread::sleep_for(5s);
  auto kept = holds_of(ws);
  REQUIRE(kept.size() == 1);
  CHECK(kept[0].slot == "a");
  CHECK(kept[0].token == token);
  join(ws, "b");
  CHECK(ws.swarm({"hold", "--slot", "b", "src/b.go"}).exit == 3);
  REQUIRE(ws.swarm({"evict", "--slot", "a"}).exit == 0);
  auto r = run.wait(20s);
  CHECK(r.exit == 3);
  CHECK(holds_of(ws).empty());
  CHECK(ws.swarm({"hold", "--slot", "b", "src/b.go"}).exit == 0);
}

TEST_CASE("Doctor_ReleasesHoldsWhoseSessionIsGone") {
  // a session record removed behind swarm's back (its holds not released): doctor reports the hold as a
  // problem naming the fix; --fix releases it (journaled) and b may hold the paths; a live session's hold is
  // never reported.
  SwarmWorkspace ws;
  join(ws, "a");
  join(ws, "live");
  REQUIRE(ws.swarm({"hold", "--slot", "a", "src/**"}).exit == 0);
  REQUIRE(ws.swarm({"hold", "--slot", "live", "docs/**"}).exit == 0);
  CHECK(ws.swarm({"doctor"}).out.find("orphan_hold") == std::string::npos);
  {
    auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
    auto sessions = kv::Bucket::open(connection, ws.names().sessions);
    auto entry = sessions.get("a");
    REQUIRE(entry);
    sessions.erase("a", entry->revision);
  }
  auto report = ws.swarm({"doctor"});
  CHECK(report.exit == 8);
  CHECK(report.out.find("[orphan_hold] hold hold.a.1 of slot a (host host-a) outlived its session") !=
        std::string::npos);
  auto fixed = ws.swarm({"doctor", "--fix"});
  CHECK(fixed.out.find("released lease hold.a.1") != std::string::npos);
  CHECK(holds_of_slot(ws, "a") == 0);
  CHECK(holds_of_slot(ws, "live") == 1);
  join(ws, "b");
  CHECK(ws.swarm({"hold", "--slot", "b", "src/x"}).exit == 0);
}

TEST_CASE("Hold_PlantedRecordsAreData") {
  // a hold record planted by another client with control bytes in its slot, patterns and reason is shown
  // escaped by holds (text and JSON); a corrupt one is listed as corrupt and keeps out only its own slot's
  // exclusive holds (its key names it) until doctor --fix removes it: another slot's hold it never blocks.
  SwarmWorkspace ws;
  join(ws, "b");
  {
    auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
    auto leases = kv::Bucket::open(connection, ws.names().leases);
    leases.create("hold.evil.1", R"({"name":"hold.evil.1","holder":"x","host":"h\u001b[2J","ttl_ms":600000,)"
                                 R"("slot":"evil","patterns":["lib/\u001b]0;pwned\u0007**"],"kind":"shared",)"
                                 R"("reason":"r\r\u001b[31m"})");
    leases.create("hold.bad.1", R"({"name":"hold.bad.1","holder":"x"})");
  }
  auto text = ws.swarm({"holds"});
  REQUIRE(text.exit == 0);
  CHECK_FALSE(has_control_bytes(text.out));
  CHECK(text.out.find("\\x1b]0;pwned") != std::string::npos);
  CHECK(text.out.find("corrupt") != std::string::npos);
  auto json = ws.swarm({"holds", "--json"});
  CHECK(swarm::is_valid_utf8(json.out));
  CHECK(json_of(json));
  CHECK(ws.swarm({"hold", "--slot", "b", "src/**"}).exit == 0);  // another slot's corrupt record is no obstacle
  join(ws, "bad");
  auto refused = ws.swarm({"hold", "--slot", "bad", "docs/**"});
  CHECK(refused.exit == 3);
  CHECK(refused.err.find("corrupt hold record hold.bad.1") != std::string::npos);
  CHECK_FALSE(has_control_bytes(refused.err));
  CHECK(ws.swarm({"hold", "--slot", "bad", "docs/**", "--shared"}).exit == 0);  // it keeps out only exclusive ones
  REQUIRE(ws.swarm({"doctor", "--fix"}).exit == 0);
  CHECK(ws.swarm({"hold", "--slot", "bad", "docs/**"}).exit == 0);  // its own shared hold is no conflict
}

TEST_CASE("Serve_ShowsHoldsInApiMetricsAndPage") {
  // /api/holds is holds --json's document; /metrics has swarm_holds{kind} (0 for a kind with none); a hold
  // taken after start arrives live.
  SwarmWorkspace ws;
  join(ws, "a");
  REQUIRE(ws.swarm({"hold", "--slot", "a", "src/**", "--reason", "api"}).exit == 0);
  Served served(ws);
  CHECK(eventually_body(served, "/metrics", [](const std::string& m) {
    return sample(m, "swarm_holds{kind=\"exclusive\"}") == 1 && sample(m, "swarm_holds{kind=\"shared\"}") == 0;
  }));
  auto api = swarm::Json::parse(served.body("/api/holds"));
  REQUIRE(api);
  CHECK(text_of(api.get(), "schema") == "swarm.holds.v1");
  const cJSON* first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(api.get(), "holds"), 0);
  REQUIRE(first != nullptr);
  CHECK(text_of(first, "slot") == "a");
  CHECK(text_of(first, "reason") == "api");
  REQUIRE(ws.swarm({"hold", "--slot", "a", "docs/**", "--shared"}).exit == 0);
  CHECK(eventually_body(served, "/metrics", [](const std::string& m) {
    return sample(m, "swarm_holds{kind=\"shared\"}") == 1;
  }));
  CHECK(served.body("/api/status").find("\"holds\":[\"hold.a.1\",\"hold.a.2\"]") != std::string::npos);
}
