// swarm up / down on the embedded default: idempotent, restartable, git-aware.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include <thread>

#include "e2e/swarm_fixture.h"
#include "kv/bucket.h"
#include "support/git_servers.h"

using namespace testing;
using namespace std::chrono_literals;

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

TEST_CASE("Up_AnotherTtlChangesTheBucketInPlace") {
  // up --ttl on a workspace set up already changes the session bucket's TTL in place (a live session kept, no
  // "delete the bucket"); another host's config that still says 5m takes the bucket's on its next plain up.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  auto r = ws.swarm({"up", "--nats-url", ws.server()->url(), "--ttl", "1m"});
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  CHECK(r.out.find("TTL 1m, replicas 1, changed from 5m") != std::string::npos);
  CHECK(ws.swarm({"status", "--json"}).out.find("\"ttl_seconds\":60") != std::string::npos);
  CHECK(ws.swarm({"status", "--slot", "s"}).exit == 0);  // the session is still there
  auto config = ws.root() / ".swarm/config.json";
  auto json = swarm::Json::parse(read_file(config));
  json.set("ttl_ms", 300000);
  write_file(config, json.dump());
  auto plain = ws.swarm({"up", "--json"});
  REQUIRE(plain.exit == 0);
  CHECK(number(json_of(plain), "ttl_seconds") == 60);
  CHECK(number(json_of(plain), "ttl_was_seconds") == 300);  // what the config said
  CHECK(read_file(config).find("60000") != std::string::npos);
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
  auto conflict = ws.swarm({"up", "--events-max-bytes", "900TiB"});  // restarts the server, then finds no room
  CHECK(conflict.exit == 9);
  CHECK(ws.swarm({"status", "--timeout", "1s"}).exit == 7);  // stopped again
  CHECK(ws.swarm({"down"}).out.find("not running") != std::string::npos);
  REQUIRE(ws.swarm({"up"}).exit == 0);
  CHECK(ws.swarm({"status"}).exit == 0);
}

namespace {

// The nats-server processes whose store is the workspace's (read from /proc).
int servers_on_store(const SwarmWorkspace& ws) {
  const std::string store = (ws.root() / ".swarm/nats/data").string();
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = read_file(entry.path() / "cmdline");
    if (cmdline.find(std::string("-sd") + '\0' + store + '\0') != std::string::npos) ++count;
  }
  return count;
}

// nats-server's path, as `swarm up` finds it.
std::string nats_server_on_path() {
  std::stringstream dirs(std::getenv("PATH") ? std::getenv("PATH") : "");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (::access((std::filesystem::path(dir) / "nats-server").c_str(), X_OK) == 0)
      return (std::filesystem::path(dir) / "nats-server").string();
  return "nats-server";
}

}  // namespace

TEST_CASE("Down_NeverSignalsAProcessThatOnlyHasOurOldPid") {
  // a stale nats.pid naming another program (here another nats-server, on its own store) is not our server:
  // down leaves it alone, and up starts our server again instead of exiting 7.
  SwarmWorkspace ws({.embedded = true});
  REQUIRE(ws.swarm({"down"}).exit == 0);
  NatsServer stranger;
  write_file(ws.root() / ".swarm/nats/nats.pid", std::to_string(stranger.pid()) + "\n");
  auto down = ws.swarm({"down"});
  CHECK(down.exit == 0);
  CHECK(down.out.find("not running") != std::string::npos);
  CHECK(::kill(stranger.pid(), 0) == 0);
  auto up = ws.swarm({"up", "--json"});
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  CHECK(cJSON_IsTrue(cJSON_GetObjectItem(json_of(up).get(), "started_server")));
  CHECK(ws.swarm({"status"}).exit == 0);
  CHECK(::kill(stranger.pid(), 0) == 0);
  // The identity file is checked against the process itself: a recorded pid that is now a shell (even one
  // whose arguments say nats-server) is not our server.
  REQUIRE(ws.swarm({"down"}).exit == 0);
  Process imposter({.args = {"/bin/sh", "-c", "sleep 30", "nats-server"}});
  auto identity = swarm::Json::parse(read_file(ws.root() / ".swarm/nats/server.json"));
  REQUIRE(identity);
  identity.set("pid", static_cast<std::int64_t>(imposter.pid()));
  write_file(ws.root() / ".swarm/nats/server.json", identity.dump());
  write_file(ws.root() / ".swarm/nats/nats.pid", std::to_string(imposter.pid()) + "\n");
  CHECK(ws.swarm({"down"}).out.find("not running") != std::string::npos);
  CHECK(::kill(imposter.pid(), 0) == 0);
  CHECK(ws.swarm({"doctor", "--json"}).out.find("is another program now") != std::string::npos);
  imposter.signal(SIGKILL);
}

TEST_CASE("Up_TwoAtOnceStartOneServerThatDownStops") {
  // two `swarm up` at once on a new workspace: both succeed with one URL, one server runs, down stops it.
  SwarmWorkspace ws({.embedded = true, .up = false});
  Process first(ws.command({"up", "--json"}));
  Process second(ws.command({"up", "--json"}));
  auto a = first.wait();
  auto b = second.wait();
  REQUIRE_MESSAGE(a.exit == 0, a.err);
  REQUIRE_MESSAGE(b.exit == 0, b.err);
  CHECK(field(json_of(a), "nats_url") == field(json_of(b), "nats_url"));
  CHECK(servers_on_store(ws) == 1);
  // A second server on the same store, as an older swarm's race left: doctor names it, down stops both.
  int port = free_port();
  Process stray({.args = {nats_server_on_path(), "-js", "-a", "127.0.0.1", "-p", std::to_string(port), "-sd",
                          (ws.root() / ".swarm/nats/data").string()}});
  for (int i = 0; i < 100 && servers_on_store(ws) < 2; ++i) std::this_thread::sleep_for(20ms);
  REQUIRE(servers_on_store(ws) == 2);
  CHECK(ws.swarm({"doctor", "--json"}).out.find("2 nats-servers run on this workspace's store") != std::string::npos);
  REQUIRE(ws.swarm({"down"}).exit == 0);
  CHECK(servers_on_store(ws) == 0);
  stray.wait();
}

TEST_CASE("Up_AfterAnUpKilledBeforeItsConfigReusesItsServer") {
  // an up killed after starting the server but before writing config.json: the next up adopts that server
  // (no second one on the store), and down stops it.
  SwarmWorkspace ws({.embedded = true});
  auto url = field(swarm::Json::parse(read_file(ws.root() / ".swarm/config.json")), "nats_url");
  std::filesystem::remove(ws.root() / ".swarm/config.json");
  auto up = ws.swarm({"up", "--json"});
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  CHECK(cJSON_IsFalse(cJSON_GetObjectItem(json_of(up).get(), "started_server")));
  CHECK(field(json_of(up), "nats_url") == url);
  CHECK(servers_on_store(ws) == 1);
  REQUIRE(ws.swarm({"down"}).exit == 0);
  CHECK(servers_on_store(ws) == 0);
}

TEST_CASE("Config_CorruptIsRepairedByTheFixDoctorNames") {
  // a config.json cut short: doctor names a fix that works; with an embedded server `swarm up` rebuilds it and
  // keeps the corrupt file beside it.
  SwarmWorkspace ws({.embedded = true});
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  write_file(ws.root() / ".swarm/config.json", "{");
  auto report = ws.swarm({"doctor", "--json"});
  CHECK(report.exit == 8);
  CHECK(report.out.find("corrupt") != std::string::npos);
  CHECK(report.out.find("\"fix\":\"swarm up") != std::string::npos);
  CHECK(ws.swarm({"status"}).exit == 6);
  auto up = ws.swarm({"up"});
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  CHECK(up.err.find("kept the corrupt one") != std::string::npos);
  CHECK(ws.swarm({"status", "--slot", "s"}).exit == 0);  // the same server and its records
  CHECK(ws.swarm({"doctor"}).exit == 0);
  int kept = 0;
  for (const auto& e : std::filesystem::directory_iterator(ws.root() / ".swarm"))
    if (e.path().filename().string().rfind("config.json.corrupt-", 0) == 0 && read_file(e.path()) == "{") ++kept;
  CHECK(kept == 1);
}

TEST_CASE("Config_CorruptOnAnExternalServerNeedsItsUrl") {
  // without an embedded server `swarm up` cannot guess the NATS: it says to pass --nats-url and changes nothing;
  // with it, the config is rebuilt.
  SwarmWorkspace ws;
  write_file(ws.root() / ".swarm/config.json", "{\"nats_url\":");
  auto guess = ws.swarm({"up"});
  CHECK(guess.exit == 2);
  CHECK(guess.err.find("--nats-url") != std::string::npos);
  CHECK(read_file(ws.root() / ".swarm/config.json") == "{\"nats_url\":");
  CHECK_FALSE(std::filesystem::exists(ws.root() / ".swarm/nats/data"));  // no server was started
  CHECK(ws.swarm({"doctor", "--json"}).out.find("swarm up --nats-url URL") != std::string::npos);
  auto up = ws.swarm({"up", "--nats-url", ws.server()->url()});
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  CHECK(ws.swarm({"doctor"}).exit == 0);
}

TEST_CASE("Config_NumbersOutOfRangeAndUnreadableFilesAreNamed") {
  // ttl_ms of 1e300 is a corrupt config, not "--ttl must be at least 1s"; a config that cannot be read is not
  // "missing".
  SwarmWorkspace ws;
  auto path = ws.root() / ".swarm/config.json";
  auto config = swarm::Json::parse(read_file(path));
  config.set("ttl_ms", 1e300);
  write_file(path, config.dump());
  auto status = ws.swarm({"status"});
  CHECK(status.exit == 6);
  CHECK(status.err.find("'ttl_ms'") != std::string::npos);
  CHECK(status.err.find("--ttl") == std::string::npos);
  std::filesystem::remove(path);
  std::filesystem::create_directory(path);
  auto folder = ws.swarm({"status"});
  CHECK(folder.exit == 6);
  CHECK(folder.err.find("cannot read") != std::string::npos);
  CHECK(folder.err.find("missing") == std::string::npos);
}

TEST_CASE("Up_AWrapperScriptOnPathIsStillOurServer") {
  // nats-server reached through a wrapper that execs it (asdf, mise, nix): a second up reuses the server instead of
  // replacing it, and doctor is healthy.
  SwarmWorkspace ws({.embedded = true, .up = false});
  TempDir shims("swarm-shim");
  write_file(shims / "nats-server", "#!/bin/sh\nexec " + nats_server_on_path() + " \"$@\"\n");
  std::filesystem::permissions(shims / "nats-server", std::filesystem::perms::owner_all);
  std::map<std::string, std::string> env = kHostA;
  env["PATH"] = shims.path().string() + ":" + std::getenv("PATH");
  env["SWARM_NATS_SERVER"] = (shims / "nats-server").string();  // the wrapper, not the release beside swarm
  auto first = ws.swarm({"up", "--json"}, env);
  REQUIRE_MESSAGE(first.exit == 0, first.err);
  auto second = ws.swarm({"up", "--json"}, env);
  REQUIRE(second.exit == 0);
  CHECK(cJSON_IsFalse(cJSON_GetObjectItem(json_of(second).get(), "started_server")));
  CHECK(number(json_of(second), "server_pid") == number(json_of(first), "server_pid"));
  CHECK(ws.swarm({"doctor"}, env).exit == 0);
}

TEST_CASE("Up_ToAnotherServerStopsTheEmbeddedOne_DownStopsStraysWhateverTheConfig") {
  // moving an embedded workspace to another server stops its embedded one; down stops a server on the store even
  // when config.json is corrupt; a config.json that is a FIFO or a device is unreadable, never a hang.
  SwarmWorkspace ws({.embedded = true});
  NatsServer elsewhere;
  auto moved = ws.swarm({"up", "--nats-url", elsewhere.url()});
  REQUIRE_MESSAGE(moved.exit == 0, moved.err);
  CHECK(moved.err.find("stopped this workspace's embedded nats-server") != std::string::npos);
  CHECK(servers_on_store(ws) == 0);
  REQUIRE(ws.swarm({"up", "--nats-url", ""}).exit == 2);

  SwarmWorkspace corrupt({.embedded = true});
  write_file(corrupt.root() / ".swarm/config.json", "{");
  auto down = corrupt.swarm({"down"});
  CHECK_MESSAGE(down.exit == 0, down.err);
  CHECK(servers_on_store(corrupt) == 0);

  auto config = corrupt.root() / ".swarm/config.json";
  std::filesystem::remove(config);
  REQUIRE(::mkfifo(config.c_str(), 0600) == 0);
  auto fifo = corrupt.swarm({"status", "--timeout", "2s"});
  CHECK(fifo.exit == 6);
  CHECK(fifo.err.find("not a plain file") != std::string::npos);
  CHECK(fifo.took < 5s);
  std::filesystem::remove(config);
  std::filesystem::create_symlink("/dev/zero", config);
  CHECK(corrupt.swarm({"doctor", "--json"}).exit == 8);
}

TEST_CASE("Up_MakesTheLeaseBucketKeepRecordsForADayAndRaisesAnOlderOne") {
  // the lease bucket drops abandoned records after a day; one an older swarm made with an hour is raised, its
  // leases kept.
  NatsServer server;
  {
    auto connection = kv::Connection::connect({.urls = {server.url()}});
    auto old = kv::Bucket::ensure(connection, {.name = "swarm-leases", .ttl = std::chrono::hours(1)});
    old.create("kept", R"({"name":"kept","holder":"h","host":"h","ttl_ms":60000})");
  }
  // An older swarm's workspace: made before names, on the shared buckets.
  SwarmWorkspace ws({.up = false});
  REQUIRE(ws.swarm({"up", "--nats-url", server.url()}).exit == 0);
  make_unnamed(ws);
  auto up = ws.swarm({"up", "--nats-url", server.url()});
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  auto connection = kv::Connection::connect({.urls = {server.url()}});
  REQUIRE(ws.names().leases == "swarm-leases");
  auto leases = kv::Bucket::open(connection, ws.names().leases);
  CHECK(leases.config().ttl == std::chrono::hours(24));
  CHECK(leases.get("kept"));
  CHECK(ws.swarm({"up", "--nats-url", server.url()}).exit == 0);  // again: nothing to change
}

TEST_CASE("Up_HubOnASharedFolderIsSeededAndUsed") {
  // --hub PATH: an empty bare repository (another initial branch) is seeded and its HEAD set; slots clone it.
  SwarmWorkspace ws({.up = false, .git_repo = true});
  const auto shared = ws.home() / "shared" / "app.git";
  ws.git({"init", "-q", "--bare", "--initial-branch=master", shared.string()});
  auto up = ws.swarm({"up", "--nats-url", ws.server()->url(), "--hub", shared.string(), "--json"});
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  CHECK(field(json_of(up), "hub") == shared.string());
  CHECK(ws.git({"--git-dir", shared.string(), "symbolic-ref", "HEAD"}).out == "refs/heads/trunk\n");
  CHECK_FALSE(std::filesystem::exists(ws.root() / ".swarm/hub.git"));
  auto join = ws.swarm({"join", "--slot", "s", "--task", "T-1", "--json"});
  REQUIRE_MESSAGE(join.exit == 0, join.err);
  write_file(ws.worktree("s") / "f.txt", "f\n");
  REQUIRE(ws.swarm({"commit", "--slot", "s", "-m", "f"}).exit == 0);
  CHECK(ws.git({"--git-dir", shared.string(), "log", "--format=%s", "swarm/s"}).out == "f\nworkspace commit\n");
  auto status = ws.swarm({"status", "--json"});
  CHECK(status.out.find("file://" + shared.string()) != std::string::npos);  // hub_url names it
  // A second up without --hub keeps it.
  CHECK(ws.swarm({"up", "--nats-url", ws.server()->url()}).exit == 0);
  CHECK(read_file(ws.root() / ".swarm/config.json").find(shared.string()) != std::string::npos);
}

TEST_CASE("Up_BadHubIsRefusedBeforeAnything") {
  SwarmWorkspace ws({.up = false});
  for (const char* bad : {"", "ftp://hub/app.git", "ssh://host", "git://h:99999/a.git", "host:"}) {
    CAPTURE(bad);
    auto r = ws.swarm({"up", "--nats-url", ws.server()->url(), "--hub", bad});
    CHECK(r.exit == 2);
    CHECK(r.err.find(std::string("'") + bad + "'") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(ws.root() / ".swarm"));
  }
  // A hub nobody listens for: exit 7 naming it, and no config.
  const std::string closed = "git://127.0.0.1:" + std::to_string(free_port()) + "/app.git";
  auto r = ws.swarm({"up", "--nats-url", ws.server()->url(), "--hub", closed});
  CHECK(r.exit == 7);
  CHECK(r.err.find(closed) != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(ws.root() / ".swarm/config.json"));
}

TEST_CASE("Up_MovingToAnotherHubWaitsForTheSlotsOfThisHost") {
  // the slots' clones push to the old hub: moving is refused (exit 3) while one is open, allowed after.
  SwarmWorkspace ws;
  const auto other = ws.home() / "other.git";
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  auto r = ws.swarm({"up", "--hub", other.string()});
  CHECK(r.exit == 3);
  CHECK(r.err.find("close them") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(other));
  REQUIRE(ws.swarm({"close", "--slot", "s", "--no-artifact"}).exit == 0);
  auto moved = ws.swarm({"up", "--hub", other.string()});
  CHECK_MESSAGE(moved.exit == 0, moved.err);
  CHECK(std::filesystem::exists(other / "HEAD"));
}

TEST_CASE("Up_NoHubCanBeInAFileOrAWorkingRepository") {
  // exit 2 naming the path, before .swarm/ or any bucket is made.
  SwarmWorkspace ws({.up = false, .git_repo = true});
  write_file(ws.home() / "a-file", "x\n");
  for (auto [hub, says] : std::vector<std::pair<std::string, std::string>>{
           {(ws.home() / "a-file").string(), "is a file"},
           {(ws.home() / "a-file" / "hub.git").string(), "is a file, not a folder"},
           {ws.root().string(), "a repository with a worktree"},
           {"/" + std::string(300, 'x') + "/hub.git", "bad hub"}}) {
    CAPTURE(hub);
    auto r = ws.swarm({"up", "--nats-url", ws.server()->url(), "--hub", hub});
    CHECK(r.exit == 2);
    CHECK(r.err.find(says) != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(ws.root() / ".swarm"));
  }
}

TEST_CASE("Up_AHubThatSaysNothingIsGivenUpWithinItsIdleTimeout") {
  // a server that accepts the connection and never answers: exit 7 in seconds, not a hang.
  SwarmWorkspace ws({.up = false});
  SilentListener silent;
  for (const std::string scheme : {"git", "ssh"}) {
    CAPTURE(scheme);
    const std::string hub = scheme + "://127.0.0.1:" + std::to_string(silent.port()) + "/app.git";
    auto r = ws.swarm({"up", "--nats-url", ws.server()->url(), "--hub", hub},
                      {{"SWARM_HOST", "host-a"}, {"SWARM_HOST_ID", "id-a"}, {"SWARM_HUB_IDLE_TIMEOUT", "1"}});
    CHECK(r.exit == 7);
    CHECK(r.err.find("said nothing for 1s") != std::string::npos);
    CHECK(r.took < 15s);
    CHECK_FALSE(std::filesystem::exists(ws.root() / ".swarm/config.json"));
  }
}

TEST_CASE("Up_AHubThatRefusesPushesIsRefusedAtUp") {
  // a read-only git daemon: exit 2 saying so at up, not a warning at every commit.
  GitDaemon daemon(/*pushes=*/false);
  daemon.make_repository("app.git");
  SwarmWorkspace ws({.up = false, .git_repo = true});
  // Seeded by hand, so that the refusal is the push check's, not the seed's.
  REQUIRE(ws.git({"push", "-q", daemon.path("app.git").string(), "trunk"}).exit == 0);
  auto r = ws.swarm({"up", "--nats-url", ws.server()->url(), "--hub", daemon.url("app.git")});
  CHECK(r.exit == 2);
  CHECK(r.err.find("refuses pushes") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(ws.root() / ".swarm/config.json"));
}

TEST_CASE("Up_AddsRemoteSwarmToItsCheckout") {
  // up in a git checkout adds remote `swarm` for the hub; git fetch swarm brings a slot's branch home; a remote
  // of that name is left as it is; a workspace that is no checkout gets none.
  SwarmWorkspace ws({.git_repo = true});
  auto url = ws.git({"remote", "get-url", "swarm"});
  REQUIRE_MESSAGE(url.exit == 0, url.err);
  CHECK(url.out == (ws.root() / ".swarm/hub.git").string() + "\n");
  REQUIRE(ws.swarm({"join", "--slot", "render", "--task", "T-1"}).exit == 0);
  write_file(ws.worktree("render") / "f.txt", "f\n");
  REQUIRE(ws.swarm({"commit", "--slot", "render", "-m", "f"}).exit == 0);
  REQUIRE(ws.git({"fetch", "-q", "swarm"}).exit == 0);
  CHECK(ws.git({"log", "-1", "--format=%s", "swarm/swarm/render"}).out == "f\n");

  REQUIRE(ws.git({"remote", "set-url", "swarm", "/elsewhere.git"}).exit == 0);
  auto again = ws.swarm({"up", "--json"});
  REQUIRE(again.exit == 0);
  CHECK(cJSON_IsFalse(cJSON_GetObjectItem(json_of(again).get(), "added_remote")));
  CHECK(ws.git({"remote", "get-url", "swarm"}).out == "/elsewhere.git\n");

  SwarmWorkspace plain;  // no checkout: nothing to add, nothing said
  CHECK(!std::filesystem::exists(plain.root() / ".git"));
}

TEST_CASE("Up_AMovedOrCopiedWorkspaceKeepsItsOwnHub") {
  // config.json names the workspace's own hub relative to it: moved, the workspace lands on the hub it has;
  // copied, the copy's commits go to the copy's hub; never a new, empty hub at the old path.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  write_file(ws.worktree("s") / "s.txt", "s\n");
  REQUIRE(ws.swarm({"commit", "--slot", "s", "-m", "s"}).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "s", "--result", "success"}).exit == 0);
  REQUIRE(ws.swarm({"land", "--slot", "s"}).exit == 0);
  CHECK(field(swarm::Json::parse(read_file(ws.root() / ".swarm/config.json")), "hub") == ".swarm/hub.git");
  const auto moved = ws.root().parent_path() / "moved";
  std::filesystem::rename(ws.root(), moved);
  auto up = ws.swarm({"--workspace", moved.string(), "up", "--json"}, kHostA, moved);
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  CHECK(field(json_of(up), "hub") == (moved / ".swarm/hub.git").string());
  CHECK_FALSE(std::filesystem::exists(ws.root()));  // nothing made at the old path
  auto join = ws.swarm({"--workspace", moved.string(), "join", "--slot", "t", "--task", "T-2"}, kHostA, moved);
  REQUIRE_MESSAGE(join.exit == 0, join.err);
  CHECK(std::filesystem::exists(moved / ".swarm/slots/t/wt/s.txt"));  // the landed history is there
  REQUIRE(ws.swarm({"--workspace", moved.string(), "close", "--slot", "t", "--result", "fail"}, kHostA, moved).exit == 0);

  const auto copy = ws.root().parent_path() / "copy";
  std::filesystem::copy(moved, copy, std::filesystem::copy_options::recursive);
  REQUIRE(ws.swarm({"--workspace", copy.string(), "join", "--slot", "c", "--task", "T-3"}, kHostA, copy).exit == 0);
  write_file(copy / ".swarm/slots/c/wt/c.txt", "c\n");
  REQUIRE(ws.swarm({"--workspace", copy.string(), "commit", "--slot", "c", "-m", "c"}, kHostA, copy).exit == 0);
  CHECK(ws.git({"--git-dir", (copy / ".swarm/hub.git").string(), "rev-parse", "-q", "--verify", "swarm/c"}, copy).exit == 0);
  CHECK(ws.git({"--git-dir", (moved / ".swarm/hub.git").string(), "rev-parse", "-q", "--verify", "swarm/c"}, moved).exit == 1);
}

TEST_CASE("Up_AMissingHubIsExit6NeverANewOne") {
  // the workspace's own hub deleted: up is exit 6 naming it and makes no new, empty hub; a config of an older
  // swarm that names the hub by the workspace's old path finds the one it has.
  SwarmWorkspace ws;
  const auto config = ws.root() / ".swarm/config.json";
  auto json = swarm::Json::parse(read_file(config));
  // the old path is inside the test's own folder: a swarm that wrongly makes a hub there harms nothing else
  json.set("hub", (ws.root().parent_path() / "gone/.swarm/hub.git").string());
  write_file(config, json.dump());
  auto legacy = ws.swarm({"up", "--json"});
  REQUIRE_MESSAGE(legacy.exit == 0, legacy.err);
  CHECK(field(json_of(legacy), "hub") == (ws.root() / ".swarm/hub.git").string());
  CHECK(field(swarm::Json::parse(read_file(config)), "hub") == ".swarm/hub.git");

  std::filesystem::remove_all(ws.root() / ".swarm/hub.git");
  auto up = ws.swarm({"up"});
  CHECK(up.exit == 6);
  CHECK(up.err.find(".swarm/hub.git") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(ws.root() / ".swarm/hub.git"));
  CHECK(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 6);
}
