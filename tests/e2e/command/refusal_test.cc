// What swarm refuses, with which exit code, and that a refusal changes nothing.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include "e2e/swarm_fixture.h"
#include "kv/bucket.h"
#include "support/json_fields.h"

using namespace testing;
using namespace std::chrono_literals;

namespace {

std::string raw_record(SwarmWorkspace& ws, const std::string& slot) {
  auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
  auto entry = kv::Bucket::open(connection, ws.names().sessions).get(slot);
  return entry ? entry->value + "@" + std::to_string(entry->revision) : "(none)";
}

}  // namespace

TEST_CASE("ForeignHost_RefusedEvenWithForce") {
  // a live or stale session of another host is never taken or touched by join, commit, renew or close.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}, kHostB).exit == 0);
  auto before = raw_record(ws, "s");
  for (auto args : std::vector<std::vector<std::string>>{{"join", "--slot", "s", "--task", "T-1"},
                                                         {"join", "--slot", "s", "--task", "T-1", "--force"},
                                                         {"commit", "--slot", "s", "-m", "x"},
                                                         {"renew", "--slot", "s"},
                                                         {"close", "--slot", "s", "--result", "fail"}}) {
    auto r = ws.swarm(args, kHostA);
    CHECK_MESSAGE(r.exit == 5, args[0] << ": " << r.err);
    CHECK(r.err.find("host-b") != std::string::npos);
    CHECK(r.err.find("swarm evict --slot s") != std::string::npos);
  }
  CHECK(raw_record(ws, "s") == before);
  CHECK(std::filesystem::exists(ws.worktree("s")));  // host B's folder (same disk here) untouched
}

TEST_CASE("ForeignHost_SameHostnameOtherMachineIsForeign") {
  // two hosts that share a hostname are told apart by the machine id.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}, {{"SWARM_HOST", "box"}, {"SWARM_HOST_ID", "m1"}}).exit == 0);
  CHECK(ws.swarm({"renew", "--slot", "s"}, {{"SWARM_HOST", "box"}, {"SWARM_HOST_ID", "m2"}}).exit == 5);
  CHECK(ws.swarm({"renew", "--slot", "s"}, {{"SWARM_HOST", "box"}, {"SWARM_HOST_ID", "m1"}}).exit == 0);
}

TEST_CASE("Evict_RemovesAnotherHostsRecord") {
  // evict is the operator override: any host, and it prints what it removed.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-7"}, kHostB).exit == 0);
  auto r = ws.swarm({"evict", "--slot", "s", "--json"}, kHostA);
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  auto doc = json_of(r);
  CHECK(field(doc, "schema") == "swarm.evict.v1");
  cJSON* record = cJSON_GetObjectItem(doc.get(), "record");
  REQUIRE(record);
  CHECK(testing::text_of(record, "host") == "host-b");
  CHECK(raw_record(ws, "s") == "(none)");
  // Now host A may take it.
  CHECK(ws.swarm({"join", "--slot", "s", "--task", "T-7"}, kHostA).exit == 0);
}

TEST_CASE("Corrupt_RecordIsRefusedWithExit3AndNamesTheFix") {
  // a corrupt record stops join, commit, renew and close with exit 3; status shows it; evict removes it.
  SwarmWorkspace ws;
  {
    auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
    kv::Bucket::open(connection, ws.names().sessions).create("bad", "{\"slot\":\"bad\"");
  }
  for (auto args : std::vector<std::vector<std::string>>{{"join", "--slot", "bad", "--task", "T-1", "--force"},
                                                         {"commit", "--slot", "bad", "-m", "x"},
                                                         {"renew", "--slot", "bad"},
                                                         {"close", "--slot", "bad"}}) {
    auto r = ws.swarm(args);
    CHECK_MESSAGE(r.exit == 3, args[0] << ": " << r.err);
    CHECK(r.err.find("corrupt") != std::string::npos);
    CHECK(r.err.find("swarm doctor --fix") != std::string::npos);
    CHECK(r.err.find("swarm evict --slot bad") != std::string::npos);
  }
  auto status = ws.swarm({"status", "--json"});
  REQUIRE(status.exit == 0);
  auto doc = json_of(status);
  cJSON* first = cJSON_GetArrayItem(cJSON_GetObjectItem(doc.get(), "sessions"), 0);
  CHECK(testing::text_of(first, "state") == "corrupt");
  CHECK(testing::text_of(first, "error") == "the value is not valid JSON");
  CHECK(ws.swarm({"status"}).out.find("corrupt") != std::string::npos);
  CHECK(ws.swarm({"evict", "--slot", "bad"}).exit == 0);
  CHECK(ws.swarm({"join", "--slot", "bad", "--task", "T-1"}).exit == 0);
}

TEST_CASE("Corrupt_ASessionAndALeaseAreTheSameKindOfError") {
  // a record that cannot be read is kind "corrupt" (exit 3) in swarm.error.v1, a session's or a lease's, for
  // every verb that meets one, and says how to remove it.
  SwarmWorkspace ws;
  {
    auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
    kv::Bucket::open(connection, ws.names().sessions).create("bad", "{\"slot\":\"bad\"");
    auto leases = kv::Bucket::open(connection, ws.names().leases);
    leases.create("broken", "{\"name\":");
    leases.create("task.T-9", "[1]");
  }
  for (auto args : std::vector<std::vector<std::string>>{{"commit", "--slot", "bad", "-m", "x"},
                                                         {"lease", "acquire", "broken"},
                                                         {"join", "--slot", "fresh", "--task", "T-9"}}) {
    args.insert(args.begin(), "--json");
    auto r = ws.swarm(args);
    CHECK_MESSAGE(r.exit == 3, args[1] << ": " << r.err);
    auto doc = swarm::Json::parse(r.err);  // swarm.error.v1 goes to stderr
    REQUIRE_MESSAGE(doc, args[1] << ": " << r.err);
    CHECK_MESSAGE(field(doc, "kind") == "corrupt", args[1] << ": " << r.err);
    CHECK_MESSAGE(field(doc, "message").find("swarm doctor --fix") != std::string::npos, args[1] << ": " << r.err);
  }
}

TEST_CASE("BadSlotNames_Exit2BeforeAnyIo") {
  // a bad slot name is refused with exit 2 by every verb, even with NATS down, and creates nothing.
  SwarmWorkspace ws;
  ws.server()->stop();  // proves no NATS round trip happens first
  for (std::string bad : std::vector<std::string>{"a.b", "a/b", "", "a b", "*", ">", "../x", "-a", std::string(64, 'x')}) {
    for (auto args : std::vector<std::vector<std::string>>{{"join", "--slot", bad, "--task", "T-1"},
                                                           {"commit", "--slot", bad, "-m", "m"},
                                                           {"renew", "--slot", bad},
                                                           {"close", "--slot", bad},
                                                           {"evict", "--slot", bad},
                                                           {"status", "--slot", bad},
                                                           {"cwd", "--slot", bad}}) {
      auto r = ws.swarm(args);
      CHECK_MESSAGE(r.exit == 2, args[0] << " '" << bad << "': " << r.err);
      CHECK(r.out.empty());
    }
  }
  CHECK_FALSE(std::filesystem::exists(ws.root() / ".swarm/slots"));
  CHECK(ws.swarm({"join", "--slot", "ok", "--task", "bad\ttask"}).exit == 2);  // a control character
  CHECK(ws.swarm({"join", "--slot", "ok", "--task", ""}).exit == 2);
  CHECK(ws.swarm({"join", "--slot", "ok", "--task", std::string(256, 'x')}).exit == 2);
  CHECK(ws.swarm({"status", "--timeout", "soon"}).exit == 2);
  CHECK(ws.swarm({"close", "--slot", "ok", "--result", "maybe"}).exit == 2);
  CHECK(ws.swarm({"frobnicate"}).exit == 2);
}

TEST_CASE("Commit_PathsOutsideTheWorktreeExit2AndChangeNothing") {
  // "..", absolute paths elsewhere and symlinks leading out are refused; no commit, no renewal.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  auto wt = ws.worktree("s");
  write_file(wt / "inside.txt", "in\n");
  write_file(ws.root() / "outside.txt", "out\n");
  std::filesystem::create_symlink(ws.root(), wt / "escape");
  std::filesystem::create_symlink(ws.root() / "outside.txt", wt / "link-out.txt");
  auto before = raw_record(ws, "s");
  auto tip = ws.git({"rev-parse", "HEAD"}, wt).out;
  for (std::string bad : std::vector<std::string>{"../../../../outside.txt", (ws.root() / "outside.txt").string(), "/etc/passwd",
                          "escape/outside.txt", "link-out.txt", ".git/config", "../wt2/x"}) {
    auto r = ws.swarm({"commit", "--slot", "s", "-m", "m", "inside.txt", bad}, kHostA, wt);
    CHECK_MESSAGE(r.exit == 2, bad << ": " << r.err);
  }
  CHECK(ws.git({"rev-parse", "HEAD"}, wt).out == tip);
  CHECK(raw_record(ws, "s") == before);
  // A path that names no file is bad input too.
  CHECK(ws.swarm({"commit", "--slot", "s", "-m", "m", "nope.txt"}, kHostA, wt).exit == 2);
  // Inside paths, relative to the current folder, are fine.
  std::filesystem::create_directories(wt / "sub");
  write_file(wt / "sub/f.txt", "f\n");
  CHECK(ws.swarm({"commit", "--slot", "s", "-m", "sub", "f.txt"}, kHostA, wt / "sub").exit == 0);
  CHECK(ws.git({"show", "HEAD:sub/f.txt"}, wt).out == "f\n");
}

TEST_CASE("StoppedServer_Exit7WithinTheTimeout") {
  // with NATS gone every verb that needs it exits 7 within --timeout plus a second.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  ws.server()->stop();
  for (auto args : std::vector<std::vector<std::string>>{{"join", "--slot", "t", "--task", "T-1"},
                                                         {"commit", "--slot", "s", "-m", "m"},
                                                         {"renew", "--slot", "s"},
                                                         {"close", "--slot", "s", "--no-artifact"},
                                                         {"evict", "--slot", "s"},
                                                         {"status"}}) {
    args.insert(args.end(), {"--timeout", "2s"});
    auto r = ws.swarm(args);
    CHECK_MESSAGE(r.exit == 7, args[0] << ": " << r.err);
    CHECK(r.took < 3s);
    CHECK(r.err.find("cannot reach NATS") != std::string::npos);
  }
  CHECK(std::filesystem::exists(ws.worktree("s")));
}

TEST_CASE("SilentServer_Exit7WithinTheTimeout") {
  // a server that accepts connections but never answers: exit 7 once the timeout passes.
  SwarmWorkspace ws;
  SilentListener silent;
  auto r = ws.swarm({"status", "--timeout", "1s", "--nats-url", silent.url()});
  CHECK(r.exit == 7);
  CHECK(r.took < 2s);
}

TEST_CASE("NotBootstrapped_Exit6WithoutTellingTheLeafToBootstrap") {
  // no .swarm/, or no config or hub: exit 6, and the message never tells the agent to run swarm up itself (it
  // may say where a workspace comes from: its orchestrator's `swarm up`).
  TempDir empty;
  Command c;
  c.args = {SWARM_BINARY, "join", "--slot", "s", "--task", "T-1"};
  c.cwd = empty.path();
  c.env = {{"SWARM_WORKSPACE", ""}, {"NATS_URL", ""}};
  auto r = run(c);
  CHECK(r.exit == 6);
  CHECK(r.err.find("run swarm up") == std::string::npos);
  CHECK(r.err.find("run `swarm up`") == std::string::npos);
  CHECK(r.err.find("whoever runs the fleet: `swarm up`") != std::string::npos);
  CHECK(r.err.find("bootstrap") == std::string::npos);
  std::filesystem::create_directories(empty.path() / ".swarm");
  for (auto args : std::vector<std::vector<std::string>>{{"join", "--slot", "s", "--task", "T-1"},
                                                         {"status"},
                                                         {"commit", "--slot", "s", "-m", "m"}}) {
    c.args = {SWARM_BINARY};
    c.args.insert(c.args.end(), args.begin(), args.end());
    auto r2 = run(c);
    CHECK_MESSAGE(r2.exit == 6, r2.err);
    CHECK(r2.err.find("swarm up") == std::string::npos);
  }
  CHECK(std::filesystem::is_empty(empty.path() / ".swarm"));
}

TEST_CASE("NotBootstrapped_MissingHubIsExit6ForJoin") {
  // a workspace whose hub is gone refuses join with exit 6 and writes no record.
  SwarmWorkspace ws;
  std::filesystem::rename(ws.root() / ".swarm/hub.git", ws.root() / "hub-moved");
  auto r = ws.swarm({"join", "--slot", "s", "--task", "T-1"});
  CHECK(r.exit == 6);
  CHECK(r.err.find("hub") != std::string::npos);
  CHECK(r.err.find("swarm up") == std::string::npos);
  CHECK(ws.swarm({"status", "--slot", "s"}).exit == 4);
}

TEST_CASE("Json_EveryVerbPrintsOneDocumentWithItsSchema") {
  // with --json stdout is exactly one JSON document named swarm.<verb>.v1; errors go to stderr as swarm.error.v1.
  SwarmWorkspace ws;
  auto expect = [&](const std::vector<std::string>& args, const std::string& schema) {
    auto with_json = args;
    with_json.push_back("--json");
    auto r = ws.swarm(with_json);
    CHECK_MESSAGE(r.exit == 0, args[0] << ": " << r.err);
    auto doc = json_of(r);
    REQUIRE_MESSAGE(doc, args[0] << " printed: " << r.out);
    CHECK(field(doc, "schema") == schema);
    CHECK(r.out.find('\n') == r.out.size() - 1);  // one line
    return doc;
  };
  expect({"up", "--nats-url", ws.server()->url()}, "swarm.up.v1");
  auto join = expect({"join", "--slot", "s", "--task", "T-1"}, "swarm.join.v1");
  CHECK(field(join, "worktree") == ws.worktree("s").string());
  write_file(ws.worktree("s") / "f.txt", "f\n");
  auto commit = expect({"commit", "--slot", "s", "-m", "f"}, "swarm.commit.v1");
  CHECK(field(commit, "commit").size() == 40);
  expect({"renew", "--slot", "s"}, "swarm.renew.v1");
  expect({"status"}, "swarm.status.v1");
  expect({"cwd", "--slot", "s"}, "swarm.cwd.v1");
  expect({"close", "--slot", "s"}, "swarm.close.v1");
  expect({"doctor"}, "swarm.doctor.v1");  // healthy: exit 0
  REQUIRE(ws.swarm({"join", "--slot", "e", "--task", "T-1"}).exit == 0);
  expect({"evict", "--slot", "e"}, "swarm.evict.v1");
  expect({"down"}, "swarm.down.v1");  // an external server: nothing to stop
  // The global flag is accepted before the verb too.
  auto before = ws.swarm({"--json", "status"});
  CHECK(field(json_of(before), "schema") == "swarm.status.v1");

  auto err = ws.swarm({"renew", "--slot", "missing", "--json"});
  CHECK(err.exit == 4);
  CHECK(err.out.empty());
  auto error_doc = swarm::Json::parse(err.err);
  REQUIRE(error_doc);
  CHECK(field(error_doc, "schema") == "swarm.error.v1");
  CHECK(field(error_doc, "kind") == "not_found");
  CHECK(number(error_doc, "exit") == 4);
  CHECK(field(error_doc, "message").find("missing") != std::string::npos);
  // Usage errors too, also those that stop the parse before --json is read.
  for (auto args : std::vector<std::vector<std::string>>{{"join", "--json"},
                                                         {"join", "--json", "--slot"},
                                                         {"--json", "status", "--timeout"},
                                                         {"close", "--slot", "a", "--json", "--result"}}) {
    auto usage = ws.swarm(args);
    CHECK(usage.exit == 2);
    CHECK(usage.out.empty());
    CHECK_MESSAGE(field(swarm::Json::parse(usage.err), "schema") == "swarm.error.v1", usage.err);
  }
}

TEST_CASE("Help_EveryVerbHasAnExample") {
  // `swarm VERB --help` exits 0 and shows an example.
  SwarmWorkspace ws({.up = false});
  for (std::string verb : {"up", "down", "join", "commit", "renew", "close", "evict", "status", "cwd", "doctor"}) {
    auto r = ws.swarm({verb, "--help"});
    CHECK_MESSAGE(r.exit == 0, verb);
    // The footer shows the verb run (the usage line above it always says "Usage: swarm VERB").
    auto example = r.out.find("Example");
    REQUIRE_MESSAGE(example != std::string::npos, verb << ": " << r.out);
    CHECK_MESSAGE(r.out.find("swarm " + verb, example) != std::string::npos, verb << ": " << r.out);
  }
  auto top = ws.swarm({"--help"});
  CHECK(top.exit == 0);
  CHECK(top.out.find("Exit codes") != std::string::npos);
}

TEST_CASE("BadInput_Exit2NamingTheValueBeforeAnyIo") {
  // values that are no duration, bucket, URL or verb stop the command with exit 2 and a message naming them, before
  // anything is read or written; an empty value is a value, never "not given".
  SwarmWorkspace ws;
  auto record_before = raw_record(ws, "s");
  const std::string huge = std::string(300, '1') + "s";
  struct Case {
    std::vector<std::string> args;
    std::string named;
  };
  const std::vector<Case> cases = {
      {{"up", "--ttl", huge}, "bad duration '1111"},
      {{"up", "--ttl", ""}, "bad duration ''"},
      {{"up", "--ttl", "2h"}, "--ttl 2h"},
      {{"up", "--replicas", "0"}, "0"},
      {{"status", "--bucket", ""}, "bad bucket name ''"},
      {{"status", "--bucket", "a.b"}, "'a.b'"},
      {{"status", "--nats-url", ""}, "''"},
      {{"status", "--nats-url", "::::"}, "'::::'"},
      {{"status", "--nats-url", "http://127.0.0.1:4222"}, "'http'"},
      {{"status", "--nats-url", "nats://127.0.0.1:99999"}, "'99999'"},
      {{"join", "--slot", "s", "--task", "T-1", "--timeout", "1e400s"}, "'1e400s'"},
      {{"renew", "--slot", "s", "--timeout", huge}, "bad duration '1111"},
      {{"frobnicate"}, "unknown verb 'frobnicate'"},
      {{"--workspace", ws.root().string(), "frobnicate", "--json"}, "unknown verb 'frobnicate'"},
      // A typo beside a word that is a verb's name: still every verb listed.
      {{"lcok", "deploy", "--", "git", "commit"}, "the verbs are up, down, join, run, commit, renew, close, evict, status"},
  };
  for (const auto& c : cases) {
    auto r = ws.swarm(c.args);
    CHECK_MESSAGE(r.exit == 2, c.args[0] << " " << (c.args.size() > 1 ? c.args[1] : "") << ": " << r.err);
    CHECK_MESSAGE(r.err.find(c.named) != std::string::npos, r.err);
    CHECK(r.out.empty());
  }
  CHECK(raw_record(ws, "s") == record_before);
  CHECK_FALSE(std::filesystem::exists(ws.worktree("s")));
  // A refused up leaves a new folder without .swarm/.
  SwarmWorkspace fresh({.up = false});
  CHECK(fresh.swarm({"up", "--ttl", ""}).exit == 2);
  CHECK(fresh.swarm({"up", "--replicas", "0", "--nats-url", fresh.server()->url()}).exit == 2);
  CHECK(fresh.swarm({"up", "--nats-url", ""}).exit == 2);
  CHECK_FALSE(std::filesystem::exists(fresh.root() / ".swarm"));
}

TEST_CASE("Commit_AFifoOrSocketIsRefusedNotNothingToCommit") {
  // a named pipe is no file git can keep: exit 2 naming it, and the branch does not move.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  auto pipe = ws.worktree("s") / "pipe";
  REQUIRE(::mkfifo(pipe.c_str(), 0600) == 0);
  auto tip = ws.git({"rev-parse", "HEAD"}, ws.worktree("s")).out;
  auto r = ws.swarm({"commit", "--slot", "s", "-m", "pipe", "pipe"}, kHostA, ws.worktree("s"));
  CHECK(r.exit == 2);
  CHECK(r.err.find("pipe is a FIFO") != std::string::npos);
  CHECK(ws.git({"rev-parse", "HEAD"}, ws.worktree("s")).out == tip);
}
