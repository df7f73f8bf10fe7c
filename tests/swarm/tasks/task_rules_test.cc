// The task queue's rules as functions of the record alone (swarm/tasks/
// task_rules.h): readiness, what a claim does and refuses, a close, a
// review, a land, the claim order and `after`'s cycles; and the record's
// parser on what it must call corrupt. No server: the store only writes
// what these return.
#include "swarm/tasks/task_rules.h"

#include <doctest/doctest.h>

#include <map>

#include "swarm/base/error.h"

using namespace swarm;

namespace {

Task task(const std::string& id, TaskState state = TaskState::open, std::vector<std::string> after = {}) {
  Task t;
  t.id = id;
  t.title = "title of " + id;
  t.set_state(state);
  t.after = std::move(after);
  return t;
}

StateOf states(std::map<std::string, TaskState> m) {
  return [m](const std::string& id) -> std::optional<TaskState> {
    auto it = m.find(id);
    return it == m.end() ? std::nullopt : std::optional(it->second);
  };
}

std::vector<TaskEntry> entries(const std::vector<Task>& tasks) {
  std::vector<TaskEntry> out;
  for (const auto& t : tasks) {
    TaskEntry e;
    e.key = task_key(t.id);
    e.task = t;
    out.push_back(std::move(e));
  }
  return out;
}

// The message of the swarm::Error `f` throws, and that it is of `kind`.
template <typename F>
std::string refusal(F&& f, Errc kind) {
  try {
    f();
  } catch (const Error& e) {
    CHECK(e.kind() == kind);
    return e.what();
  }
  FAIL("no refusal");
  return {};
}

const Claimer kA{.slot = "a", .session = 7, .host = "host-a"};
const Claimer kB{.slot = "b", .session = 9, .host = "host-b"};

}  // namespace

TEST_CASE("TaskRules_ReadyIsOpenWithEveryAfterCompleted") {
  const Task t = task("T-2", TaskState::open, {"T-1", "T-0"});
  CHECK_FALSE(is_ready(t, states({{"T-1", TaskState::completed}, {"T-0", TaskState::approved}})));
  CHECK(waiting_for(t, states({{"T-1", TaskState::completed}, {"T-0", TaskState::approved}})) ==
        std::vector<std::string>{"T-0"});
  CHECK(is_ready(t, states({{"T-1", TaskState::completed}, {"T-0", TaskState::completed}})));
  // An after that no listing found (deleted) is never completed.
  CHECK(waiting_for(t, states({{"T-1", TaskState::completed}})) == std::vector<std::string>{"T-0"});
  CHECK_FALSE(is_ready(task("T-3", TaskState::working), states({})));
}

TEST_CASE("TaskRules_AClaimTakesAReadyTaskAndRefusesOneThatWaits") {
  Task t = task("T-1");
  CHECK(claim(t, kA, states({}), false) == ClaimKind::claim);
  CHECK(t.state() == TaskState::working);
  CHECK(t.slot == "a");
  CHECK(t.session == 7);
  CHECK(t.host == "host-a");

  Task waits = task("T-2", TaskState::open, {"T-1"});
  const std::string why = refusal([&] { claim(waits, kA, states({{"T-1", TaskState::working}}), false); }, Errc::conflict);
  CHECK(why.find("not ready") != std::string::npos);
  CHECK(why.find("T-1") != std::string::npos);
  CHECK(waits.state() == TaskState::open);  // nothing changed
  CHECK(waits.slot.empty());
}

TEST_CASE("TaskRules_AnotherSlotsWorkingTaskIsTakenOnlyWhenItsClaimLapsed") {
  Task t = task("T-1");
  claim(t, kA, states({}), false);
  // Its lease is not ours: slot a still holds it.
  const std::string why = refusal([&] { claim(t, kB, states({}), false); }, Errc::conflict);
  CHECK(why.find("slot a") != std::string::npos);
  CHECK(t.slot == "a");
  // The lease is ours (a's agent died): a lapsed claim, one attempt spent.
  CHECK(claim(t, kB, states({}), true) == ClaimKind::lapsed);
  CHECK(t.slot == "b");
  CHECK(t.attempts == 1);
  CHECK(t.result.find("lapsed") != std::string::npos);
}

TEST_CASE("TaskRules_ALapseAtTheLastAttemptFailsTheTaskUnclaimed") {
  Task t = task("T-1");
  t.max_attempts = 2;
  t.attempts = 1;
  claim(t, kA, states({}), false);
  CHECK(claim(t, kB, states({}), true) == ClaimKind::failed);
  CHECK(t.state() == TaskState::failed);
  CHECK(t.slot == "a");  // not b's
}

TEST_CASE("TaskRules_ReworkIsTheSameSlotsAndKeepsItsReview") {
  Task t = task("T-1");
  claim(t, kA, states({}), false);
  close_moves(t, "a", "success", true, "head1");
  approve(t, "head1", "lead", TimePoint{});
  CHECK(t.state() == TaskState::approved);
  // Another slot may not take an approved task; its slot may.
  refusal([&] { claim(t, kB, states({}), false); }, Errc::conflict);
  CHECK(claim(t, kA, states({}), false) == ClaimKind::rework);
  CHECK(t.review_record().has_value());
  // Done tasks are no one's to claim.
  for (TaskState s : {TaskState::completed, TaskState::failed, TaskState::cancelled}) {
    Task done = task("T-9", s);
    refusal([&] { claim(done, kA, states({}), false); }, Errc::conflict);
  }
}

TEST_CASE("TaskRules_ACloseMovesOnlyItsSlotsWorkingTask") {
  Task t = task("T-1");
  claim(t, kA, states({}), false);
  CHECK_FALSE(close_moves(t, "b", "success", true, "h"));  // not b's
  CHECK(t.state() == TaskState::working);
  CHECK(close_moves(t, "a", "success", true, "h1"));
  CHECK(t.state() == TaskState::in_review);
  CHECK(t.head == "h1");

  Task unreviewed = task("T-2");
  claim(unreviewed, kA, states({}), false);
  close_moves(unreviewed, "a", "success", false, "h2");
  CHECK(unreviewed.state() == TaskState::approved);  // no review required

  Task failing = task("T-3");
  failing.max_attempts = 2;
  claim(failing, kA, states({}), false);
  close_moves(failing, "a", "fail", true, "");
  CHECK(failing.state() == TaskState::open);
  CHECK(failing.attempts == 1);
  claim(failing, kA, states({}), false);
  close_moves(failing, "a", "fail", true, "");
  CHECK(failing.state() == TaskState::failed);

  Task forked = task("T-4");
  claim(forked, kA, states({}), false);
  close_moves(forked, "a", "fork", true, "");
  CHECK(forked.state() == TaskState::open);
  CHECK(forked.attempts == 0);
}

TEST_CASE("TaskRules_AnApprovalStandsForItsHeadAndALaterCommitDismissesIt") {
  Task t = task("T-1");
  refusal([&] { approve(t, "h", "lead", TimePoint{}); }, Errc::conflict);  // open: nothing to review
  claim(t, kA, states({}), false);
  refusal([&] { approve(t, "h", "lead", TimePoint{}); }, Errc::conflict);  // working
  close_moves(t, "a", "success", true, "h1");
  CHECK(review_word(t, "h1") == "waiting");
  CHECK_FALSE(approved_at(t, "h1"));
  approve(t, "h1", "lead", TimePoint{});
  CHECK(approved_at(t, "h1"));
  CHECK(review_word(t, "h1") == "approved");
  CHECK(why_not_approved(t, "h2").find("dismissed") != std::string::npos);
  // Rework, then a close at another head: the approval is dismissed.
  claim(t, kA, states({}), false);
  close_moves(t, "a", "success", true, "h2");
  CHECK(t.state() == TaskState::in_review);
  CHECK(t.review_record()->state == "dismissed");
  CHECK_FALSE(approved_at(t, "h2"));
  CHECK(review_word(t, "h2") == "dismissed");
}

TEST_CASE("TaskRules_ARejectionSendsItBackToOpenForItsSlot") {
  Task t = task("T-1");
  claim(t, kA, states({}), false);
  close_moves(t, "a", "success", true, "h1");
  reject(t, "tests missing", "lead", TimePoint{});
  CHECK(t.state() == TaskState::open);
  CHECK(t.slot == "a");
  CHECK(why_not_approved(t, "h1").find("tests missing") != std::string::npos);
  CHECK(review_word(t, "h1") == "rejected");
  CHECK(claim(t, kA, states({}), false) == ClaimKind::rework);
}

TEST_CASE("TaskRules_ALandCompletesOnlyItsSlotsReviewedTask") {
  Task t = task("T-1");
  claim(t, kA, states({}), false);
  CHECK_FALSE(land_moves(t, "a", "h", "merged", false));  // working, not forced
  CHECK(land_moves(t, "a", "h", "merged", true));          // forced past its live session
  CHECK(t.state() == TaskState::completed);

  Task u = task("T-2");
  claim(u, kA, states({}), false);
  close_moves(u, "a", "success", true, "h1");
  CHECK_FALSE(land_moves(u, "b", "h1", "merged", false));
  CHECK(land_refused(u, "a", "conflicts with main"));
  CHECK_FALSE(land_refused(u, "a", "conflicts with main"));  // said already
  CHECK(u.state() == TaskState::in_review);
  CHECK(land_moves(u, "a", "h1", "merged", false));
  CHECK(u.state() == TaskState::completed);
}

TEST_CASE("TaskRules_CancelAndReopen") {
  Task t = task("T-1");
  cancel(t, "");
  CHECK(t.state() == TaskState::cancelled);
  CHECK(t.result == "cancelled");
  refusal([&] { cancel(t, "again"); }, Errc::conflict);
  reopen(t);
  CHECK(t.state() == TaskState::open);
  Task open = task("T-2");
  refusal([&] { reopen(open); }, Errc::conflict);
}

TEST_CASE("TaskRules_ClaimOrderIsUrgencyThenAgeAndTakesLapsedClaims") {
  Task low = task("T-low");
  low.priority = 3;
  low.created_at = TimePoint{} + std::chrono::seconds(1);
  Task urgent_new = task("T-urgent");
  urgent_new.priority = 0;
  urgent_new.created_at = TimePoint{} + std::chrono::seconds(50);
  Task mid_old = task("T-mid");
  mid_old.created_at = TimePoint{} + std::chrono::seconds(2);
  Task lapsed = task("T-lapsed", TaskState::working);
  lapsed.priority = 1;
  lapsed.slot = "dead";
  Task live = task("T-live", TaskState::working);
  live.slot = "alive";
  Task waits = task("T-waits", TaskState::open, {"T-low"});
  waits.priority = 0;
  Task labelled = task("T-gpu");
  labelled.labels = {"gpu"};
  const auto all = entries({low, urgent_new, mid_old, lapsed, live, waits, labelled});
  const auto order = claim_order(all, {}, [](const Task& t) { return t.slot == "dead"; });
  std::vector<std::string> ids;
  for (const auto& t : order) ids.push_back(t.id);
  CHECK(ids == std::vector<std::string>{"T-urgent", "T-lapsed", "T-gpu", "T-mid", "T-low"});
  const auto gpu = claim_order(all, {"gpu"}, {});
  REQUIRE(gpu.size() == 1);
  CHECK(gpu.front().id == "T-gpu");
}

TEST_CASE("TaskRules_AfterRefusesItselfUnknownIdsAndCycles") {
  const auto all = entries({task("T-1", TaskState::open, {"T-2"}), task("T-2", TaskState::open, {"T-3"}), task("T-3")});
  CHECK_NOTHROW(require_after("T-4", {"T-1"}, all));
  CHECK(refusal([&] { require_after("T-4", {"T-4"}, all); }, Errc::bad_input).find("itself") != std::string::npos);
  CHECK(refusal([&] { require_after("T-4", {"T-9"}, all); }, Errc::bad_input).find("T-9") != std::string::npos);
  // T-3 after T-1 closes T-1 -> T-2 -> T-3 -> T-1.
  CHECK(refusal([&] { require_after("T-3", {"T-1"}, all); }, Errc::bad_input).find("cycle") != std::string::npos);
}

TEST_CASE("TaskRecord_ParsesWhatItWritesAndCallsTheRestCorrupt") {
  Task t = task("T-1");
  t.labels = {"api"};
  t.after = {"T-0"};
  t.priority = 1;
  const ParsedTask back = parse_task(to_json(t));
  REQUIRE(back.task.has_value());
  CHECK(back.task->id == "T-1");
  CHECK(back.task->labels == t.labels);
  CHECK(back.task->after == t.after);
  CHECK(back.task->priority == 1);
  // A good record with one thing wrong, and the word its reason names.
  const std::string good = to_json(t);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const auto at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  const std::pair<std::string, std::string> bad[] = {
      {"", ""},
      {"not json", ""},
      {"[]", ""},
      {with("\"state\":\"open\"", "\"state\":\"sleeping\""), "sleeping"},
      {with("\"priority\":1", "\"priority\":9"), "priority"},
      {with("\"id\":\"T-1\",", ""), "id"},
      {with("\"schema\":\"swarm.task.v1\"", "\"schema\":\"swarm.other.v1\""), "schema"},
  };
  for (const auto& [text, word] : bad) {
    CAPTURE(text);
    const ParsedTask p = parse_task(text);
    CHECK_FALSE(p.task.has_value());
    CHECK_FALSE(p.corrupt_reason.empty());
    if (!word.empty()) CHECK(p.corrupt_reason.find(word) != std::string::npos);
  }
}
