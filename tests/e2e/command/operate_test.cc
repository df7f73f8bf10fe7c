// Operating swarm day to day: a waiting lock says who holds it, --json lock
// and elect say why CMD ended, what salvage kept is listed and pruned,
// down warns of live sessions, evict and up say what they did, and the man
// page and each verb's --help carry what an operator looks for.
#include <doctest/doctest.h>

#include <signal.h>

#include <thread>

#include "e2e/swarm_fixture.h"
#include "support/eventually.h"
#include "support/json_fields.h"

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {


}  // namespace

TEST_CASE("Operate_AWaitingLockSaysWhoHoldsItAndJsonSaysHowCmdEnded") {
  SwarmWorkspace ws;
  Process holder(ws.command({"lock", "q", "--ttl", "3s", "--holder", "first-one", "--", "sleep", "2"}));
  REQUIRE(eventually([&] { return ws.swarm({"lease", "show", "q"}).out.find("first-one") != std::string::npos; }));
  auto waited = ws.swarm({"--json", "lock", "q", "--", "sh", "-c", "exit 3"});
  CHECK(waited.err.find("waiting for lease q (held by first-one") != std::string::npos);
  CHECK(waited.err.find("place 1 in line") != std::string::npos);
  CHECK(waited.exit == 3);  // CMD's status
  auto doc = json_of(waited);
  REQUIRE_MESSAGE(doc, waited.out);
  CHECK(field(doc, "schema") == "swarm.lock.v1");
  CHECK(field(doc, "ended") == "exited");
  CHECK(number(doc, "status") == 3);
  CHECK(number(doc, "waited_ms") > 500);
  CHECK(number(doc, "token") > 0);
  holder.wait();
  // Free: granted at once, nothing said while waiting.
  auto free = ws.swarm({"lock", "q", "--", "true"});
  CHECK(free.exit == 0);
  CHECK(free.err.find("waiting") == std::string::npos);
  // A lost lease is told apart from CMD's own failure.
  Process doomed(ws.command({"--json", "lock", "doomed", "--ttl", "2s", "--", "sleep", "30"}));
  REQUIRE(eventually([&] { return ws.swarm({"lease", "show", "doomed"}).exit == 0; }));
  auto shown = json_of(ws.swarm({"lease", "show", "doomed", "--json"}));
  const cJSON* first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(shown.get(), "leases"), 0);
  REQUIRE(first != nullptr);
  const auto token = static_cast<long long>(number_of(first, "token"));
  REQUIRE(ws.swarm({"lease", "release", "doomed", "--token", std::to_string(token)}).exit == 0);
  auto lost = doomed.wait(20s);
  auto lost_doc = json_of(lost);
  const std::string said = lost.out + lost.err;
  REQUIRE_MESSAGE(lost_doc, said);
  CHECK(field(lost_doc, "ended") == "lease_lost");
  CHECK(number(lost_doc, "status") == 128 + SIGTERM);
}

TEST_CASE("Operate_RecoveryIsListedAndPrunedByAge") {
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "old", "--task", "T-1"}).exit == 0);
  write_file(ws.worktree("old") / "draft.txt", "draft\n");
  REQUIRE(ws.git({"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"},
                 ws.worktree("old")).exit == 0);
  REQUIRE(ws.git({"checkout", "-q", "-b", "side"}, ws.worktree("old")).exit == 0);
  REQUIRE(ws.git({"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "side"},
                 ws.worktree("old")).exit == 0);
  REQUIRE(ws.git({"checkout", "-q", "swarm/old"}, ws.worktree("old")).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "old", "--result", "fail"}).exit == 0);
  // Something that is not salvage's stays whatever its age.
  fs::create_directories(ws.root() / ".swarm/recovery/mine-not-swarms");
  auto list = ws.swarm({"recovery", "list", "--json"});
  REQUIRE_MESSAGE(list.exit == 0, list.err);
  auto doc = json_of(list);
  const cJSON* items = cJSON_GetObjectItemCaseSensitive(doc.get(), "recovery");
  REQUIRE(cJSON_GetArraySize(items) == 1);
  const cJSON* item = cJSON_GetArrayItem(items, 0);
  CHECK(text_of(item, "slot") == "old");
  CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(item, "folder")));
  CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(item, "refs")) >= 1);  // heads/side
  // Younger than the limit: kept.
  auto keep = ws.swarm({"recovery", "prune", "--older-than", "1h"});
  CHECK(keep.exit == 0);
  CHECK(keep.out.find("removed 0 folders and 0 hub refs") == 0);
  // Dry run, then for real: the folder and the refs go, the stranger's folder stays.
  std::this_thread::sleep_for(1100ms);
  auto dry = ws.swarm({"recovery", "prune", "--older-than", "1s", "--dry-run"});
  CHECK(dry.out.find("would remove 1 folder and") == 0);
  CHECK(fs::exists(ws.root() / ".swarm/recovery" / text_of(item, "name")));
  auto pruned = ws.swarm({"recovery", "prune", "--older-than", "1s", "--json"});
  REQUIRE_MESSAGE(pruned.exit == 0, pruned.err);
  CHECK(!fs::exists(ws.root() / ".swarm/recovery" / text_of(item, "name")));
  CHECK(fs::exists(ws.root() / ".swarm/recovery/mine-not-swarms"));
  CHECK(ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "for-each-ref", "refs/recovery"}).out.empty());
  CHECK(ws.swarm({"recovery", "prune", "--older-than", "soon"}).exit == 2);
  CHECK(ws.swarm({"recovery", "prune"}).exit == 2);
}

TEST_CASE("Operate_DownWarnsOfLiveSessionsEvictAndUpSayWhatTheyDid") {
  SwarmWorkspace ws({.embedded = true});
  REQUIRE(ws.swarm({"join", "--slot", "busy", "--task", "T-1"}).exit == 0);
  auto evicted = ws.swarm({"join", "--slot", "gone", "--task", "T-2"});
  REQUIRE(evicted.exit == 0);
  auto evict = ws.swarm({"evict", "--slot", "gone"});
  CHECK(evict.out.find("evicted slot gone: the session of host host-a") == 0);
  CHECK(evict.out.find("{") == std::string::npos);  // a sentence, not a record
  auto down = ws.swarm({"down"});
  CHECK(down.exit == 0);
  CHECK(down.err.find("1 live session (busy)") != std::string::npos);
  REQUIRE(ws.swarm({"up"}).exit == 0);
  auto quiet = ws.swarm({"down", "--force"});
  CHECK(quiet.exit == 0);
  CHECK(quiet.err.find("live session") == std::string::npos);
  // An unreachable server is told how to start it.
  auto status = ws.swarm({"status"});
  CHECK(status.exit == 7);
  CHECK(status.err.find("swarm up") != std::string::npos);
}

TEST_CASE("Operate_UpOutsideACheckoutSaysSo") {
  SwarmWorkspace ws({.up = false});
  auto up = ws.swarm({"up", "--nats-url", ws.server()->url()});
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  CHECK(up.out.find("is no git checkout") != std::string::npos);
}

TEST_CASE("Operate_HelpAndManPageCarryWhatOperatorsLookFor") {
  SwarmWorkspace ws;
  for (const char* verb : {"join", "status", "land"}) {
    auto help = ws.swarm({verb, "--help"});
    CHECK(help.out.find("Global options") != std::string::npos);
    CHECK(help.out.find("--nats-url") != std::string::npos);
  }
  auto sub = ws.swarm({"lease", "acquire", "--help"});
  CHECK(sub.out.find("--holder") != std::string::npos);
  CHECK(sub.out.find("Global options") != std::string::npos);
  auto verbs = ws.swarm({"_complete", "verbs"});
  CHECK(verbs.out.find("lease acquire\n") != std::string::npos);
  CHECK(verbs.out.find("recovery prune\n") != std::string::npos);
  const fs::path page = fs::path(SWARM_BINARY).parent_path() / "swarm.1";
  if (fs::exists(page)) {
    const std::string man = read_file(page);
    for (const char* section : {".SH ENVIRONMENT", ".SH FILES", ".SH \"EXIT STATUS\"", "swarm lease acquire", "SWARM_SESSION"})
      CHECK_MESSAGE(man.find(section) != std::string::npos, section);
  }
}
