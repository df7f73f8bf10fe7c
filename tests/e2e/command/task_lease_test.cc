// The task lease join takes: one slot per task, kept by the same slot, renewed
// with the session, released by close and evict.
#include <doctest/doctest.h>

#include <map>
#include <thread>
#include <vector>

#include "e2e/swarm_fixture.h"
#include "kv/bucket.h"
#include "support/json_fields.h"

using namespace testing;

namespace {

// The lease of a task as `lease list --json` shows it (empty when none).
swarm::Json task_lease(const SwarmWorkspace& ws, const std::string& task) {
  auto r = ws.swarm({"lease", "list", "--json"});
  auto doc = json_of(r);
  cJSON* item = nullptr;
  cJSON_ArrayForEach(item, cJSON_GetObjectItem(doc.get(), "leases")) {
    cJSON* t = cJSON_GetObjectItem(item, "task");
    if (cJSON_IsString(t) && task == t->valuestring) return swarm::Json::copy(item);
  }
  return {};
}

}  // namespace

TEST_CASE("TaskLease_OneSlotPerTaskKeptByTheSameSlot") {
  // join takes task.<id>; another slot joining that task is exit 3 naming the slot and writes nothing; a --force
  // rejoin of the same slot keeps the lease (same token); close releases it.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-42"}).exit == 0);
  auto lease = task_lease(ws, "T-42");
  REQUIRE(lease);
  CHECK(field(lease, "name") == "task.T-42");
  CHECK(field(lease, "slot") == "a");
  CHECK(field(lease, "state") == "held");
  CHECK(number(lease, "ttl_ms") == 300000);  // the session's TTL
  auto token = number(lease, "token");

  auto taken = ws.swarm({"join", "--slot", "b", "--task", "T-42"});
  CHECK(taken.exit == 3);
  CHECK(taken.err.find("slot a") != std::string::npos);
  CHECK(ws.swarm({"status", "--slot", "b"}).exit == 4);
  CHECK_FALSE(std::filesystem::exists(ws.worktree("b")));

  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-42", "--force"}).exit == 0);
  CHECK(number(task_lease(ws, "T-42"), "token") == token);

  REQUIRE(ws.swarm({"close", "--slot", "a", "--result", "fail"}).exit == 0);
  CHECK_FALSE(task_lease(ws, "T-42"));
  CHECK(ws.swarm({"join", "--slot", "b", "--task", "T-42"}).exit == 0);
}

TEST_CASE("TaskLease_AnyTaskIdOfTheContractWorks") {
  // ids that are no lease name get a hashed lease that keeps the id; the one-slot rule holds for them too.
  SwarmWorkspace ws;
  for (auto [slot, task] : std::vector<std::pair<std::string, std::string>>{
           {"a", "gh#17"}, {"b", "acme/api#9"}, {"c", "tâche é"}, {"d", "a..b"}}) {
    auto r = ws.swarm({"join", "--slot", slot, "--task", task});
    REQUIRE_MESSAGE(r.exit == 0, task << ": " << r.err);
    auto lease = task_lease(ws, task);
    REQUIRE_MESSAGE(lease, task);
    CHECK(field(lease, "name").rfind("task.h", 0) == 0);
    CHECK(field(lease, "slot") == slot);
  }
  CHECK(ws.swarm({"join", "--slot", "e", "--task", "gh#17"}).exit == 3);
  CHECK(ws.swarm({"join", "--slot", "e", "--task", "gh#18"}).exit == 0);
  auto status = ws.swarm({"status", "--slot", "a", "--json"});
  CHECK(status.out.find("\"task_id\":\"gh#17\"") != std::string::npos);
}

TEST_CASE("TaskLease_RenewedWithTheSessionReleasedByEvictAndByAnotherTask") {
  // renew and commit renew the task lease too (its token stays); evict releases it; a --force rejoin for another
  // task lets the old one go.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-1"}).exit == 0);
  auto before = task_lease(ws, "T-1");
  REQUIRE(ws.swarm({"renew", "--slot", "a"}).exit == 0);
  auto renewed = task_lease(ws, "T-1");
  CHECK(number(renewed, "revision") > number(before, "revision"));
  CHECK(number(renewed, "token") == number(before, "token"));
  write_file(ws.worktree("a") / "f.txt", "f\n");
  auto commit = ws.swarm({"commit", "--slot", "a", "-m", "f"});
  REQUIRE(commit.exit == 0);
  CHECK(commit.err.empty());
  CHECK(number(task_lease(ws, "T-1"), "revision") > number(renewed, "revision"));

  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-2", "--force"}).exit == 0);
  CHECK_FALSE(task_lease(ws, "T-1"));
  CHECK(task_lease(ws, "T-2"));

  REQUIRE(ws.swarm({"evict", "--slot", "a"}, kHostB).exit == 0);
  CHECK_FALSE(task_lease(ws, "T-2"));
}

TEST_CASE("Status_MentionsATaskLeaseOnlyWhenItDisagrees") {
  // status says nothing of a task lease that agrees; one released behind the session's back is noted (text and
  // JSON), and the next renewal takes it again.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-1"}).exit == 0);
  auto quiet = ws.swarm({"status", "--json"});
  CHECK(quiet.out.find("task_lease") == std::string::npos);
  CHECK(ws.swarm({"status"}).out.find("!") == std::string::npos);
  auto token = std::to_string(static_cast<long long>(number(task_lease(ws, "T-1"), "token")));
  REQUIRE(ws.swarm({"lease", "release", "task.T-1", "--token", token}).exit == 0);
  auto noted = ws.swarm({"status"});
  CHECK(noted.out.find("! slot a: no task lease") != std::string::npos);
  auto json = ws.swarm({"status", "--slot", "a", "--json"});
  CHECK(json.out.find("\"task_lease\":{\"name\":\"task.T-1\"") != std::string::npos);
  REQUIRE(ws.swarm({"renew", "--slot", "a"}).exit == 0);
  CHECK(ws.swarm({"status", "--json"}).out.find("task_lease") == std::string::npos);
}

TEST_CASE("Doctor_ChecksLeases") {
  // a corrupt lease record and a lease whose process of this host is gone are problems --fix removes or releases;
  // a task lease whose session is gone too; an expired lease is a notice.
  SwarmWorkspace ws;
  {
    auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
    kv::Bucket::open(connection, ws.names().leases).create("broken", "{\"name\":");
  }
  // A process that ran and exited: its pid is (almost surely) free now.
  Process short_lived({.args = {"/bin/true"}});
  pid_t dead_pid = short_lived.pid();
  short_lived.wait();
  REQUIRE(ws.swarm({"lease", "acquire", "held-by-dead", "--pid", std::to_string(dead_pid)}).exit == 0);
  REQUIRE(ws.swarm({"lease", "acquire", "soon-expired", "--ttl", "1s"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-9"}).exit == 0);
  {
    // The session of slot a vanishes (as if it expired), its task lease stays.
    auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
    auto sessions = kv::Bucket::open(connection, ws.names().sessions);
    sessions.erase("a", sessions.get("a")->revision);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  auto report = ws.swarm({"doctor", "--json"});
  CHECK(report.exit == 8);
  for (const char* check : {"corrupt_lease", "dead_holder", "orphan_task_lease", "expired_lease"})
    CHECK_MESSAGE(report.out.find(std::string("\"check\":\"") + check + "\"") != std::string::npos, check);
  auto fix = ws.swarm({"doctor", "--fix", "--json"});
  CHECK_MESSAGE(fix.exit == 0, fix.out);  // the slot folder of a, an orphan now, is salvaged and removed too
  CHECK(ws.swarm({"lease", "show", "broken"}).exit == 4);
  CHECK(ws.swarm({"lease", "show", "held-by-dead"}).exit == 4);
  CHECK_FALSE(task_lease(ws, "T-9"));
  CHECK(ws.swarm({"lease", "show", "soon-expired"}).exit == 0);  // a notice: left as it is
}

namespace {

// Each slot's task-lease problem in `status --json` ("" when it agrees).
std::map<std::string, std::string> task_lease_problems(const SwarmWorkspace& ws, std::vector<std::string> args) {
  args.insert(args.begin(), {"status", "--json"});
  auto r = ws.swarm(args);
  REQUIRE(r.exit == 0);
  auto doc = json_of(r);
  REQUIRE(doc);
  std::map<std::string, std::string> out;
  cJSON* row = nullptr;
  cJSON_ArrayForEach(row, cJSON_GetObjectItem(doc.get(), "sessions")) {
    const cJSON* lease = cJSON_GetObjectItem(row, "task_lease");
    out[text_of(row, "slot")] = cJSON_IsObject(lease) ? text_of(lease, "problem") : "";
  }
  return out;
}

}  // namespace

TEST_CASE("Status_ReadsTaskLeasesByNameOrListsThemAlike") {
  // A few sessions' task leases are read by name, many sessions' listed: the
  // two say the same of each session (a lease that agrees, one released).
  SwarmWorkspace ws;
  for (const char* slot : {"a", "b", "c"})
    REQUIRE(ws.swarm({"join", "--slot", slot, "--task", std::string("T-") + slot}).exit == 0);
  auto token = std::to_string(static_cast<long long>(number(task_lease(ws, "T-b"), "token")));
  REQUIRE(ws.swarm({"lease", "release", "task.T-b", "--token", token}).exit == 0);
  const std::map<std::string, std::string> few = task_lease_problems(ws, {});
  CHECK(few == std::map<std::string, std::string>{
                   {"a", ""}, {"b", "no task lease (released, or never taken)"}, {"c", ""}});
  {
    // 70 sessions more, written by hand, whose tasks hold no lease.
    auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
    auto sessions = kv::Bucket::open(connection, ws.names().sessions);
    for (int i = 0; i < 70; ++i) {
      const std::string slot = "r" + std::to_string(i);
      sessions.create(slot, R"({"slot":")" + slot + R"(","task_id":"T-)" + slot + R"(","host":"h"})");
    }
  }
  const auto many = task_lease_problems(ws, {});
  REQUIRE(many.size() == 73);
  for (const char* slot : {"a", "b", "c"}) CHECK(many.at(slot) == few.at(slot));
  CHECK(many.at("r0") == "no task lease (released, or never taken)");
  CHECK(many.at("r69") == many.at("r0"));
  CHECK(task_lease_problems(ws, {"--slot", "a", "--slot", "b", "--slot", "r7"}) ==
        std::map<std::string, std::string>{{"a", ""}, {"b", few.at("b")}, {"r7", many.at("r7")}});
}
