// The task queue through the real binary: add, list, show, edit, cancel,
// reopen, export and import; claims by join --next and join --task of a
// queued id (32 claimers, 20 tasks: never one twice); close moving a task;
// a lapsed claim and a claimer killed between its lease and its record;
// hostile and corrupt records; the id counter past imported and taken ids.
#include <doctest/doctest.h>

#include <signal.h>

#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "e2e/swarm_fixture.h"
#include "kv/bucket.h"
#include "support/eventually.h"
#include "support/raw_nats.h"
#include "swarm/base/process_info.h"

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// The task of `id` as task show --json has it (empty when none).
swarm::Json task_of(const SwarmWorkspace& ws, const std::string& id) {
  auto r = ws.swarm({"task", "show", id, "--json"});
  if (r.exit != 0) return {};
  return json_of(r);
}

std::vector<std::string> listed_ids(const SwarmWorkspace& ws, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"task", "list", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto doc = json_of(ws.swarm(args));
  std::vector<std::string> ids;
  const cJSON* tasks = cJSON_GetObjectItem(doc.get(), "tasks");
  for (const cJSON* t = tasks ? tasks->child : nullptr; t != nullptr; t = t->next)
    if (const cJSON* id = cJSON_GetObjectItem(t, "id"); cJSON_IsString(id)) ids.push_back(id->valuestring);
  return ids;
}

std::string added(const SwarmWorkspace& ws, const std::vector<std::string>& args) {
  std::vector<std::string> all = {"task", "add"};
  all.insert(all.end(), args.begin(), args.end());
  auto r = ws.swarm(all);
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  std::string id = r.out;
  while (!id.empty() && id.back() == '\n') id.pop_back();
  return id;
}

}  // namespace

TEST_CASE("Task_AddListShowEditAndBadInput") {
  // ids are generated T-1, T-2...; list is by priority then age, --ready leaves out what waits; show has the
  // record and its journal; bad input is exit 2 before anything is written; an existing id is exit 3.
  SwarmWorkspace ws;
  CHECK(added(ws, {"Write docs"}) == "T-1");
  CHECK(added(ws, {"Fix the parser", "--priority", "0", "--label", "backend"}) == "T-2");
  CHECK(added(ws, {"Ship", "--after", "T-1", "--after", "T-2"}) == "T-3");
  CHECK(added(ws, {"Named", "--id", "gh#17"}) == "gh#17");
  CHECK(listed_ids(ws) == std::vector<std::string>{"T-2", "T-1", "T-3", "gh#17"});
  CHECK(listed_ids(ws, {"--ready"}) == std::vector<std::string>{"T-2", "T-1", "gh#17"});
  CHECK(listed_ids(ws, {"--label", "backend"}) == std::vector<std::string>{"T-2"});
  auto text = ws.swarm({"task", "list"});
  CHECK(text.out.find("T-2 0 open - Fix the parser\n") != std::string::npos);
  auto shown = task_of(ws, "T-3");
  CHECK(field(shown, "state") == "open");
  CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(shown.get(), "events")) >= 1);
  CHECK(ws.swarm({"task", "show", "T-3"}).out.find("task.add") != std::string::npos);
  // Bad input, nothing written.
  CHECK(ws.swarm({"task", "add", "x", "--after", "T-9"}).exit == 2);
  CHECK(ws.swarm({"task", "add", "x", "--priority", "5"}).exit == 2);
  CHECK(ws.swarm({"task", "add", std::string("a\x1b[2Jb")}).exit == 2);
  CHECK(ws.swarm({"task", "add", std::string(201, 'x')}).exit == 2);
  CHECK(ws.swarm({"task", "add", "x", "--label", "no spaces"}).exit == 2);
  CHECK(ws.swarm({"task", "list", "--state", "sleeping"}).exit == 2);
  CHECK(ws.swarm({"task", "edit", "T-1", "--after=+T-3"}).exit == 2);  // a cycle: T-3 comes after T-1
  CHECK(ws.swarm({"task", "add", "again", "--id", "gh#17"}).exit == 3);
  CHECK(listed_ids(ws).size() == 4);
  CHECK(ws.swarm({"task", "show", "T-99"}).exit == 4);
  // Edits and moves by hand.
  REQUIRE(ws.swarm({"task", "edit", "T-1", "--priority", "0", "--label=+docs", "--title", "Write the docs"}).exit == 0);
  CHECK(field(task_of(ws, "T-1"), "title") == "Write the docs");
  CHECK(listed_ids(ws, {"--ready"}).front() == "T-1");  // same priority as T-2: the older first
  REQUIRE(ws.swarm({"task", "cancel", "gh#17", "--reason", "not ours"}).exit == 0);
  CHECK(field(task_of(ws, "gh#17"), "state") == "cancelled");
  CHECK(ws.swarm({"task", "cancel", "gh#17"}).exit == 3);
  REQUIRE(ws.swarm({"task", "reopen", "gh#17"}).exit == 0);
  CHECK(field(task_of(ws, "gh#17"), "state") == "open");
  CHECK(ws.swarm({"task", "reopen", "gh#17"}).exit == 3);
}

TEST_CASE("Task_ThirtyTwoClaimersOfTwentyTasksNeverGetOneTwice") {
  // 32 processes join --next at once from 20 ready tasks: 20 distinct tasks claimed, 12 exit 4, each claimed
  // task working by the one slot that joined it.
  SwarmWorkspace ws;
  for (int i = 0; i < 20; ++i) added(ws, {"task " + std::to_string(i)});
  std::vector<std::unique_ptr<Process>> joins;
  for (int i = 0; i < 32; ++i)
    joins.push_back(std::make_unique<Process>(
        ws.command({"join", "--slot", "c" + std::to_string(i), "--next", "--json", "--timeout", "30s"})));
  std::map<std::string, std::string> task_of_slot;
  int none = 0;
  for (int i = 0; i < 32; ++i) {
    auto r = joins[static_cast<std::size_t>(i)]->wait(60s);
    if (r.exit == 4) {
      ++none;
      continue;
    }
    REQUIRE_MESSAGE(r.exit == 0, r.err);
    task_of_slot["c" + std::to_string(i)] = field(json_of(r), "task_id");
  }
  CHECK(none == 12);
  std::set<std::string> tasks;
  for (const auto& [slot, task] : task_of_slot) {
    CHECK(tasks.insert(task).second);
    auto t = task_of(ws, task);
    CHECK(field(t, "state") == "working");
    CHECK(field(t, "slot") == slot);
  }
  CHECK(tasks.size() == 20);
}

TEST_CASE("Task_CloseMovesItAndFailuresCountToMaxAttempts") {
  // close success -> approved with the branch tip; close fail -> open with attempts + 1, and failed at
  // max_attempts; join --task of a failed task is exit 3 until reopen; a not-ready task is exit 3.
  SwarmWorkspace ws;
  const auto a = added(ws, {"A"});
  const auto b = added(ws, {"B", "--max-attempts", "2"});
  const auto c = added(ws, {"C", "--after", a});
  CHECK(ws.swarm({"join", "--slot", "s1", "--task", c}).exit == 3);  // waits for A
  REQUIRE(ws.swarm({"join", "--slot", "s1", "--task", a}).exit == 0);
  { std::ofstream(ws.worktree("s1") / "a.txt") << "a\n"; }
  REQUIRE(ws.swarm({"commit", "--slot", "s1", "-m", "a"}).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "s1", "--result", "success"}).exit == 0);
  auto ta = task_of(ws, a);
  CHECK(field(ta, "state") == "approved");
  CHECK(field(ta, "head").size() == 40);
  for (int attempt = 1; attempt <= 2; ++attempt) {
    REQUIRE(ws.swarm({"join", "--slot", "s2", "--next"}).out.find("s2") != std::string::npos);
    CHECK(field(task_of(ws, b), "slot") == "s2");
    REQUIRE(ws.swarm({"close", "--slot", "s2", "--result", "fail", "--no-artifact"}).exit == 0);
    CHECK(number(task_of(ws, b), "attempts") == attempt);
  }
  CHECK(field(task_of(ws, b), "state") == "failed");
  CHECK(ws.swarm({"join", "--slot", "s3", "--task", b}).exit == 3);
  CHECK(ws.swarm({"join", "--slot", "s3", "--next"}).exit == 4);  // C waits for A (approved, not completed)
  REQUIRE(ws.swarm({"task", "reopen", b}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "s3", "--next"}).exit == 0);
  CHECK(field(task_of(ws, b), "state") == "working");
  auto log = ws.swarm({"task", "show", b});
  CHECK(log.out.find("to=failed") != std::string::npos);
}

TEST_CASE("Task_ALapsedClaimIsReadyAgainWithAnAttemptMore") {
  // a slot claims a task and its agent dies (nothing renews): after the TTL another slot's join --next gets it,
  // attempts 1, the lapse journaled; at max_attempts a lapse fails it and the join is exit 3.
  SwarmWorkspace ws({.up_args = {"--ttl", "2s"}});
  const auto t = added(ws, {"T"});
  const auto u = added(ws, {"U", "--max-attempts", "1", "--priority", "3"});
  REQUIRE(ws.swarm({"join", "--slot", "dead", "--task", t}).exit == 0);
  CHECK(ws.swarm({"join", "--slot", "other", "--task", t}).exit == 3);  // its lease is live
  REQUIRE(ws.swarm({"join", "--slot", "dead2", "--task", u}).exit == 0);
  std::this_thread::sleep_for(3s);
  auto r = ws.swarm({"join", "--slot", "heir", "--next", "--json"});
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  CHECK(field(json_of(r), "task_id") == t);
  auto tt = task_of(ws, t);
  CHECK(field(tt, "slot") == "heir");
  CHECK(number(tt, "attempts") == 1);
  CHECK(ws.swarm({"task", "show", t}).out.find("the claim of slot dead lapsed") != std::string::npos);
  auto last = ws.swarm({"join", "--slot", "heir2", "--task", u});
  CHECK(last.exit == 3);
  CHECK(last.err.find("failed") != std::string::npos);
  CHECK(field(task_of(ws, u), "state") == "failed");
  CHECK_FALSE(fs::exists(ws.worktree("heir2")));
}

TEST_CASE("Task_AClaimerKilledBetweenItsLeaseAndTheRecordLeavesNothingStuck") {
  // join --next takes the task's lease and is SIGKILLed before it writes the record: the task stays open, no
  // other claimer gets it while the lease lives, and after the lease's TTL join --next claims it.
  SwarmWorkspace ws({.up_args = {"--ttl", "2s"}});
  const auto t = added(ws, {"T"});
  auto env = kHostA;
  env["SWARM_TEST_JOIN_STOP"] = "task-leased";
  Process killed(ws.command({"join", "--slot", "k", "--next"}, env));
  REQUIRE(eventually([&] { return process_state(killed.pid()) == 'T'; }, 20s));
  killed.signal(SIGKILL);
  killed.wait(10s);
  CHECK(field(task_of(ws, t), "state") == "open");
  CHECK(ws.swarm({"join", "--slot", "m", "--next"}).exit == 4);
  auto later = ws.swarm({"join", "--slot", "m", "--next", "--wait", "10s", "--json"});
  REQUIRE_MESSAGE(later.exit == 0, later.err);
  CHECK(field(json_of(later), "task_id") == t);
  CHECK(field(task_of(ws, t), "slot") == "m");
}

TEST_CASE("Task_ExportImportedIntoAnEmptyWorkspaceGivesTheSameRecords") {
  // an export imported into another workspace gives the same records; imported again it changes nothing; a
  // bad line is exit 2 and imports nothing.
  SwarmWorkspace one, two;
  added(one, {"A", "--label", "x"});
  added(one, {"B", "--after", "T-1", "--body", "line 1\nline 2"});
  const auto file = one.root() / "tasks.jsonl";
  REQUIRE(one.swarm({"task", "export", file.string()}).exit == 0);
  auto imported = two.swarm({"task", "import", file.string(), "--json"});
  REQUIRE_MESSAGE(imported.exit == 0, imported.err);
  CHECK(number(json_of(imported), "created") == 2);
  const auto again_file = two.root() / "again.jsonl";
  REQUIRE(two.swarm({"task", "export", again_file.string()}).exit == 0);
  std::ifstream x(file), y(again_file);
  std::string a((std::istreambuf_iterator<char>(x)), {}), b((std::istreambuf_iterator<char>(y)), {});
  CHECK(a == b);
  auto again = two.swarm({"task", "import", file.string(), "--json"});
  CHECK(number(json_of(again), "unchanged") == 2);
  CHECK(number(json_of(again), "created") == 0);
  { std::ofstream(two.root() / "bad.jsonl") << "{\"schema\":\"swarm.task.v1\",\"id\":\"Z\"}\n"; }
  CHECK(two.swarm({"task", "import", (two.root() / "bad.jsonl").string()}).exit == 2);
  CHECK(listed_ids(two).size() == 2);
}

TEST_CASE("Task_AnImportMovesTheIdCounterPastWhatItWroteAndAddNeverFailsOnATakenId") {
  // T-2 ... T-1001 imported into a fresh workspace: the next add is T-1002 (the counter past them, in one go); an
  // import of lower ids never moves it back. Ids taken by hand past the counter (T-1 ... T-70) cost one add a
  // move past them all, never a failure.
  SwarmWorkspace ws;
  const auto file = ws.root() / "many.jsonl";
  auto line = [](int n) {
    return R"({"schema":"swarm.task.v1","id":"T-)" + std::to_string(n) + R"(","title":"t)" + std::to_string(n) +
           R"(","priority":2,"labels":[],"after":[],"state":"open","attempts":0,"max_attempts":3})" + "\n";
  };
  {
    std::ofstream out(file);
    for (int n = 2; n <= 1001; ++n) out << line(n);
  }
  auto imported = ws.swarm({"task", "import", file.string(), "--json"});
  REQUIRE_MESSAGE(imported.exit == 0, imported.err);
  CHECK(number(json_of(imported), "created") == 1000);
  CHECK(added(ws, {"After the import"}) == "T-1002");
  { std::ofstream(ws.root() / "low.jsonl") << line(1); }
  REQUIRE(ws.swarm({"task", "import", (ws.root() / "low.jsonl").string()}).exit == 0);
  CHECK(added(ws, {"Still counting up"}) == "T-1003");
  SwarmWorkspace by_hand;
  for (int n = 1; n <= 70; ++n) added(by_hand, {"t", "--id", "T-" + std::to_string(n)});
  CHECK(added(by_hand, {"Past the taken ones"}) == "T-71");
  CHECK(added(by_hand, {"And the next"}) == "T-72");
}

TEST_CASE("Task_HostileAndCorruptRecordsAreEscapedSkippedAndKept") {
  // a record another client wrote with control bytes in its title is listed escaped and valid in JSON; a
  // corrupt one is reported and skipped by claims; unknown fields survive a claim.
  SwarmWorkspace ws;
  std::optional<kv::Connection> c;
  c.emplace(kv::Connection::connect({.urls = {ws.server()->url()}}));
  auto bucket = kv::Bucket::open(*c, ws.names().tasks);
  bucket.create("H-1", R"({"schema":"swarm.task.v1","id":"H-1","title":"x\u001b[2Jy","priority":1,"labels":[],)"
                       R"("after":[],"state":"open","attempts":0,"max_attempts":3,"extra":{"keep":true}})");
  bucket.create("B-1", R"({"schema":"swarm.task.v1","id":"B-1","title":"b","state":"sleeping"})");
  auto text = ws.swarm({"task", "list"});
  CHECK(text.out.find("x\\x1b[2Jy") != std::string::npos);
  CHECK(text.out.find('\x1b') == std::string::npos);
  CHECK(text.err.find("corrupt") != std::string::npos);
  CHECK(json_of(ws.swarm({"task", "list", "--json"})));
  auto r = ws.swarm({"join", "--slot", "s", "--next", "--json"});
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  CHECK(field(json_of(r), "task_id") == "H-1");
  auto stored = bucket.get("H-1");
  REQUIRE(stored);
  CHECK(stored->value.find("\"extra\":{\"keep\":true}") != std::string::npos);
  CHECK(stored->value.find("\"state\":\"working\"") != std::string::npos);
  // doctor reports a corrupt record (a problem), --fix removes it (journaled); one of a state this version
  // does not know (maybe a newer swarm's) is a notice --fix leaves alone; the good ones stay.
  bucket.create("B-2", R"({"schema":"swarm.task.v1","id":"B-2","title":"b","state":"open","priority":9})");
  auto found = ws.swarm({"doctor", "--json"});
  CHECK(found.exit != 0);
  CHECK(found.out.find("\"check\":\"corrupt_task\"") != std::string::npos);
  CHECK(found.out.find("B-1") != std::string::npos);
  CHECK(found.out.find("B-2") != std::string::npos);
  auto fixed = ws.swarm({"doctor", "--fix"});
  CHECK_MESSAGE(fixed.out.find("removed the corrupt task record") != std::string::npos, fixed.out);
  CHECK_FALSE(bucket.get("B-2"));
  CHECK(bucket.get("B-1"));  // state "sleeping": maybe a newer swarm's
  CHECK(bucket.get("H-1"));
  auto after = ws.swarm({"doctor", "--json"});
  CHECK(after.out.find("B-2") == std::string::npos);
  CHECK(after.out.find("B-1") != std::string::npos);
  CHECK(ws.swarm({"log", "--kind", "fix", "--json"}).out.find("corrupt_task") != std::string::npos);
}

TEST_CASE("Task_DoctorSaysWhenTheQueueIsMissing") {
  // a workspace whose task bucket is gone (made before tasks): a notice naming `swarm up`, which makes it.
  SwarmWorkspace ws;
  {
    RawNats raw(ws.server()->url());
    REQUIRE(js_DeleteStream(raw.js, ("KV_" + ws.names().tasks).c_str(), nullptr, nullptr) == NATS_OK);
  }
  auto r = ws.swarm({"doctor", "--json"});
  CHECK(r.out.find("\"check\":\"task_bucket\"") != std::string::npos);
  CHECK(ws.swarm({"task", "list"}).exit == 6);
  REQUIRE(ws.swarm({"up"}).exit == 0);
  CHECK(ws.swarm({"doctor", "--json"}).out.find("task_bucket") == std::string::npos);
  CHECK(ws.swarm({"task", "list"}).exit == 0);
}

TEST_CASE("Task_TheReadyIndexFollowsEveryMoveAndAStaleOrMissingHintIsMended") {
  // add puts a hint, a claim removes it, a failed close puts it back; completing a task (its land) puts the
  // hints of the tasks that came after it; a hint deleted behind swarm's back is found by join --next's
  // whole listing and put back; a planted hint of a task that is not ready is skipped and removed.
  SwarmWorkspace ws;
  auto c = kv::Connection::connect({.urls = {ws.server()->url()}});
  auto bucket = kv::Bucket::open(c, ws.names().tasks);
  auto hinted = [&](const std::string& id) { return bucket.get("_ready." + id).has_value(); };
  const auto a = added(ws, {"A"});
  const auto b = added(ws, {"B", "--after", a});
  CHECK(hinted(a));
  CHECK_FALSE(hinted(b));
  REQUIRE(ws.swarm({"join", "--slot", "s1", "--next"}).exit == 0);
  CHECK_FALSE(hinted(a));
  REQUIRE(ws.swarm({"close", "--slot", "s1", "--result", "fail", "--no-artifact"}).exit == 0);
  CHECK(hinted(a));
  REQUIRE(ws.swarm({"join", "--slot", "s1", "--task", a}).exit == 0);
  { std::ofstream(ws.worktree("s1") / "a.txt") << "a\n"; }
  REQUIRE(ws.swarm({"commit", "--slot", "s1", "-m", "a"}).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "s1", "--result", "success"}).exit == 0);
  CHECK_FALSE(hinted(b));
  REQUIRE(ws.swarm({"land", "--slot", "s1"}).exit == 0);
  CHECK(field(task_of(ws, a), "state") == "completed");
  CHECK(hinted(b));  // A completed: B is ready
  // A hint lost (a writer killed between the record and its hint): still claimed, and mended.
  const auto c1 = added(ws, {"C", "--priority", "0"});
  bucket.erase("_ready." + c1, bucket.get("_ready." + c1)->revision);
  REQUIRE(ws.swarm({"task", "edit", b, "--priority", "4"}).exit == 0);
  auto joined = ws.swarm({"join", "--slot", "s2", "--next", "--json"});
  REQUIRE_MESSAGE(joined.exit == 0, joined.err);
  CHECK(field(json_of(joined), "task_id") == b);  // the only hint
  auto next = ws.swarm({"join", "--slot", "s3", "--next", "--json"});
  REQUIRE_MESSAGE(next.exit == 0, next.err);
  CHECK(field(json_of(next), "task_id") == c1);  // found by the whole listing
  // A planted hint of a working task, and of a task that does not exist: skipped, then removed.
  bucket.create("_ready.ghost", R"({"id":"ghost","priority":0,"labels":[]})");
  bucket.create("_ready." + c1 + "x", R"({"id":")" + c1 + R"(","priority":0,"labels":[]})");
  CHECK(ws.swarm({"join", "--slot", "s4", "--next"}).exit == 4);
  CHECK_FALSE(bucket.get("_ready.ghost"));
  CHECK_FALSE(bucket.get("_ready." + c1 + "x"));
  CHECK(ws.swarm({"task", "list"}).out.find("ghost") == std::string::npos);
}

TEST_CASE("Task_ForgedHintsNeitherBreakNorSteerJoinNext") {
  // hints planted by another client: an id no task can have, a priority of 1e300, a label the task lacks,
  // a value that is no JSON: join --next claims the right task, with its label, and the forged hints go.
  SwarmWorkspace ws;
  auto c = kv::Connection::connect({.urls = {ws.server()->url()}});
  auto bucket = kv::Bucket::open(c, ws.names().tasks);
  const auto plain = added(ws, {"Plain", "--priority", "3"});
  const auto labelled = added(ws, {"Labelled", "--priority", "4", "--label", "gpu"});
  bucket.create("_ready.evil", std::string(R"({"id":"a\u001b[2J)") + std::string(300, 'x') + R"(","priority":0,"labels":[]})");
  bucket.create("_ready.huge", R"({"id":"huge","priority":1e300,"labels":[]})");
  bucket.create("_ready.junk", "not json");
  // A forged hint giving the plain task the label gpu, most urgent.
  bucket.create("_ready." + plain + "-forged", R"({"id":")" + plain + R"(","priority":0,"labels":["gpu"]})");
  auto r = ws.swarm({"join", "--slot", "g1", "--next", "--label", "gpu", "--json"});
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  CHECK(field(json_of(r), "task_id") == labelled);
  CHECK(field(task_of(ws, plain), "state") == "open");
  auto next = ws.swarm({"join", "--slot", "g2", "--next", "--json"});
  REQUIRE_MESSAGE(next.exit == 0, next.err);
  CHECK(field(json_of(next), "task_id") == plain);
  for (const char* key : {"_ready.evil", "_ready.junk"}) CHECK_FALSE(bucket.get(key));
  // The hint of no task, met once nothing better is left: not claimed as a free-form id, and removed.
  CHECK(ws.swarm({"join", "--slot", "g3", "--next"}).exit == 4);
  CHECK_FALSE(bucket.get("_ready.huge"));
  CHECK(ws.swarm({"status", "--slot", "g3"}).exit == 4);
}
