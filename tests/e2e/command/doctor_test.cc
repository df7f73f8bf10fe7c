// swarm doctor and status --watch, each condition made for real.
#include <doctest/doctest.h>

#include <signal.h>

#include <thread>

#include "e2e/swarm_fixture.h"
#include "kv/bucket.h"
#include "support/json_fields.h"
#include "swarm/slots/session.h"

using namespace testing;
using namespace std::chrono_literals;

namespace {

struct Doctor {
  int exit;
  swarm::Json doc;
  std::string err;
};

Doctor doctor(const SwarmWorkspace& ws, std::vector<std::string> args = {},
              const std::map<std::string, std::string>& env = kHostA) {
  args.insert(args.begin(), "doctor");
  args.push_back("--json");
  auto r = ws.swarm(args, env);
  auto doc = json_of(r);
  REQUIRE_MESSAGE(doc, "doctor printed: " << r.out << r.err);
  CHECK(field(doc, "schema") == "swarm.doctor.v1");
  return {r.exit, std::move(doc), r.err};
}

// The findings of a report with the given check name.
std::vector<swarm::Json> findings(const Doctor& d, const std::string& check) {
  std::vector<swarm::Json> out;
  cJSON* item = nullptr;
  cJSON_ArrayForEach(item, cJSON_GetObjectItem(d.doc.get(), "findings")) {
    if (testing::text_of(item, "check") == check)
      out.push_back(swarm::Json::copy(item));
  }
  return out;
}

int finding_count(const Doctor& d) { return cJSON_GetArraySize(cJSON_GetObjectItem(d.doc.get(), "findings")); }

bool fixed(const swarm::Json& finding) { return cJSON_IsTrue(cJSON_GetObjectItem(finding.get(), "fixed")); }

// Changes one number in the workspace's config.json, as an operator might.
void set_config(const SwarmWorkspace& ws, const char* key, std::int64_t value) {
  auto path = ws.root() / ".swarm/config.json";
  auto config = swarm::Json::parse(read_file(path));
  config.set(key, value);
  write_file(path, config.dump());
}

// The recovery folder salvaged from `slot` (there must be exactly one).
std::filesystem::path recovery_of(const SwarmWorkspace& ws, const std::string& slot) {
  std::vector<std::filesystem::path> found;
  for (const auto& dir : std::filesystem::directory_iterator(ws.root() / ".swarm/recovery"))
    if (dir.path().filename().string().rfind(slot + "-", 0) == 0) found.push_back(dir.path());
  REQUIRE(found.size() == 1);
  return found[0];
}

void wait_until_gone(const SwarmWorkspace& ws, const std::string& slot) {
  auto deadline = std::chrono::steady_clock::now() + 15s;
  while (ws.swarm({"status", "--slot", slot}).exit == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(200ms);
  REQUIRE(ws.swarm({"status", "--slot", slot}).exit == 4);
}

}  // namespace

TEST_CASE("Doctor_HealthyWorkspaceIsExit0") {
  // a fresh workspace with a live session has nothing to report.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  auto d = doctor(ws);
  CHECK(d.exit == 0);
  CHECK(finding_count(d) == 0);
  CHECK(cJSON_IsTrue(cJSON_GetObjectItem(d.doc.get(), "healthy")));
  auto human = ws.swarm({"doctor"});
  CHECK(human.out.find("healthy") != std::string::npos);
}

TEST_CASE("Doctor_DeadAgentLeavesAnOrphanFolderThatFixSalvages") {
  // the record expired (the agent died): the folder is reported, --fix salvages and removes it, again is a no-op.
  SwarmWorkspace ws({.up_args = {"--ttl", "2s"}});
  REQUIRE(ws.swarm({"join", "--slot", "dead", "--task", "T-1"}).exit == 0);
  write_file(ws.worktree("dead") / "wip/notes.txt", "unsaved thoughts\n");
  wait_until_gone(ws, "dead");

  auto report = doctor(ws);
  CHECK(report.exit == 8);
  auto orphans = findings(report, "orphan_folder");
  REQUIRE(orphans.size() == 1);
  CHECK(field(orphans[0], "subject") == "dead");
  CHECK(field(orphans[0], "severity") == "problem");
  CHECK(field(orphans[0], "fix").find("swarm doctor --fix") == 0);
  CHECK(std::filesystem::exists(ws.worktree("dead")));  // read-only

  auto fix = doctor(ws, {"--fix"});
  CHECK(fix.exit == 0);
  REQUIRE(findings(fix, "orphan_folder").size() == 1);
  CHECK(fixed(findings(fix, "orphan_folder")[0]));
  CHECK_FALSE(std::filesystem::exists(ws.root() / ".swarm/slots/dead"));
  auto recovered = std::filesystem::directory_iterator(ws.root() / ".swarm/recovery")->path();
  CHECK(read_file(recovered / "wip/notes.txt") == "unsaved thoughts\n");

  auto again = doctor(ws, {"--fix"});
  CHECK(again.exit == 0);
  CHECK(finding_count(again) == 0);
}

TEST_CASE("Doctor_StaleAndLateSessions") {
  // a session past 2/3 of the TTL is a stale problem (--fix removes it and its folder); past 1/3 a late notice.
  SwarmWorkspace ws({.up_args = {"--ttl", "9s"}});
  REQUIRE(ws.swarm({"join", "--slot", "old", "--task", "T-1"}).exit == 0);
  std::this_thread::sleep_for(3200ms);
  REQUIRE(ws.swarm({"join", "--slot", "mid", "--task", "T-2"}).exit == 0);
  std::this_thread::sleep_for(3200ms);  // old: ~6.4s of 9s (stale from 6s); mid: ~3.2s (late from 3s)

  auto report = doctor(ws);
  CHECK(report.exit == 8);
  auto stale = findings(report, "stale_session");
  REQUIRE(stale.size() == 1);
  CHECK(field(stale[0], "subject") == "old");
  auto late = findings(report, "late_session");
  REQUIRE(late.size() == 1);
  CHECK(field(late[0], "subject") == "mid");
  CHECK(field(late[0], "severity") == "notice");
  CHECK(field(late[0], "fix") == "swarm renew --slot mid");

  auto fix = doctor(ws, {"--fix"});
  CHECK(fix.exit == 0);  // only the late notice remains
  CHECK(ws.swarm({"status", "--slot", "old"}).exit == 4);
  CHECK_FALSE(std::filesystem::exists(ws.root() / ".swarm/slots/old"));
  CHECK(ws.swarm({"status", "--slot", "mid"}).exit == 0);  // a notice is never "fixed" away
  REQUIRE(ws.swarm({"renew", "--slot", "mid"}).exit == 0);
  auto again = doctor(ws, {"--fix"});
  CHECK(again.exit == 0);
  CHECK(finding_count(again) == 0);
}

TEST_CASE("Doctor_CorruptRecordIsRemovedByFix") {
  // a raw corrupt value is reported with its reason; --fix removes it; a second --fix finds nothing.
  SwarmWorkspace ws;
  {
    auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
    kv::Bucket::open(connection, ws.names().sessions).create("junk", "[1,2,3]");
  }
  auto report = doctor(ws);
  CHECK(report.exit == 8);
  auto corrupt = findings(report, "corrupt_record");
  REQUIRE(corrupt.size() == 1);
  CHECK(field(corrupt[0], "message").find("not a JSON object") != std::string::npos);
  CHECK(field(corrupt[0], "fix").find("swarm evict --slot junk") != std::string::npos);
  CHECK(doctor(ws, {"--fix"}).exit == 0);
  CHECK(ws.swarm({"status", "--slot", "junk"}).exit == 4);
  CHECK(finding_count(doctor(ws, {"--fix"})) == 0);
}

TEST_CASE("Doctor_RecordOfThisHostWithoutFolder") {
  // a live record whose slot folder was deleted is reported; --fix removes the record.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  std::filesystem::remove_all(ws.root() / ".swarm/slots/s");
  auto report = doctor(ws);
  CHECK(report.exit == 8);
  REQUIRE(findings(report, "missing_folder").size() == 1);
  CHECK(doctor(ws, {"--fix"}).exit == 0);
  CHECK(ws.swarm({"status", "--slot", "s"}).exit == 4);
  CHECK(finding_count(doctor(ws, {"--fix"})) == 0);
}

TEST_CASE("Doctor_ALiveSessionWhoseWorktreeWasRemovedIsAProblem") {
  // a live record of this host whose worktree (not its folder) was deleted: commit fails for it, so doctor
  // says so and names the join that makes it again; that join clears it.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  std::filesystem::remove_all(ws.worktree("s"));
  CHECK(ws.swarm({"commit", "--slot", "s", "-m", "x"}).exit != 0);
  auto report = doctor(ws);
  CHECK(report.exit == 8);
  const auto missing = findings(report, "missing_worktree");
  REQUIRE(missing.size() == 1);
  CHECK(field(missing[0], "fix").find("--force") != std::string::npos);
  CHECK(findings(report, "missing_folder").empty());
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1", "--force"}).exit == 0);
  CHECK(std::filesystem::exists(ws.worktree("s") / ".git"));
  CHECK(doctor(ws).exit == 0);
}

TEST_CASE("Doctor_AnotherHostsProblemIsLeftToThatHost") {
  // --fix never touches another host's stale record; it names the command for that host or evict.
  SwarmWorkspace ws({.up_args = {"--ttl", "6s"}});
  REQUIRE(ws.swarm({"join", "--slot", "theirs", "--task", "T-1"}, kHostB).exit == 0);
  std::this_thread::sleep_for(4200ms);  // stale at 4s; the server drops it at 6s
  auto fix = doctor(ws, {"--fix"}, kHostA);
  CHECK(fix.exit == 8);
  auto stale = findings(fix, "stale_session");
  REQUIRE(stale.size() == 1);
  CHECK_FALSE(fixed(stale[0]));
  CHECK(field(stale[0], "fix").find("on host-b: swarm doctor --fix") == 0);
  CHECK(field(stale[0], "fix").find("swarm evict --slot theirs") != std::string::npos);
  CHECK(ws.swarm({"status", "--slot", "theirs"}).exit == 0);
  // On host B the same fix works.
  CHECK(doctor(ws, {"--fix"}, kHostB).exit == 0);
  CHECK(ws.swarm({"status", "--slot", "theirs"}).exit == 4);
}

TEST_CASE("Doctor_BucketUnlikeTheConfigNamesAFixThatWorks") {
  // a bucket whose TTL or replicas differ from config.json is a problem; the command it names makes doctor healthy.
  SwarmWorkspace ws;  // bucket made with 5m and 1 replica
  struct Case {
    const char* key;
    std::int64_t value;
    std::string message;
    std::vector<std::string> fix;  // the arguments of `swarm up` the finding names
  };
  for (const auto& c : {Case{"ttl_ms", 60000, "TTL 5m but config.json says 1m", {"--ttl", "5m"}},
                        Case{"replicas", 3, "1 replica(s) but config.json says 3", {"--replicas", "1"}}}) {
    set_config(ws, c.key, c.value);
    auto report = doctor(ws);
    CHECK(report.exit == 8);
    auto diff = findings(report, "bucket_config");
    REQUIRE(diff.size() == 1);
    CHECK(field(diff[0], "message").find(c.message) != std::string::npos);
    CHECK(field(diff[0], "fix").find("swarm up " + c.fix[0] + " " + c.fix[1]) == 0);
    std::vector<std::string> up = {"up", "--nats-url", ws.server()->url()};
    up.insert(up.end(), c.fix.begin(), c.fix.end());
    REQUIRE(ws.swarm(up).exit == 0);
    CHECK(doctor(ws).exit == 0);
  }
}

TEST_CASE("Doctor_StoppedServerIsReportedAndFilesystemChecksStillRun") {
  // NATS down: reported within the timeout, never restarted; a dead pid file and a missing hub are still found.
  SwarmWorkspace ws({.embedded = true});
  REQUIRE(ws.swarm({"down"}).exit == 0);
  std::filesystem::rename(ws.root() / ".swarm/hub.git", ws.root() / "hub-moved");
  auto start = std::chrono::steady_clock::now();
  auto report = doctor(ws, {"--timeout", "2s"});
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  CHECK(report.exit == 8);
  CHECK(findings(report, "nats").size() == 1);
  CHECK(cJSON_IsFalse(cJSON_GetObjectItem(report.doc.get(), "nats_reachable")));
  auto server = findings(report, "embedded_server");
  REQUIRE(server.size() == 1);
  CHECK(field(server[0], "message").find("not running") != std::string::npos);
  CHECK(field(server[0], "fix") == "swarm up");
  CHECK(findings(report, "hub").size() == 1);
  // --fix does not start a server either.
  CHECK(doctor(ws, {"--fix", "--timeout", "1s"}).exit == 8);
  CHECK(ws.swarm({"status", "--timeout", "1s"}).exit == 7);
}

TEST_CASE("StatusWatch_SeesJoinAndCloseArrive") {
  // status --watch --json prints the snapshot, then one line per change, and ends cleanly on SIGINT.
  SwarmWorkspace ws;
  Process watcher(ws.command({"status", "--watch", "--json"}));
  auto first = watcher.read_line(10s);
  REQUIRE(first);
  auto snapshot = swarm::Json::parse(*first);
  REQUIRE(snapshot);
  CHECK(field(snapshot, "schema") == "swarm.status.v1");
  CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(snapshot.get(), "sessions")) == 0);

  REQUIRE(ws.swarm({"join", "--slot", "w", "--task", "T-1"}).exit == 0);
  auto joined = watcher.read_line(10s);
  REQUIRE(joined);
  auto put = swarm::Json::parse(*joined);
  REQUIRE(put);
  cJSON* change = cJSON_GetObjectItem(put.get(), "change");
  CHECK(testing::text_of(change, "event") == "put");
  CHECK(testing::text_of(change, "slot") == "w");
  CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(put.get(), "sessions")) == 1);

  REQUIRE(ws.swarm({"close", "--slot", "w", "--no-artifact"}).exit == 0);
  auto closed = watcher.read_line(10s);
  REQUIRE(closed);
  auto del = swarm::Json::parse(*closed);
  REQUIRE(del);
  change = cJSON_GetObjectItem(del.get(), "change");
  CHECK(testing::text_of(change, "event") == "delete");
  CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(del.get(), "sessions")) == 0);

  watcher.signal(SIGINT);
  auto end = watcher.wait(5s);
  CHECK(end.exit == 0);
}

TEST_CASE("Doctor_KeyThatIsNoSlotNameAndAFileForAWorktree") {
  // a key no verb can name is a corrupt record that --fix removes; slot folders whose wt is a file, or a broken
  // repository, are salvaged whole; none stops the run.
  SwarmWorkspace ws;
  {
    auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
    kv::Bucket::open(connection, ws.names().sessions).create("x.y", R"({"slot":"x.y","host":"host-a"})");
  }
  std::filesystem::create_directories(ws.root() / ".swarm/slots/zz");
  write_file(ws.root() / ".swarm/slots/zz/wt", "junk where the worktree should be\n");
  // A worktree whose repository is broken, with an untracked nested repository in it.
  auto broken = ws.root() / ".swarm/slots/yy/wt";
  write_file(broken / ".git/HEAD", "not a ref\n");
  write_file(broken / "a.txt", "a\n");
  write_file(broken / "sub/b.txt", "b\n");
  write_file(broken / "sub/.git/HEAD", "ref: refs/heads/main\n");

  auto report = doctor(ws);
  CHECK(report.exit == 8);
  auto corrupt = findings(report, "corrupt_record");
  REQUIRE(corrupt.size() == 1);
  CHECK(field(corrupt[0], "subject") == "x.y");
  CHECK(field(corrupt[0], "message").find("not a valid slot name") != std::string::npos);
  CHECK(field(corrupt[0], "fix") == "swarm doctor --fix");  // evict cannot name it
  REQUIRE(findings(report, "orphan_folder").size() == 2);

  auto fix = doctor(ws, {"--fix"});
  CHECK_MESSAGE(fix.exit == 0, fix.err);
  CHECK(fixed(findings(fix, "corrupt_record")[0]));
  for (const auto& f : findings(fix, "orphan_folder")) CHECK(fixed(f));
  CHECK_FALSE(std::filesystem::exists(ws.root() / ".swarm/slots/zz"));
  CHECK_FALSE(std::filesystem::exists(ws.root() / ".swarm/slots/yy"));
  CHECK(read_file(recovery_of(ws, "zz") / "wt") == "junk where the worktree should be\n");
  auto yy = recovery_of(ws, "yy");
  CHECK(read_file(yy / "a.txt") == "a\n");
  CHECK(read_file(yy / "sub/b.txt") == "b\n");
  CHECK(read_file(yy / "sub/.git/HEAD") == "ref: refs/heads/main\n");
  CHECK(read_file(yy / ".git/HEAD") == "not a ref\n");  // the broken repository, kept whole
  CHECK(finding_count(doctor(ws, {"--fix"})) == 0);
}

TEST_CASE("Doctor_SessionOfAnotherWorkspaceOnTheSameBucketIsLeftAlone") {
  // two workspaces of one host sharing a bucket (made before names: both on the shared ones): --fix in one never
  // removes the other's live sessions, and their records do not hide its own dead slots.
  SwarmWorkspace first;
  make_unnamed(first);
  REQUIRE(first.swarm({"up"}).exit == 0);
  SwarmWorkspace second({.up = false});
  REQUIRE(second.swarm({"up", "--nats-url", first.server()->url()}).exit == 0);
  make_unnamed(second);
  REQUIRE(second.swarm({"up"}).exit == 0);
  REQUIRE(first.swarm({"join", "--slot", "live", "--task", "T-1"}).exit == 0);
  // The second workspace has a dead slot of the same name: that record is not its record.
  write_file(second.root() / ".swarm/slots/live/wt/left.txt", "left behind\n");
  auto report = doctor(second);
  CHECK(report.exit == 8);
  REQUIRE(findings(report, "orphan_folder").size() == 1);

  auto fix = doctor(second, {"--fix"});
  CHECK(fix.exit == 0);  // the folder is fixed; the other workspace's session is a notice
  auto other = findings(fix, "other_workspace");
  REQUIRE(other.size() == 1);
  CHECK_FALSE(fixed(other[0]));
  CHECK(field(other[0], "fix").find("--bucket") != std::string::npos);
  CHECK(findings(fix, "missing_folder").empty());
  CHECK(fixed(findings(fix, "orphan_folder")[0]));
  CHECK_FALSE(std::filesystem::exists(second.root() / ".swarm/slots/live"));
  CHECK(first.swarm({"status", "--slot", "live"}).exit == 0);
  CHECK(std::filesystem::exists(first.worktree("live")));
}

TEST_CASE("Doctor_ThousandsOfOtherHostsRecordsHideNoProblem") {
  // past the parallel parse (3,000 records): the fresh sessions of another host are no finding, and hold no folder
  // of theirs up for removal; a corrupt record, this host's record without folder and a folder without record are.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "mine", "--task", "T-mine"}).exit == 0);
  std::filesystem::remove_all(ws.root() / ".swarm/slots/mine");
  {
    auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
    auto bucket = kv::Bucket::open(connection, ws.names().sessions);
    for (int i = 0; i < 3000; ++i) {
      swarm::Session s;
      s.slot = "b" + std::to_string(i);
      s.task_id = "T-b" + std::to_string(i);
      s.host = "host-b";
      s.host_id = "id-b";
      s.started_at = std::chrono::system_clock::now();
      s.last_renewed = s.started_at;
      bucket.create(s.slot, swarm::to_json(s));
    }
    bucket.create("junk", "[1,2,3]");
  }
  std::filesystem::create_directories(ws.root() / ".swarm/slots/ghost");
  std::filesystem::create_directories(ws.root() / ".swarm/slots/b5/wt");
  auto report = doctor(ws);
  CHECK(report.exit == 8);
  CHECK(findings(report, "corrupt_record").size() == 1);
  CHECK(findings(report, "missing_folder").size() == 1);
  auto orphans = findings(report, "orphan_folder");
  REQUIRE(orphans.size() == 1);
  CHECK(field(orphans[0], "subject") == "ghost");
  CHECK(finding_count(report) == 3);
}
