// run_agent (swarm/run/agent_run.h) against a real server and a real hub,
// in-process: an agent's whole life under one call, and how its end closes
// the slot: a success needs a commit of this run, a failed agent fails the
// slot, --keep leaves it open.
#include "swarm/run/agent_run.h"

#include <doctest/doctest.h>

#include "support/nats_server.h"
#include "support/temp_dir.h"
#include "swarm/git/hub.h"
#include "swarm/workspace/bootstrap.h"

using namespace swarm;

namespace {

struct Fixture {
  testing::NatsServer server;
  testing::TempDir dir{"swarm-run"};
  UpResult up_result = up({.root = dir.path(), .nats_url = server.url(), .connection = {}});
  kv::Connection connection = connect_nats({.urls = {server.url()}});
  std::vector<std::string> said;

  SlotLifecycle lifecycle() {
    return SlotLifecycle(up_result.workspace, up_result.config, SessionStore::open(connection, up_result.config.bucket),
                         LeaseStore::open(connection, up_result.config.names()), {"host-a", "id-a"});
  }
  SessionStore store() { return SessionStore::open(connection, up_result.config.bucket); }

  RunOutcome run(const std::string& slot, const std::string& task, const std::string& script,
                 std::function<void(RunOptions&)> adjust = {}) {
    RunOptions o;
    o.slot = slot;
    o.task = task;
    o.agent = {"/bin/sh", "-c", script};
    o.grace = std::chrono::seconds(2);
    o.signalled = [] { return 0; };
    o.note = [this](const std::string& w) { said.push_back(w); };
    o.warn = [this](const std::string& w) { said.push_back(w); };
    if (adjust) adjust(o);
    auto life = lifecycle();
    return run_agent(life, o);
  }
};

}  // namespace

TEST_CASE("RunAgent_ASuccessCommitsWhatItLeftAndClosesTheSlot") {
  Fixture f;
  const RunOutcome out = f.run("s", "T-1", "echo work > made.txt", [](RunOptions& o) { o.commit = "s: made"; });
  CHECK(out.status == 0);
  CHECK(out.ended == "exited");
  CHECK(out.closed);
  CHECK(out.result == "success");
  CHECK(out.committed.has_value());
  CHECK_FALSE(out.failed.has_value());
  CHECK_FALSE(f.store().get("s").has_value());
  // What it made is on the hub, on the slot's branch.
  const auto tip = Hub::open(f.up_result.config.hub_location()).branch_tip("swarm/s");
  REQUIRE(tip.has_value());
  CHECK(*tip == *out.committed);
}

TEST_CASE("RunAgent_AFailedAgentOrOneThatCommittedNothingFailsTheSlot") {
  Fixture f;
  const RunOutcome failed = f.run("s", "T-1", "exit 3");
  CHECK(failed.status == 3);
  CHECK(failed.closed);
  CHECK(failed.result == "fail");
  CHECK_FALSE(f.store().get("s").has_value());

  // Exit 0 with nothing committed in this run: a fail that says why.
  const RunOutcome empty = f.run("t", "T-2", "true");
  CHECK(empty.status == 0);
  CHECK(empty.closed);
  CHECK(empty.result == "fail");
  CHECK_FALSE(empty.why.empty());
  // Unless the work needs none.
  const RunOutcome no_artifact = f.run("u", "T-3", "true", [](RunOptions& o) { o.no_artifact = true; });
  CHECK(no_artifact.result == "success");
}

TEST_CASE("RunAgent_KeepLeavesTheSlotOpenAndItsSessionLive") {
  Fixture f;
  const RunOutcome out = f.run("s", "T-1", "echo kept > k.txt", [](RunOptions& o) { o.keep = true; });
  CHECK(out.status == 0);
  CHECK_FALSE(out.closed);
  CHECK(out.result.empty());
  const auto entry = f.store().get("s");
  REQUIRE(entry.has_value());
  REQUIRE_FALSE(entry->corrupt());
  CHECK(entry->session->task_id == "T-1");
  // Its worktree and what the agent left in it are there for the next run.
  CHECK(std::filesystem::exists(out.worktree / "k.txt"));
}

TEST_CASE("RunAgent_AnAgentThatCannotStartLeavesNothingLive") {
  Fixture f;
  RunOptions o;
  o.slot = "s";
  o.task = "T-1";
  o.agent = {"/nonexistent/agent"};
  o.signalled = [] { return 0; };
  auto life = f.lifecycle();
  bool threw = false;
  try {
    const RunOutcome out = run_agent(life, o);
    CHECK(out.status != 0);
  } catch (const Error&) {
    threw = true;
  }
  CAPTURE(threw);
  // Either way the slot is not left with a live session and no agent.
  const auto entry = f.store().get("s");
  CHECK_FALSE(entry.has_value());
}
