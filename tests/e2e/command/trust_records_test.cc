// The trust boundaries around what others wrote (adr/0018): hostile records that
// must not drive the terminal or break JSON, a replaced agent acting with its
// old session token, and another user's process that swarm must never signal.
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <map>
#include <optional>
#include <thread>

#include "e2e/swarm_fixture.h"
#include "kv/bucket.h"
#include "support/json_fields.h"
#include "swarm/base/text.h"

using namespace testing;
namespace fs = std::filesystem;

namespace {

bool has_control_bytes(const std::string& text) {
  for (unsigned char c : text)
    if ((c < 0x20 && c != '\n') || c == 0x7f) return true;
  return false;
}

kv::Bucket sessions_of(SwarmWorkspace& ws, std::optional<kv::Connection>& keep) {
  keep.emplace(kv::Connection::connect({.urls = {ws.server()->url()}}));
  return kv::Bucket::open(*keep, ws.names().sessions);
}

}  // namespace

TEST_CASE("Trust_HostileRecordsCannotDriveTheTerminalOrBreakJson") {
  // a record with ESC/CR in it shows escaped; one of invalid UTF-8 is corrupt; --json parses as UTF-8 JSON.
  SwarmWorkspace ws;
  std::optional<kv::Connection> keep;
  auto bucket = sessions_of(ws, keep);
  bucket.create("esc", R"({"slot":"esc","host":"h\u001b[2J","task_id":"T\u001b]0;pwned\u0007\rFAKE  ROW"})");
  bucket.create("utf", std::string(R"({"slot":"utf","host":"h","task_id":"bad )") + "\xff\xfe" + R"("})");
  bucket.create("raw", std::string(R"({"slot":"raw","host":"h","task_id":"a)") + "\x1b" + R"(b"})");
  auto status = ws.swarm({"status"});
  REQUIRE(status.exit == 0);
  CHECK_FALSE(has_control_bytes(status.out));
  CHECK(status.out.find("\\x1b]0;pwned") != std::string::npos);
  CHECK(status.out.find("utf") != std::string::npos);
  CHECK(status.out.find("corrupt: the value is not valid UTF-8") != std::string::npos);
  CHECK(status.out.find("corrupt: a string in the value holds a raw control character") != std::string::npos);
  auto json = ws.swarm({"status", "--json"});
  REQUIRE(json.exit == 0);
  CHECK(swarm::is_valid_utf8(json.out));
  CHECK(swarm::strict_json_problem(json.out).empty());
  CHECK(json_of(json));
  auto doctor = ws.swarm({"doctor"});
  CHECK_FALSE(has_control_bytes(doctor.out));
  CHECK(swarm::is_valid_utf8(ws.swarm({"doctor", "--json"}).out));
  // A hostile lease holder, in lease list.
  auto leases = kv::Bucket::open(*keep, ws.names().leases);
  leases.create("evil", R"({"name":"evil","holder":"x\u001b[31mred\r","host":"h","ttl_ms":60000,"token":0})");
  auto list = ws.swarm({"lease", "list"});
  REQUIRE(list.exit == 0);
  CHECK_FALSE(has_control_bytes(list.out));
  CHECK(list.out.find("\\x1b[31mred") != std::string::npos);
  // Errors quoting a record are escaped too (a bad name, echoed back).
  auto bad = ws.swarm({"join", "--slot", "s", "--task", "T\x1b[2J"});
  CHECK(bad.exit == 2);
  CHECK_FALSE(has_control_bytes(bad.err));
}

TEST_CASE("Trust_AReplacedAgentCannotActOnItsSuccessorsSession") {
  // join --env gives the agent its session token; after a successor's join --force its close, commit and renew exit 3.
  SwarmWorkspace ws;
  auto first = ws.swarm({"join", "--slot", "s", "--task", "T-1", "--env"});
  REQUIRE_MESSAGE(first.exit == 0, first.err);
  CHECK(first.out.find("export SWARM_SLOT='s'\n") != std::string::npos);
  CHECK(first.out.find("export SWARM_WORKTREE='" + fs::weakly_canonical(ws.worktree("s")).string() + "'") !=
        std::string::npos);
  auto at = first.out.find("export SWARM_SESSION=");
  REQUIRE(at != std::string::npos);
  const std::string old_token = first.out.substr(at + 21, first.out.find('\n', at) - at - 21);
  // The token survives renewals: still the same session.
  REQUIRE(ws.swarm({"renew", "--slot", "s", "--session", old_token}).exit == 0);
  REQUIRE(ws.swarm({"renew", "--slot", "s", "--session", old_token}).exit == 0);
  auto successor = ws.swarm({"join", "--slot", "s", "--task", "T-2", "--force", "--json"});
  REQUIRE(successor.exit == 0);
  const double new_token = number(json_of(successor), "session_token");
  CHECK(new_token > std::stod(old_token));
  write_file(ws.worktree("s") / "successor.txt", "the successor's work\n");
  std::map<std::string, std::string> old_agent = {{"SWARM_HOST", "host-a"}, {"SWARM_HOST_ID", "id-a"},
                                                  {"SWARM_SESSION", old_token}};
  for (auto args : std::vector<std::vector<std::string>>{{"close", "--slot", "s", "--result", "fail"},
                                                         {"commit", "--slot", "s", "-m", "old"},
                                                         {"renew", "--slot", "s"}}) {
    auto r = ws.swarm(args, old_agent);
    CHECK_MESSAGE(r.exit == 3, args[0] << ": " << r.err);
    CHECK(r.err.find("T-2") != std::string::npos);  // names the session that holds the slot now
  }
  CHECK(read_file(ws.worktree("s") / "successor.txt") == "the successor's work\n");
  auto status = json_of(ws.swarm({"status", "--json", "--slot", "s"}));
  const cJSON* session = cJSON_GetArrayItem(cJSON_GetObjectItem(status.get(), "sessions"), 0);
  REQUIRE(session != nullptr);
  CHECK(testing::number_of(session, "session_token") == new_token);
  CHECK(testing::text_of(session, "task_id") == "T-2");
  // The successor's own token works; no token at all is host ownership, as before.
  CHECK(ws.swarm({"renew", "--slot", "s", "--session", std::to_string(static_cast<long long>(new_token))}).exit == 0);
  CHECK(ws.swarm({"renew", "--slot", "s", "--session", "abc"}).exit == 2);
  CHECK(ws.swarm({"close", "--slot", "s", "--result", "fail"}).exit == 0);
}

TEST_CASE("Trust_RecordTextIsEscapedInDebugLines") {
  // a hostile holder quoted by --log-level debug lines reaches the terminal escaped.
  SwarmWorkspace ws;
  {
    auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
    kv::Bucket::open(connection, ws.names().leases)
        .create("evil2", R"({"name":"evil2","holder":"x\u001b]0;PWNED\u0007\u001b[31mred","host":"h","ttl_ms":60000})");
  }
  auto r = ws.swarm({"--log-level", "debug", "lock", "evil2", "--wait", "1s", "--", "true"});
  CHECK(r.exit == 3);
  CHECK(r.err.find("PWNED") != std::string::npos);
  CHECK_FALSE(has_control_bytes(r.err));
}

TEST_CASE("Trust_AnotherUsersProcessIsNeverSignalled") {
  // a process of another user that looks like a server on the workspace's store: down and up leave it alone.
  if (::geteuid() != 0) return;  // only root can run a process as another user here
  SwarmWorkspace ws({.embedded = true});
  const std::string store = (ws.root() / ".swarm/nats/data").string();
  Process impostor({{"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/bash", "-c",
                     "exec -a nats-server /bin/sh -c 'sleep 30; exit 0' x -sd " + store}});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  REQUIRE(::kill(impostor.pid(), 0) == 0);
  REQUIRE(ws.swarm({"down"}).exit == 0);
  REQUIRE(ws.swarm({"up"}).exit == 0);
  // Still running (a zombie would answer kill(0) too: its state tells).
  const std::string stat = read_file("/proc/" + std::to_string(impostor.pid()) + "/stat");
  CHECK(stat.substr(stat.rfind(')') + 2, 1) != "Z");
  impostor.signal(SIGKILL);
  impostor.wait(std::chrono::seconds(5));
}
