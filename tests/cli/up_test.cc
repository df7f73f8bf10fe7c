// swarm up / down on the embedded default: idempotent, restartable, git-aware.
#include <doctest/doctest.h>

#include "cli/swarm_fixture.h"

using namespace testing;

TEST_CASE("Up_EmbeddedServerIsIdempotentAndSurvivesDown") {
  // a second up keeps the URL; down stops the server; up restarts it on the same data.
  SwarmWorkspace ws({.embedded = true});
  auto config = read_file(ws.root() / ".swarm/config.json");
  auto url = field(swarm::Json::parse(config), "nats_url");
  CHECK(url.rfind("nats://127.0.0.1:", 0) == 0);
  CHECK(swarm::Json::parse(config).get() != nullptr);
  CHECK(std::filesystem::exists(ws.root() / ".swarm/nats/nats.pid"));
  CHECK(std::filesystem::exists(ws.root() / ".swarm/hub.git/HEAD"));

  auto again = ws.swarm({"up", "--json"});
  REQUIRE(again.exit == 0);
  CHECK(field(json_of(again), "nats_url") == url);
  CHECK(cJSON_IsFalse(cJSON_GetObjectItem(json_of(again).get(), "started_server")));

  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  auto down = ws.swarm({"down"});
  REQUIRE(down.exit == 0);
  CHECK(down.out.find("stopped") != std::string::npos);
  CHECK(ws.swarm({"status", "--timeout", "1s"}).exit == 7);
  CHECK(ws.swarm({"down"}).out.find("not running") != std::string::npos);

  auto restarted = ws.swarm({"up", "--json"});
  REQUIRE_MESSAGE(restarted.exit == 0, restarted.err);
  CHECK(field(json_of(restarted), "nats_url") == url);
  CHECK(ws.swarm({"status", "--slot", "s"}).exit == 0);  // the record survived on disk
}

TEST_CASE("Up_SeedsTheHubFromTheWorkspaceHead") {
  // in a git repository the hub starts from its HEAD and branch name; slots see its files.
  SwarmWorkspace ws({.git_repo = true});
  auto hub = (ws.root() / ".swarm/hub.git").string();
  CHECK(ws.git({"--git-dir", hub, "symbolic-ref", "HEAD"}).out == "refs/heads/trunk\n");
  CHECK(ws.git({"--git-dir", hub, "log", "--format=%s", "trunk"}).out == "workspace commit\n");
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  CHECK(read_file(ws.worktree("s") / "README.txt") == "the workspace's own file\n");
  // .swarm/ stays out of the workspace's own status.
  CHECK(ws.git({"status", "--porcelain"}).out.empty());
}

TEST_CASE("Up_WithoutGitStartsFromAnEmptyCommit") {
  // outside a git repository the hub's main branch holds one empty commit.
  SwarmWorkspace ws;
  auto hub = (ws.root() / ".swarm/hub.git").string();
  CHECK(ws.git({"--git-dir", hub, "log", "--format=%s", "main"}).out == "swarm: initial commit\n");
  CHECK(ws.git({"--git-dir", hub, "ls-tree", "main"}).out.empty());
}

TEST_CASE("Up_RefusesAnotherTtlOnAnExistingBucket") {
  // up with a TTL that differs from the bucket's says so (exit 3) and changes nothing.
  SwarmWorkspace ws;
  auto r = ws.swarm({"up", "--nats-url", ws.server()->url(), "--ttl", "1m"});
  CHECK(r.exit == 3);
  CHECK(r.err.find("TTL is 300s, want 60s") != std::string::npos);
  CHECK(ws.swarm({"up", "--nats-url", ws.server()->url(), "--ttl", "5m"}).exit == 0);
}

TEST_CASE("Auth_GlobalOptionsReachAServerThatNeedsAPassword") {
  // --user/--password go to every verb's connection; without them the server's refusal is exit 2, named as such.
  NatsServer locked({.name = "locked", .extra_args = {"--user", "alice", "--pass", "s3cret"}});
  SwarmWorkspace ws({.up = false});
  const std::vector<std::string> auth = {"--user", "alice", "--password", "s3cret"};
  auto with_auth = [&](std::vector<std::string> args) {
    args.insert(args.end(), auth.begin(), auth.end());
    return ws.swarm(args);
  };
  auto up = with_auth({"up", "--nats-url", locked.url()});
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  REQUIRE(with_auth({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  CHECK(with_auth({"status", "--slot", "s"}).exit == 0);

  auto refused = ws.swarm({"status"});
  CHECK(refused.exit == 2);
  CHECK(refused.err.find("refused the connection") != std::string::npos);
  auto wrong = ws.swarm({"renew", "--slot", "s", "--user", "alice", "--password", "nope"});
  CHECK(wrong.exit == 2);
  CHECK(with_auth({"close", "--slot", "s", "--no-artifact"}).exit == 0);
}

TEST_CASE("Up_RefusedUpLeavesNoServerRunning") {
  // --replicas 3 on the embedded server is refused before any server starts; an up that fails after
  // (re)starting the server stops it again, so no server is left that `swarm down` does not know of.
  SwarmWorkspace fresh({.embedded = true, .up = false});
  auto refused = fresh.swarm({"up", "--replicas", "3"});
  CHECK(refused.exit == 2);
  CHECK(refused.err.find("single node") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(fresh.root() / ".swarm/nats/nats.pid"));
  CHECK_FALSE(std::filesystem::exists(fresh.root() / ".swarm/config.json"));

  SwarmWorkspace ws({.embedded = true});
  REQUIRE(ws.swarm({"down"}).exit == 0);
  auto conflict = ws.swarm({"up", "--ttl", "1m"});  // restarts the server, then meets the 5m bucket
  CHECK(conflict.exit == 3);
  CHECK(ws.swarm({"status", "--timeout", "1s"}).exit == 7);  // stopped again
  CHECK(ws.swarm({"down"}).out.find("not running") != std::string::npos);
  REQUIRE(ws.swarm({"up"}).exit == 0);
  CHECK(ws.swarm({"status"}).exit == 0);
}
