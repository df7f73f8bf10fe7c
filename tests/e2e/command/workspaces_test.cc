// A workspace is alone on a shared server: every bucket, stream and subject
// it uses carries its own name (adr/0049), so several workspaces on one
// nats-server see nothing of each other, and one made before names keeps
// the shared names it was made with.
#include <doctest/doctest.h>

#include <signal.h>

#include <set>
#include <thread>

#include "e2e/swarm_fixture.h"
#include "support/eventually.h"
#include "kv/bucket.h"
#include "kv/connection.h"
#include "kv/stream.h"

using namespace testing;
using namespace std::chrono_literals;

namespace {

// A workspace on `server` (not its own), set up with `args`.
std::unique_ptr<SwarmWorkspace> workspace_on(const NatsServer& server, std::vector<std::string> args = {}) {
  auto ws = std::make_unique<SwarmWorkspace>(SwarmWorkspace::Options{.up = false, .own_server = false});
  args.insert(args.begin(), {"up", "--nats-url", server.url(), "--json"});
  auto up = ws->swarm(args);
  if (up.exit != 0) throw std::runtime_error("up failed: " + up.err);
  return ws;
}

std::set<std::string> slots_in(const RunResult& status) {
  std::set<std::string> out;
  auto doc = json_of(status);
  const cJSON* s = nullptr;
  cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(doc.get(), "sessions")) out.insert(field(swarm::Json::copy(s), "slot"));
  return out;
}

std::size_t lines_in(const std::string& text) {
  std::size_t n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

}  // namespace

TEST_CASE("Workspaces_ThreeOnOneServerSeeNothingOfEachOther") {
  // three workspaces on one nats-server and account (one with --bucket, the old way to keep them apart), each with
  // the same slot, task id, inbox, hold and lock names: none claims, reads, blocks or repairs another's.
  NatsServer server;
  auto a = workspace_on(server);
  auto b = workspace_on(server);
  auto c = workspace_on(server, {"--bucket", "shared-sessions"});
  const std::set<std::string> names = {a->names().workspace, b->names().workspace, c->names().workspace};
  REQUIRE(names.size() == 3);
  for (auto* ws : {a.get(), b.get(), c.get()}) {
    REQUIRE(ws->swarm({"task", "add", "work of " + ws->names().workspace}).out == "T-1\n");  // a counter each
    auto joined = ws->swarm({"join", "--slot", "w", "--next"});
    REQUIRE_MESSAGE(joined.exit == 0, joined.err);
    REQUIRE(ws->swarm({"hold", "--slot", "w", "src/**"}).exit == 0);  // the same paths: no conflict across them
  }
  // Each claimed its own T-1: its record names its own slot, and the others' are not in its list.
  for (auto* ws : {a.get(), b.get(), c.get()}) {
    auto shown = json_of(ws->swarm({"task", "show", "T-1", "--json"}));
    CHECK(ws->swarm({"task", "list"}).out.find("work of " + ws->names().workspace) != std::string::npos);
    CHECK(lines_in(ws->swarm({"task", "list"}).out) == 1);
    CHECK(slots_in(ws->swarm({"status", "--json"})) == std::set<std::string>{"w"});
    CHECK(lines_in(ws->swarm({"holds"}).out) <= 2);  // its header and its own hold
    (void)shown;
  }
  // A message to everyone in a reaches nobody in b or c.
  REQUIRE(a->swarm({"send", "--all", "--from", "lead", "hello a"}).exit == 0);
  CHECK(a->swarm({"inbox", "--as", "x"}).out.find("hello a") != std::string::npos);
  CHECK(b->swarm({"inbox", "--as", "x"}).out.empty());
  CHECK(c->swarm({"inbox", "--as", "x"}).out.empty());
  // One lock name, held in a: b and c take theirs at once.
  Process held(a->command({"lock", "deploy", "--", "sleep", "5"}));
  REQUIRE(eventually([&] { return a->swarm({"lease", "show", "deploy"}).exit == 0; }, 10s));
  CHECK(b->swarm({"lock", "deploy", "--wait", "0", "--", "true"}).exit == 0);
  CHECK(c->swarm({"lock", "deploy", "--wait", "0", "--", "true"}).exit == 0);
  held.signal(SIGTERM);
  held.wait();
  // a's doctor --fix, its slot closed and evicted meanwhile, touches nothing of c's: c's task lease stays held.
  REQUIRE(a->swarm({"close", "--slot", "w", "--result", "fail"}).exit == 0);
  CHECK(a->swarm({"doctor", "--fix"}).exit == 0);
  auto lease = json_of(c->swarm({"lease", "show", "task.T-1", "--json"}));
  REQUIRE(lease);
  CHECK(c->swarm({"renew", "--slot", "w"}).exit == 0);
  CHECK(c->swarm({"lease", "show", "task.T-1"}).out.find("held") != std::string::npos);
  // The journals are apart too: a's log has its close, b's has none.
  CHECK(a->swarm({"log", "--kind", "close"}).out.find("slot/w") != std::string::npos);
  CHECK(b->swarm({"log", "--kind", "close"}).out.empty());
  // On the server: each one's streams, none of the shared ones.
  auto nats = kv::Connection::connect({.urls = {server.url()}});
  for (auto* ws : {a.get(), b.get(), c.get()}) {
    CHECK(kv::Stream::bind(nats, ws->names().events).state());
    CHECK(kv::Stream::bind(nats, ws->names().bus).state());
  }
  CHECK_FALSE(kv::Stream::bind(nats, "swarm-events").state());
  CHECK_FALSE(kv::Stream::bind(nats, "swarm-bus").state());
}

TEST_CASE("Workspaces_AHostJoinsTheWorkspaceItsHubIsMarkedWith") {
  // a second checkout set up on the first's hub and server takes its name from the hub's mark and sees its
  // sessions; asking for another name there is exit 2; a workspace of another hub cannot take a name in use.
  NatsServer server;
  auto first = workspace_on(server);
  REQUIRE(first->swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  const std::string hub = (first->root() / ".swarm/hub.git").string();
  SwarmWorkspace second({.up = false, .own_server = false});
  auto wrong = second.swarm({"up", "--nats-url", server.url(), "--hub", hub, "--name", "another"});
  CHECK(wrong.exit == 2);
  CHECK(wrong.err.find(first->names().workspace) != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(second.root() / ".swarm/config.json"));
  auto joined = second.swarm({"up", "--nats-url", server.url(), "--hub", hub, "--json"});
  REQUIRE_MESSAGE(joined.exit == 0, joined.err);
  CHECK(field(json_of(joined), "name") == first->names().workspace);
  CHECK(field(json_of(joined), "name_from") == "hub");
  CHECK(slots_in(second.swarm({"status", "--json"}, kHostB)) == std::set<std::string>{"s"});
  // Another hub, the same name: refused before anything of the first is touched.
  SwarmWorkspace third({.up = false, .own_server = false});
  auto taken = third.swarm({"up", "--nats-url", server.url(), "--name", first->names().workspace});
  CHECK(taken.exit == 3);
  CHECK(taken.err.find("another workspace named") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(third.root() / ".swarm/config.json"));
  CHECK(slots_in(first->swarm({"status", "--json"})) == std::set<std::string>{"s"});
  // A name is checked before any I/O.
  CHECK(third.swarm({"up", "--nats-url", server.url(), "--name", "Bad.Name"}).exit == 2);
  CHECK(third.swarm({"up", "--nats-url", server.url(), "--name", "events"}).exit == 2);
}

TEST_CASE("Workspaces_OneMadeBeforeNamesKeepsItsNames") {
  // a workspace as swarm made them before names: `up` keeps it on the shared names (said so), its sessions and
  // tasks stay where they are, a host joining its hub joins it, and a name is never given to it in place.
  NatsServer server;
  SwarmWorkspace old({.up = false, .own_server = false});
  REQUIRE(old.swarm({"up", "--nats-url", server.url()}).exit == 0);
  make_unnamed(old);
  auto up = old.swarm({"up", "--json"});
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(json_of(up).get(), "name")));
  CHECK(old.names().sessions == "swarm-sessions");
  CHECK(old.names().events == "swarm-events");
  REQUIRE(old.swarm({"task", "add", "old work"}).exit == 0);
  REQUIRE(old.swarm({"join", "--slot", "s", "--next"}).exit == 0);
  write_file(old.worktree("s") / "f.txt", "x\n");
  REQUIRE(old.swarm({"commit", "--slot", "s", "-m", "work"}).exit == 0);
  auto rename = old.swarm({"up", "--name", "fresh"});
  CHECK(rename.exit == 2);
  CHECK(rename.err.find("made before workspaces had names") != std::string::npos);
  CHECK(old.names().sessions == "swarm-sessions");
  // Another host of it: its hub has slot branches and no mark, the server its session bucket.
  SwarmWorkspace other({.up = false, .own_server = false});
  auto joined = other.swarm({"up", "--nats-url", server.url(), "--hub", (old.root() / ".swarm/hub.git").string(),
                             "--json"}, kHostB);
  REQUIRE_MESSAGE(joined.exit == 0, joined.err);
  CHECK(field(json_of(joined), "name_from") == "unnamed");
  CHECK(slots_in(other.swarm({"status", "--json"}, kHostB)) == std::set<std::string>{"s"});
  CHECK(other.swarm({"task", "list"}, kHostB).out.find("old work") != std::string::npos);
  CHECK(old.swarm({"doctor"}).exit == 0);
}
