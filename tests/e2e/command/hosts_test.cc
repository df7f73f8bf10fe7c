// Several hosts, one workspace: two checkouts playing two hosts (SWARM_HOST,
// SWARM_HOST_ID, each its own $HOME) share a 3-node NATS cluster and a hub
// served over the network, by `git daemon` (git://) or by `sshd` (ssh://).
#include <doctest/doctest.h>

#include <set>
#include <thread>

#include "e2e/swarm_fixture.h"
#include "support/git_servers.h"

using namespace testing;
using namespace std::chrono_literals;

namespace {

// `swarm up --json` on a fresh cluster, retried while it elects its JetStream
// leader: only while the exit is 7 (NATS not ready), so that the hub's own
// refusals (2, 6) come back at once.
RunResult up_on(const NatsCluster& cluster, const SwarmWorkspace& ws, std::vector<std::string> args,
                const std::map<std::string, std::string>& host) {
  args.insert(args.begin(), "--json");
  return up_on_cluster(ws, cluster, args, host, [](int exit) { return exit == 7; });
}

// doctor finds nothing wrong but, on a leg whose servers are older than 2.10,
// the replicated workspace on them (a problem, exit 8, said and nothing else);
// notices do not count. Returns what doctor --json said.
RunResult check_healthy(const SwarmWorkspace& ws, const std::map<std::string, std::string>& host) {
  auto doctor = ws.swarm({"doctor", "--json"}, host);
  auto doc = json_of(doctor);
  REQUIRE_MESSAGE(doc, doctor.err);
  std::set<std::string> problems;
  const cJSON* f = nullptr;
  cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(doc.get(), "findings")) {
    const cJSON* severity = cJSON_GetObjectItemCaseSensitive(f, "severity");
    const cJSON* check = cJSON_GetObjectItemCaseSensitive(f, "check");
    if (cJSON_IsString(severity) && std::string(severity->valuestring) == "problem" && cJSON_IsString(check))
      problems.insert(check->valuestring);
  }
  if (problems.empty()) {
    CHECK(doctor.exit == 0);
  } else {
    CHECK_MESSAGE(problems == std::set<std::string>{"nats_server_version"}, doctor.out);
    CHECK(doctor.exit == 8);
  }
  return doctor;
}

bool has_field_true(const swarm::Json& json, const char* name) {
  return json && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(json.get(), name));
}

// The hosts that `status --json` shows, slot by slot.
std::map<std::string, std::string> hosts_by_slot(const RunResult& status) {
  std::map<std::string, std::string> out;
  auto json = json_of(status);
  const cJSON* sessions = json ? cJSON_GetObjectItemCaseSensitive(json.get(), "sessions") : nullptr;
  const cJSON* s = nullptr;
  cJSON_ArrayForEach(s, sessions) {
    out[cJSON_GetObjectItemCaseSensitive(s, "slot")->valuestring] = cJSON_GetObjectItemCaseSensitive(s, "host")->valuestring;
  }
  return out;
}

// The branches of a bare repository, by the real git.
std::string branches_of(const std::filesystem::path& repo) {
  return run(Command{{"/usr/bin/git", "--git-dir", repo.string(), "for-each-ref", "--format=%(refname)"}, {}, {}}).out;
}

// Both hosts work on the shared hub at `hub_url`: each joins its own slot,
// commits and sees the other's session; the other host's slot is refused;
// a slot closed on one host is resumed on the other with its commits.
// `seeded`: A's up seeded the hub before (else this up seeds it).
void two_hosts_share(const NatsCluster& cluster, SwarmWorkspace& a, SwarmWorkspace& b, const std::string& hub_url,
                     const std::filesystem::path& hub_path, bool seeded = false) {
  auto up_a = up_on(cluster, a, {"--replicas", "3", "--hub", hub_url}, kHostA);
  REQUIRE_MESSAGE(up_a.exit == 0, up_a.err);
  CHECK(has_field_true(json_of(up_a), "created_hub") == !seeded);  // an empty hub is seeded from A's checkout
  CHECK(field(json_of(up_a), "hub") == hub_url);
  CHECK(branches_of(hub_path).find("refs/heads/trunk") != std::string::npos);

  // B joins with one command: no --replicas or --ttl, it takes the buckets'.
  auto up_b = up_on(cluster, b, {"--hub", hub_url}, kHostB);
  REQUIRE_MESSAGE(up_b.exit == 0, up_b.err);
  CHECK(has_field_true(json_of(up_b), "found_buckets"));
  CHECK_FALSE(has_field_true(json_of(up_b), "created_hub"));
  CHECK(number(json_of(up_b), "replicas") == 3);

  REQUIRE(a.swarm({"join", "--slot", "ui", "--task", "T-ui"}, kHostA).exit == 0);
  auto join_b = b.swarm({"join", "--slot", "api", "--task", "T-api"}, kHostB);
  REQUIRE_MESSAGE(join_b.exit == 0, join_b.err);
  // B's clone came from the shared hub: it has A's workspace file.
  CHECK(std::filesystem::exists(b.worktree("api") / "README.txt"));

  write_file(a.worktree("ui") / "ui.txt", "from host a\n");
  write_file(b.worktree("api") / "api.txt", "from host b\n");
  auto commit_a = a.swarm({"commit", "--slot", "ui", "-m", "ui", "--json"}, kHostA);
  auto commit_b = b.swarm({"commit", "--slot", "api", "-m", "api", "--json"}, kHostB);
  CHECK_MESSAGE(has_field_true(json_of(commit_a), "pushed"), commit_a.err);
  CHECK_MESSAGE(has_field_true(json_of(commit_b), "pushed"), commit_b.err);
  std::string refs = branches_of(hub_path);
  CHECK(refs.find("refs/heads/swarm/ui") != std::string::npos);
  CHECK(refs.find("refs/heads/swarm/api") != std::string::npos);

  // Each host sees both sessions.
  auto expected = std::map<std::string, std::string>{{"api", "host-b"}, {"ui", "host-a"}};
  CHECK(hosts_by_slot(a.swarm({"status", "--json"}, kHostA)) == expected);
  CHECK(hosts_by_slot(b.swarm({"status", "--json"}, kHostB)) == expected);

  // The foreign-host rules hold across hosts, and touch nothing.
  CHECK(b.swarm({"join", "--slot", "ui", "--task", "T-x"}, kHostB).exit == 5);
  CHECK(b.swarm({"commit", "--slot", "ui", "-m", "x"}, kHostB).exit == 5);
  CHECK(b.swarm({"close", "--slot", "ui"}, kHostB).exit == 5);
  CHECK(a.swarm({"renew", "--slot", "api"}, kHostA).exit == 5);
  CHECK(read_file(a.worktree("ui") / "ui.txt") == "from host a\n");

  // A closes ui; B takes it up and finds A's commit, from the hub.
  auto close_a = a.swarm({"close", "--slot", "ui"}, kHostA);
  REQUIRE_MESSAGE(close_a.exit == 0, close_a.err);
  auto resume = b.swarm({"join", "--slot", "ui", "--task", "T-ui"}, kHostB);
  REQUIRE_MESSAGE(resume.exit == 0, resume.err);
  CHECK(read_file(b.worktree("ui") / "ui.txt") == "from host a\n");
  // Nothing committed since B took it up: the artifact gate says so, over the network too.
  CHECK(b.swarm({"close", "--slot", "ui"}, kHostB).exit == 3);
  CHECK(b.swarm({"close", "--slot", "ui", "--result", "fail"}, kHostB).exit == 0);
  // A commit made with plain git, never pushed: close pushes it on the slot's branch of the shared hub.
  REQUIRE(b.git({"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "local only"},
                b.worktree("api"))
              .exit == 0);
  const std::string head = b.git({"rev-parse", "HEAD"}, b.worktree("api")).out;
  auto close_api = b.swarm({"close", "--slot", "api"}, kHostB);
  CHECK_MESSAGE(close_api.exit == 0, close_api.err);
  CHECK(run(Command{{"/usr/bin/git", "--git-dir", hub_path.string(), "rev-parse", "swarm/api"}, {}, {}}).out == head);
  CHECK(branches_of(hub_path).find("refs/recovery/api-") == std::string::npos);

  check_healthy(a, kHostA);
  check_healthy(b, kHostB);
}

// Before B has what SSH needs (the server's host key, its own key, a key
// file that exists): clear refusals, exit 2, and nothing written.
void refused_until_ssh_is_set_up(const NatsCluster& cluster, SshServer& sshd, SwarmWorkspace& a, SwarmWorkspace& b,
                                 const std::string& hub) {
  sshd.install_client(a.home());
  sshd.install_client(b.home(), /*with_key=*/false);
  std::filesystem::remove(b.home() / ".ssh" / "known_hosts");
  {
    // A first, so that the buckets exist and the refusals are the hub's.
    auto up_a = up_on(cluster, a, {"--replicas", "3", "--hub", hub}, kHostA);
    REQUIRE_MESSAGE(up_a.exit == 0, up_a.err);
  }
  auto unknown_host = up_on(cluster, b, {"--hub", hub}, kHostB);
  CHECK(unknown_host.exit == 2);
  CHECK(unknown_host.err.find("known_hosts") != std::string::npos);
  sshd.install_client(b.home(), /*with_key=*/false);
  sshd.install_stranger_key(b.home());
  auto refused = up_on(cluster, b, {"--hub", hub}, kHostB);
  CHECK(refused.exit == 2);
  CHECK(refused.err.find("refused every credential") != std::string::npos);
  CHECK(refused.err.find(hub) != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(b.root() / ".swarm/config.json"));

  sshd.install_client(b.home());
  auto missing_key = up_on(cluster, b, {"--hub", hub}, {{"SWARM_HOST", "host-b"}, {"SWARM_HOST_ID", "id-b"},
                                                        {"SWARM_SSH_KEY", (b.home() / "no-such-key").string()}});
  CHECK(missing_key.exit == 2);
  CHECK(missing_key.err.find("no-such-key is not a readable file") != std::string::npos);
}

// With the hub gone, B's slot "api" (one file written) keeps its work: a
// commit stands locally, a join and a close refuse, doctor names the hub.
void hub_gone_costs_no_work(SwarmWorkspace& b, const std::string& hub) {
  // commit: the local commit stands, the push is a warning.
  auto commit = b.swarm({"commit", "--slot", "api", "-m", "api", "--json"}, kHostB);
  CHECK(commit.exit == 0);
  CHECK_FALSE(has_field_true(json_of(commit), "pushed"));
  CHECK(commit.err.find("cannot be reached") != std::string::npos);
  CHECK(b.git({"log", "--format=%s", "-1"}, b.worktree("api")).out == "api\n");

  // join: exit 7 naming the hub, and no record or folder left behind.
  auto join = b.swarm({"join", "--slot", "web", "--task", "T-web"}, kHostB);
  CHECK(join.exit == 7);
  CHECK(join.err.find(hub) != std::string::npos);
  CHECK(b.swarm({"status", "--slot", "web"}, kHostB).exit == 4);
  CHECK_FALSE(std::filesystem::exists(b.root() / ".swarm/slots/web"));
  // The task's lease went with it: another join may take the task.
  CHECK(field(json_of(b.swarm({"lease", "show", "task.T-web", "--json"}, kHostB)), "state") != "held");

  // close: salvage needs the hub, so nothing is closed or removed.
  write_file(b.worktree("api") / "draft.txt", "uncommitted\n");
  auto close = b.swarm({"close", "--slot", "api", "--result", "fail"}, kHostB);
  CHECK(close.exit == 7);
  CHECK(read_file(b.worktree("api") / "draft.txt") == "uncommitted\n");
  CHECK(b.swarm({"status", "--slot", "api"}, kHostB).exit == 0);

  // doctor names the hub as the problem, with the way to fix it.
  auto doctor = b.swarm({"doctor", "--json"}, kHostB);
  CHECK(doctor.exit == 8);
  CHECK(doctor.out.find("\"check\":\"hub\"") != std::string::npos);
  CHECK(doctor.out.find("cannot be reached") != std::string::npos);
}

}  // namespace

TEST_CASE("Hosts_TwoHostsShareAGitDaemonHubAndACluster") {
  NatsCluster cluster;
  GitDaemon daemon;
  daemon.make_repository("app.git");
  SwarmWorkspace a({.up = false, .git_repo = true, .own_server = false});
  SwarmWorkspace b({.up = false, .own_server = false});
  two_hosts_share(cluster, a, b, daemon.url("app.git"), daemon.path("app.git"));
}

TEST_CASE("Hosts_TwoHostsShareAnSshHubAndLoseNothingWhenItIsGone") {
  NatsCluster cluster;
  SshServer sshd;
  const auto hub_path = sshd.make_repository("app.git");
  const std::string hub = sshd.url("app.git");
  SwarmWorkspace a({.up = false, .git_repo = true, .own_server = false});
  SwarmWorkspace b({.up = false, .own_server = false});

  // Before B has what SSH needs: clear refusals, exit 2, and nothing written.
  refused_until_ssh_is_set_up(cluster, sshd, a, b, hub);
  SUBCASE("two hosts share it") {
    // up again on A is idempotent; the rest as with git daemon.
    two_hosts_share(cluster, a, b, hub, hub_path, /*seeded=*/true);
  }
  SUBCASE("its loss costs no work") {
    auto up_b = up_on(cluster, b, {"--hub", hub}, kHostB);
    REQUIRE_MESSAGE(up_b.exit == 0, up_b.err);
    REQUIRE(b.swarm({"join", "--slot", "api", "--task", "T-api"}, kHostB).exit == 0);
    write_file(b.worktree("api") / "api.txt", "work\n");
    sshd.stop();
    hub_gone_costs_no_work(b, hub);

    // Back again: doctor notices the commit the hub lacks; commit pushes it
    // with nothing new; close salvages the draft and ends the slot.
    sshd.start();
    auto notice = check_healthy(b, kHostB);
    CHECK(notice.out.find("unpushed_branch") != std::string::npos);
    auto again = b.swarm({"commit", "--slot", "api", "-m", "nothing new", "--json"}, kHostB);
    CHECK_MESSAGE(has_field_true(json_of(again), "pushed"), again.err);
    CHECK(branches_of(hub_path).find("refs/heads/swarm/api") != std::string::npos);
    auto closed = b.swarm({"close", "--slot", "api", "--result", "fail", "--json"}, kHostB);
    CHECK_MESSAGE(closed.exit == 0, closed.err);
    check_healthy(b, kHostB);
  }
}
