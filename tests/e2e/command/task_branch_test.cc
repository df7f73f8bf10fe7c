// One task's work never rides on another's (adr/0050): a slot reused for a
// second task starts it from the onto branch's tip, the first task's closed
// head is parked as swarm/<slot>.<task>, reviewable and landable by itself,
// `branches` shows both, and `review show` shows what an approval approves.
#include <doctest/doctest.h>

#include <set>
#include <thread>

#include "e2e/command/land_support.h"
#include "support/eventually.h"

using namespace testing;
using namespace testing::land;
using namespace std::chrono_literals;

namespace {

std::string state_of(const SwarmWorkspace& ws, const std::string& id) {
  auto r = ws.swarm({"task", "show", id, "--json"});
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  return field(json_of(r), "state");
}

// `branches --json`'s rows by branch: {task_id, head, landed, parked, review}.
std::map<std::string, swarm::Json> rows_of(const SwarmWorkspace& ws) {
  std::map<std::string, swarm::Json> out;
  auto doc = json_of(ws.swarm({"branches", "--json"}));
  const cJSON* row = nullptr;
  cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(doc.get(), "branches"))
    out.emplace(field(swarm::Json::copy(row), "branch"), swarm::Json::copy(row));
  return out;
}

// Whether the hub's `ref` has `path`.
bool has_file(const SwarmWorkspace& ws, const std::string& ref, const std::string& path) {
  return ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "cat-file", "-e", ref + ":" + path}).exit == 0;
}

}  // namespace

TEST_CASE("TaskBranch_ASlotReusedForTheNextTaskLandsExactlyWhatWasApproved") {
  // the loop: one slot, `run --next` twice, review required. B starts from main (without A's work); A
  // stays reviewable and landable as swarm/w1.T-1; approving B and landing lands B alone; approving A lands A.
  SwarmWorkspace ws({.up_args = {"--require-review"}});
  REQUIRE(ws.swarm({"task", "add", "A"}).out == "T-1\n");
  REQUIRE(ws.swarm({"task", "add", "B"}).out == "T-2\n");
  REQUIRE(ws.swarm({"task", "add", "after A", "--after", "T-1"}).out == "T-3\n");
  auto a = ws.swarm({"run", "--slot", "w1", "--next", "--commit", "A done", "--", "sh", "-c", "echo a > a.txt"});
  REQUIRE_MESSAGE(a.exit == 0, a.err);
  auto b = ws.swarm({"run", "--slot", "w1", "--next", "--commit", "B done", "--", "sh", "-c", "echo b > b.txt"});
  REQUIRE_MESSAGE(b.exit == 0, b.err);
  CHECK(state_of(ws, "T-1") == "in_review");
  CHECK(state_of(ws, "T-2") == "in_review");
  // B's branch holds B alone; A's head is parked, and `branches` shows both.
  CHECK(has_file(ws, "swarm/w1", "b.txt"));
  CHECK_FALSE(has_file(ws, "swarm/w1", "a.txt"));
  CHECK(has_file(ws, "swarm/w1.T-1", "a.txt"));
  auto rows = rows_of(ws);
  REQUIRE(rows.count("swarm/w1") == 1);
  REQUIRE(rows.count("swarm/w1.T-1") == 1);
  CHECK(field(rows.at("swarm/w1"), "task_id") == "T-2");
  CHECK(field(rows.at("swarm/w1.T-1"), "task_id") == "T-1");
  CHECK(field(rows.at("swarm/w1.T-1"), "slot") == "w1");
  CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rows.at("swarm/w1.T-1").get(), "parked")));
  CHECK(field(rows.at("swarm/w1.T-1"), "review") == "waiting");
  // What an approval of each approves: its own file only.
  auto show_a = ws.swarm({"review", "show", "T-1", "--json"});
  REQUIRE_MESSAGE(show_a.exit == 0, show_a.err);
  CHECK(field(json_of(show_a), "branch") == "swarm/w1.T-1");
  CHECK(field(json_of(show_a), "patch").find("+a") != std::string::npos);
  CHECK(field(json_of(show_a), "patch").find("b.txt") == std::string::npos);
  auto show_b = ws.swarm({"review", "show", "T-2"});
  REQUIRE(show_b.exit == 0);
  CHECK(show_b.out.find("b.txt") != std::string::npos);
  CHECK(show_b.out.find("a.txt") == std::string::npos);
  CHECK(show_b.out.find("swarm review approve --task T-2 --head") != std::string::npos);
  // B approved: land --ready lands B, and only B.
  REQUIRE(ws.swarm({"review", "approve", "--task", "T-2"}).exit == 0);
  auto first = ws.swarm({"land", "--ready"});
  CHECK_MESSAGE(first.exit == 0, first.err);
  CHECK(has_file(ws, "main", "b.txt"));
  CHECK_FALSE(has_file(ws, "main", "a.txt"));
  CHECK(state_of(ws, "T-2") == "completed");
  CHECK(state_of(ws, "T-1") == "in_review");
  CHECK(ws.swarm({"task", "list", "--ready"}).out.find("T-3") == std::string::npos);
  // A approved at its parked head: it lands by itself, and what came after it is ready.
  auto approve_a = ws.swarm({"review", "approve", "--task", "T-1"});
  REQUIRE_MESSAGE(approve_a.exit == 0, approve_a.err);
  auto second = ws.swarm({"land", "--ready"});
  CHECK_MESSAGE(second.exit == 0, second.err);
  CHECK(has_file(ws, "main", "a.txt"));
  CHECK(state_of(ws, "T-1") == "completed");
  CHECK(ws.swarm({"task", "list", "--ready"}).out.find("T-3") != std::string::npos);
  CHECK(ws.swarm({"land", "--ready"}).out.find("nothing to land") != std::string::npos);
}

TEST_CASE("TaskBranch_ReworkStartsFromTheTasksOwnParkedHead") {
  // A rejected while its slot works on B: taking A up again (rework) starts from A's parked head, not from B's
  // work or from main, and the parked branch goes once the slot's branch holds it.
  SwarmWorkspace ws({.up_args = {"--require-review"}});
  REQUIRE(ws.swarm({"task", "add", "A", "--id", "A"}).exit == 0);
  REQUIRE(ws.swarm({"task", "add", "B", "--id", "B"}).exit == 0);
  for (const auto& [task, file] : {std::pair<std::string, std::string>{"A", "a.txt"}, {"B", "b.txt"}}) {
    REQUIRE(ws.swarm({"join", "--slot", "w", "--task", task}).exit == 0);
    write_file(ws.worktree("w") / file, task + "\n");
    REQUIRE(ws.swarm({"commit", "--slot", "w", "-m", task}).exit == 0);
    REQUIRE(ws.swarm({"close", "--slot", "w", "--result", "success"}).exit == 0);
  }
  REQUIRE(ws.swarm({"review", "reject", "--task", "A", "--reason", "add a test"}).exit == 0);
  auto rework = ws.swarm({"join", "--slot", "w", "--task", "A", "--json"});
  REQUIRE_MESSAGE(rework.exit == 0, rework.err);
  CHECK(field(json_of(rework), "started_from") == "parked");
  CHECK(std::filesystem::exists(ws.worktree("w") / "a.txt"));
  CHECK_FALSE(std::filesystem::exists(ws.worktree("w") / "b.txt"));
  auto rows = rows_of(ws);
  CHECK(rows.count("swarm/w.A") == 0);  // the slot's branch holds it now
  REQUIRE(rows.count("swarm/w.B") == 1);  // B's done work is parked in turn
  CHECK(has_file(ws, "swarm/w.B", "b.txt"));
  write_file(ws.worktree("w") / "a_test.txt", "test\n");
  REQUIRE(ws.swarm({"commit", "--slot", "w", "-m", "A with a test"}).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "w", "--result", "success"}).exit == 0);
  REQUIRE(ws.swarm({"review", "approve", "--task", "A"}).exit == 0);
  REQUIRE(ws.swarm({"review", "approve", "--task", "B"}).exit == 0);
  auto landed = ws.swarm({"land", "--ready"});
  CHECK_MESSAGE(landed.exit == 0, landed.err);
  for (const char* file : {"a.txt", "a_test.txt", "b.txt"}) CHECK(has_file(ws, "main", file));
  CHECK(state_of(ws, "A") == "completed");
  CHECK(state_of(ws, "B") == "completed");
}

TEST_CASE("TaskBranch_WorkNotClosedAsDoneIsKeptUnderRecoveryAndTheNextTaskStartsClean") {
  // T-1's slot closed it as a fail, with a commit: joined for T-2, its branch goes under refs/recovery/ (nothing
  // parked: nothing was said to be done), and T-2 starts from main; a join for the same task later carries its
  // own work on.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "w", "--task", "T-1"}).exit == 0);
  write_file(ws.worktree("w") / "half.txt", "half done\n");
  REQUIRE(ws.swarm({"commit", "--slot", "w", "-m", "half"}).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "w", "--result", "fail"}).exit == 0);
  auto joined = ws.swarm({"join", "--slot", "w", "--task", "T-2", "--json"});
  REQUIRE_MESSAGE(joined.exit == 0, joined.err);
  CHECK(field(json_of(joined), "started_from") == "onto");
  CHECK_FALSE(std::filesystem::exists(ws.worktree("w") / "half.txt"));
  const std::string kept = field(json_of(joined), "kept_ref");
  REQUIRE(kept.rfind("refs/recovery/", 0) == 0);
  CHECK(has_file(ws, kept, "half.txt"));
  CHECK(rows_of(ws).count("swarm/w.T-1") == 0);
  write_file(ws.worktree("w") / "t2.txt", "T-2\n");
  REQUIRE(ws.swarm({"commit", "--slot", "w", "-m", "t2"}).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "w", "--result", "fail"}).exit == 0);
  auto again = ws.swarm({"join", "--slot", "w", "--task", "T-2", "--json"});
  REQUIRE_MESSAGE(again.exit == 0, again.err);
  CHECK(field(json_of(again), "started_from") == "branch");
  CHECK(std::filesystem::exists(ws.worktree("w") / "t2.txt"));
}
