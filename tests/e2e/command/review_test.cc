// Review before landing and land moving a task, through the real binary:
// up --require-review; review approve ties the approval to a head, a later
// commit dismisses it; land --ready takes only approved heads; land --slot
// of another is exit 3 unless --force (journaled forced); reject sends it
// back; a land completes its task, a refused one keeps the refusal in it.
#include <doctest/doctest.h>

#include <signal.h>

#include "e2e/command/land_support.h"

using namespace testing;
using namespace testing::land;

namespace {

swarm::Json task_of(const SwarmWorkspace& ws, const std::string& id) {
  auto r = ws.swarm({"task", "show", id, "--json"});
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  return json_of(r);
}

std::string review_state(const SwarmWorkspace& ws, const std::string& id) {
  auto t = task_of(ws, id);
  const cJSON* review = cJSON_GetObjectItemCaseSensitive(t.get(), "review");
  const cJSON* state = cJSON_IsObject(review) ? cJSON_GetObjectItemCaseSensitive(review, "state") : nullptr;
  return cJSON_IsString(state) ? state->valuestring : "";
}

// join (a queued task), write `file`, commit, close success.
void work(const SwarmWorkspace& ws, const std::string& slot, const std::string& task, const std::string& file) {
  auto join = ws.swarm({"join", "--slot", slot, "--task", task});
  REQUIRE_MESSAGE(join.exit == 0, join.err);
  write_file(ws.worktree(slot) / file, slot + " " + file + "\n");
  auto commit = ws.swarm({"commit", "--slot", slot, "-m", slot + ": " + file});
  REQUIRE_MESSAGE(commit.exit == 0, commit.err);
  auto close = ws.swarm({"close", "--slot", slot, "--result", "success"});
  REQUIRE_MESSAGE(close.exit == 0, close.err);
}

std::string branch_review(const SwarmWorkspace& ws, const std::string& slot) {
  auto doc = json_of(ws.swarm({"branches", "--json"}));
  const cJSON* row = nullptr;
  cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(doc.get(), "branches")) {
    const cJSON* name = cJSON_GetObjectItemCaseSensitive(row, "slot");
    if (!cJSON_IsString(name) || slot != name->valuestring) continue;
    const cJSON* review = cJSON_GetObjectItemCaseSensitive(row, "review");
    return cJSON_IsString(review) ? review->valuestring : "-";
  }
  return "no row";
}

}  // namespace

TEST_CASE("Review_AnApprovalIsDismissedByANewCommitAndLandReadyTakesOnlyApproved") {
  SwarmWorkspace ws(SwarmWorkspace::Options{.up_args = {"--require-review"}});
  REQUIRE(ws.swarm({"task", "add", "A", "--id", "A"}).exit == 0);
  REQUIRE(ws.swarm({"task", "add", "B", "--id", "B"}).exit == 0);
  work(ws, "s1", "A", "a.txt");
  work(ws, "s2", "B", "b.txt");
  CHECK(field(task_of(ws, "A"), "state") == "in_review");
  CHECK(branch_review(ws, "s1") == "waiting");
  const std::string main_before = hub_tip(ws, "main");
  auto none = ws.swarm({"land", "--ready"});
  CHECK(none.exit == 0);
  CHECK(none.err.find("slot s1 waits for a review") != std::string::npos);
  CHECK(hub_tip(ws, "main") == main_before);
  // Not approved: land --slot is exit 3, nothing moved.
  auto refused = ws.swarm({"land", "--slot", "s1"});
  CHECK(refused.exit == 3);
  CHECK(refused.err.find("review is required") != std::string::npos);
  CHECK(hub_tip(ws, "main") == main_before);
  // Approvals, one tied to a head that is no longer the tip: exit 3.
  CHECK(ws.swarm({"review", "approve", "--slot", "s1", "--head", "0000000"}).exit == 3);
  REQUIRE(ws.swarm({"review", "approve", "--slot", "s1", "--head", hub_tip(ws, "swarm/s1").substr(0, 7)}).exit == 0);
  REQUIRE(ws.swarm({"review", "approve", "--task", "B"}).exit == 0);
  CHECK(field(task_of(ws, "B"), "state") == "approved");
  CHECK(branch_review(ws, "s2") == "approved");
  // s2 takes B up again and commits: the approval is dismissed, B back in review.
  work(ws, "s2", "B", "b2.txt");
  CHECK(field(task_of(ws, "B"), "state") == "in_review");
  CHECK(review_state(ws, "B") == "dismissed");
  CHECK(branch_review(ws, "s2") == "dismissed");
  // land --ready lands only the approved head.
  auto landed = ws.swarm({"land", "--ready"});
  CHECK_MESSAGE(landed.exit == 0, landed.err);
  CHECK(landed.out.find("landed s1") != std::string::npos);
  CHECK(landed.out.find("s2") == std::string::npos);
  CHECK(hub_tip(ws, "main") == hub_tip(ws, "swarm/s1"));
  CHECK(field(task_of(ws, "A"), "state") == "completed");
  CHECK(field(task_of(ws, "B"), "state") == "in_review");
  // --force lands it all the same, journaled so, and completes its task.
  CHECK(ws.swarm({"land", "--slot", "s2"}).exit == 3);
  auto forced = ws.swarm({"land", "--slot", "s2", "--force", "--json"});
  CHECK_MESSAGE(forced.exit == 0, forced.err);
  CHECK(json_true(json_of(forced), "forced"));
  CHECK(field(task_of(ws, "B"), "state") == "completed");
  auto log = ws.swarm({"task", "show", "A"});
  CHECK(log.out.find("review.approve") != std::string::npos);
  CHECK(log.out.find("to=completed") != std::string::npos);
  // Turned off: a success is approved at once.
  REQUIRE(ws.swarm({"up", "--no-require-review"}).exit == 0);
  REQUIRE(ws.swarm({"task", "add", "C", "--id", "C"}).exit == 0);
  work(ws, "s3", "C", "c.txt");
  CHECK(field(task_of(ws, "C"), "state") == "approved");
}

TEST_CASE("Review_RejectSendsItBackForReworkAndBadInputIsRefused") {
  SwarmWorkspace ws(SwarmWorkspace::Options{.up_args = {"--require-review"}});
  REQUIRE(ws.swarm({"task", "add", "A", "--id", "A"}).exit == 0);
  REQUIRE(ws.swarm({"task", "add", "Free", "--id", "F"}).exit == 0);
  // Bad input, before any I/O: exit 2.
  CHECK(ws.swarm({"review", "approve"}).exit == 2);
  CHECK(ws.swarm({"review", "approve", "--slot", "s1", "--task", "A"}).exit == 2);
  CHECK(ws.swarm({"review", "approve", "--slot", "s1", "--head", "xyz"}).exit == 2);
  CHECK(ws.swarm({"review", "reject", "--slot", "s1"}).exit == 2);
  CHECK(ws.swarm({"review", "approve", "--slot", "../x"}).exit == 2);
  // Nothing to review: unknown slot or task is exit 4; a task never worked, or working, exit 3.
  CHECK(ws.swarm({"review", "approve", "--slot", "nobody"}).exit == 4);
  CHECK(ws.swarm({"review", "approve", "--task", "nosuch"}).exit == 4);
  CHECK(ws.swarm({"review", "approve", "--task", "F"}).exit == 3);
  REQUIRE(ws.swarm({"join", "--slot", "s1", "--task", "A"}).exit == 0);
  CHECK(ws.swarm({"review", "approve", "--slot", "s1"}).exit == 3);  // still working
  // status shows the session's task state (a free-form id has none).
  REQUIRE(ws.swarm({"join", "--slot", "free", "--task", "not-queued"}).exit == 0);
  CHECK(ws.swarm({"status", "--slot", "s1", "--json"}).out.find("\"task_state\":\"working\"") != std::string::npos);
  CHECK(ws.swarm({"status", "--slot", "free", "--json"}).out.find("task_state") == std::string::npos);
  const auto table = ws.swarm({"status"}).out;
  CHECK(table.find("A (working)") != std::string::npos);
  CHECK(table.find("not-queued ") != std::string::npos);
  write_file(ws.worktree("s1") / "a.txt", "a\n");
  REQUIRE(ws.swarm({"commit", "--slot", "s1", "-m", "a"}).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "s1", "--result", "success"}).exit == 0);
  auto rejected = ws.swarm({"review", "reject", "--slot", "s1", "--reason", "no tests\x1b[2J", "--json"});
  REQUIRE_MESSAGE(rejected.exit == 0, rejected.err);
  auto a = task_of(ws, "A");
  CHECK(field(a, "state") == "open");
  CHECK(field(a, "result").find("rejected: no tests") == 0);
  CHECK(review_state(ws, "A") == "rejected");
  CHECK(ws.swarm({"task", "show", "A"}).out.find('\x1b') == std::string::npos);
  // The same slot takes it up again (rework); its new head waits for a review.
  work(ws, "s1", "A", "tests.txt");
  CHECK(field(task_of(ws, "A"), "state") == "in_review");
  CHECK(branch_review(ws, "s1") == "waiting");
  REQUIRE(ws.swarm({"review", "approve", "--slot", "s1"}).exit == 0);
  CHECK(ws.swarm({"land", "--slot", "s1"}).exit == 0);
  CHECK(field(task_of(ws, "A"), "state") == "completed");
}

TEST_CASE("Land_CompletesItsTaskInABatchAndARefusalIsKeptInTheRecord") {
  SwarmWorkspace ws;
  for (const char* id : {"A", "B", "C"}) REQUIRE(ws.swarm({"task", "add", id, "--id", id}).exit == 0);
  work(ws, "s1", "A", "a.txt");
  work(ws, "s2", "B", "b.txt");
  work(ws, "s3", "C", "bad.txt");
  CHECK(field(task_of(ws, "C"), "state") == "approved");
  // A check that refuses the tree holding bad.txt: C stays approved, the refusal in its record.
  auto r = ws.swarm({"land", "--ready", "--batch", "3", "--", "sh", "-c", "test ! -e bad.txt"});
  CHECK(r.exit == 3);
  CHECK(field(task_of(ws, "A"), "state") == "completed");
  CHECK(field(task_of(ws, "B"), "state") == "completed");
  auto c = task_of(ws, "C");
  CHECK(field(c, "state") == "approved");
  CHECK(field(c, "result").find("refused (check)") != std::string::npos);
  CHECK(field(task_of(ws, "A"), "result").find("landed on main") == 0);
  // A free-form task id lands as before, moving nothing.
  finish(ws, "free", "f.txt", "f\n");
  CHECK(ws.swarm({"land", "--slot", "free"}).exit == 0);
}

TEST_CASE("Review_APushAfterTheApprovalNeverLandsWithoutForce") {
  // a commit pushed to the slot's branch from outside swarm after the approval: land --ready leaves it,
  // land --slot is exit 3 and main does not move; approving is refused while the branch is past its close.
  SwarmWorkspace ws(SwarmWorkspace::Options{.up_args = {"--require-review"}});
  REQUIRE(ws.swarm({"task", "add", "A", "--id", "A"}).exit == 0);
  work(ws, "s1", "A", "a.txt");
  REQUIRE(ws.swarm({"review", "approve", "--slot", "s1"}).exit == 0);
  // Someone pushes to swarm/s1 by hand.
  push_by_hand(ws, "s1", "clone", "sneaky.txt", "x\n", "sneaky");
  const std::string main_before = hub_tip(ws, "main");
  auto ready = ws.swarm({"land", "--ready"});
  CHECK(ready.out.find("landed s1") == std::string::npos);
  CHECK(ws.swarm({"land", "--slot", "s1"}).exit == 3);
  CHECK(hub_tip(ws, "main") == main_before);
  auto again = ws.swarm({"review", "approve", "--slot", "s1"});
  CHECK(again.exit == 3);
  CHECK(again.err.find("not at") != std::string::npos);
  CHECK(ws.swarm({"branches", "--json"}).out.find("\"review\":\"dismissed\"") != std::string::npos);
  CHECK(field(task_of(ws, "A"), "state") == "approved");  // as approved; the land refuses the head that moved
}

TEST_CASE("Land_CompletesTheTaskItsSlotClosedNotTheOneItWorksNow") {
  // slot s1 closed A success, then joined B and is working on it: A's head was parked as swarm/s1.A, and a
  // land of task A completes A, while B stays working.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"task", "add", "A", "--id", "A"}).exit == 0);
  REQUIRE(ws.swarm({"task", "add", "B", "--id", "B"}).exit == 0);
  work(ws, "s1", "A", "a.txt");
  REQUIRE(ws.swarm({"join", "--slot", "s1", "--task", "B"}).exit == 0);
  auto landed = ws.swarm({"land", "--task", "A"});
  CHECK_MESSAGE(landed.exit == 0, landed.err);
  CHECK(field(task_of(ws, "A"), "state") == "completed");
  CHECK(field(task_of(ws, "B"), "state") == "working");
}

TEST_CASE("Land_AKillAfterThePushLeavesItsTaskToTheNextLand") {
  // a lander SIGKILLed right after its push: main has the branch, the task is still approved; the next
  // land --ready completes it (and land --slot would say already-landed and complete it too).
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"task", "add", "A", "--id", "A"}).exit == 0);
  work(ws, "s1", "A", "a.txt");
  auto env = kHostA;
  env["SWARM_TEST_LAND_STOP"] = "after-push";
  Process lander(ws.command({"land", "--slot", "s1", "--ttl", "2s"}, env));
  REQUIRE(stopped_within(lander.pid(), std::chrono::seconds(20)));
  lander.signal(SIGKILL);
  lander.wait();
  CHECK(hub_tip(ws, "main") == hub_tip(ws, "swarm/s1"));
  CHECK(field(task_of(ws, "A"), "state") == "approved");
  auto next = ws.swarm({"land", "--ready"});
  CHECK_MESSAGE(next.exit == 0, next.err);
  CHECK(field(task_of(ws, "A"), "state") == "completed");
}

TEST_CASE("Review_ARejectOfOneOfTwoTasksOfOneSlotNamesThatTasksOwnHead") {
  // one slot works A, then B: both in review, the branch at B's head. A rejected: what review says, A's record
  // and its review.reject event name A's own head, never B's (the branch's tip); B is untouched, and approved at
  // its own head.
  SwarmWorkspace ws(SwarmWorkspace::Options{.up_args = {"--require-review"}});
  REQUIRE(ws.swarm({"task", "add", "A", "--id", "A"}).exit == 0);
  REQUIRE(ws.swarm({"task", "add", "B", "--id", "B"}).exit == 0);
  work(ws, "w1", "A", "a.txt");
  const std::string a_head = field(task_of(ws, "A"), "head");
  work(ws, "w1", "B", "b.txt");
  const std::string b_head = field(task_of(ws, "B"), "head");
  REQUIRE(a_head.size() == 40);
  REQUIRE(b_head.size() == 40);
  REQUIRE(a_head != b_head);
  auto rejected = ws.swarm({"review", "reject", "--task", "A", "--reason", "no tests"});
  REQUIRE_MESSAGE(rejected.exit == 0, rejected.err);
  CHECK_MESSAGE(rejected.out.find("rejected at " + a_head.substr(0, 12)) != std::string::npos, rejected.out);
  auto a = task_of(ws, "A");
  CHECK(field(a, "state") == "open");
  const cJSON* review = cJSON_GetObjectItemCaseSensitive(a.get(), "review");
  CHECK(text_of(review, "head") == a_head);
  auto events = ws.swarm({"log", "--kind", "review.reject", "--json"});
  REQUIRE(events.exit == 0);
  CHECK(events.out.find("\"head\":\"" + a_head + "\"") != std::string::npos);
  CHECK(events.out.find(b_head) == std::string::npos);
  CHECK(field(task_of(ws, "B"), "state") == "in_review");
  CHECK(review_state(ws, "B").empty());
  auto approved = ws.swarm({"review", "approve", "--task", "B", "--head", b_head});
  REQUIRE_MESSAGE(approved.exit == 0, approved.err);
  CHECK(approved.out.find("approved at " + b_head.substr(0, 12)) != std::string::npos);
}
