// What a user reads when a verb says no, through the real binary: numbers
// taken in decimal only, a missing name named, an option a verb lacks
// named (and where it lives), a workspace that is not there explained, a
// busy port's way out, aligned tables and counts that add up.
#include <doctest/doctest.h>

#include <thread>

#include "e2e/serve_fixture.h"
#include "e2e/swarm_fixture.h"
#include "support/json_fields.h"

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

// Whole numbers are decimal digits: 0x10, " 5", "+3" and "1e3" are exit 2
// naming the value, before anything is read or written; 010 is ten.
TEST_CASE("Messages_NumbersAreDecimalOnly") {
  SwarmWorkspace ws({.up_args = {"--ports", "20000-20099"}});
  for (const std::string bad : {"0x10", " 5", "5 ", "+3", "1e3", "", "-1"}) {
    CAPTURE(bad);
    auto join = ws.swarm({"join", "--slot", "a", "--task", "T-1", "--ports", bad});
    CHECK(join.exit == 2);
    if (!bad.empty()) CHECK(join.err.find(bad) != std::string::npos);
    CHECK(ws.swarm({"lease", "limit", "sem", bad}).exit == 2);
    CHECK(ws.swarm({"up", "--replicas", bad}).exit == 2);
  }
  CHECK_FALSE(fs::exists(ws.worktree("a")));
  auto ten = ws.swarm({"join", "--slot", "a", "--task", "T-1", "--ports", "010", "--json"});
  REQUIRE_MESSAGE(ten.exit == 0, ten.err);
  CHECK(number(json_of(ten), "ports") == 10);
}

TEST_CASE("Messages_WhatIsMissingOrUnknownIsNamed") {
  SwarmWorkspace ws;
  auto lock = ws.swarm({"lock", "--", "true"});
  CHECK(lock.exit == 2);
  CHECK(lock.err.find("name the lease before --") != std::string::npos);
  auto since = ws.swarm({"status", "--since", "1h"});
  CHECK(since.exit == 2);
  CHECK(since.err.find("has no option --since") != std::string::npos);
  CHECK(since.err.find("swarm log --since") != std::string::npos);
  // No workspace: where one comes from, without telling an agent to make it.
  const fs::path empty = ws.home() / "empty";
  fs::create_directories(empty);
  auto none = run({{swarm_binary(), "status"}, {{"SWARM_WORKSPACE", ""}, {"HOME", ws.home().string()}}, empty});
  CHECK(none.exit == 6);
  CHECK(none.err.find("swarm up") != std::string::npos);
}

TEST_CASE("Messages_ABusyPortNamesTheWayOut") {
  SwarmWorkspace ws;
  Served first(ws);
  auto second = ws.swarm({"serve", "--listen", "127.0.0.1:" + std::to_string(first.port())});
  CHECK(second.exit == 3);
  CHECK(second.err.find("--listen 127.0.0.1:0") != std::string::npos);
}

TEST_CASE("Messages_TablesAlignAndCountsAddUp") {
  SwarmWorkspace ws({.embedded = true});
  for (const std::string slot : {"r", "a-much-longer-slot-name"}) {
    REQUIRE(ws.swarm({"join", "--slot", slot, "--task", "T-" + slot}).exit == 0);
    write_file(ws.worktree(slot) / "left.txt", "left\n");
    REQUIRE(ws.swarm({"close", "--slot", slot, "--result", "fail"}).exit == 0);
  }
  // recovery list: each column starts where its header does.
  auto list = ws.swarm({"recovery", "list"});
  REQUIRE(list.exit == 0);
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < list.out.size();) {
    const auto end = list.out.find('\n', at);
    lines.push_back(list.out.substr(at, end - at));
    at = end == std::string::npos ? list.out.size() : end + 1;
  }
  REQUIRE(lines.size() == 3);
  for (const char* header : {"SLOT", "FILES", "HUB REFS"}) {
    const auto column = lines[0].find(header);
    CAPTURE(header);
    for (std::size_t i = 1; i < lines.size(); ++i) {
      CHECK(lines[i].size() > column);
      CHECK(lines[i][column - 1] == ' ');
      CHECK(lines[i][column] != ' ');
    }
  }
  // One live session: its server is lost, in the singular.
  REQUIRE(ws.swarm({"join", "--slot", "live", "--task", "T-live"}).exit == 0);
  auto down = ws.swarm({"down"});
  CHECK(down.err.find("1 live session (live) loses its server") != std::string::npos);
}

// A join this host refuses as a live session says the age status shows and
// why it waits longer than that (the clock's margin), so the observer and
// the taker can be told apart.
TEST_CASE("Messages_AJoinRefusedAsLiveGivesTheAgeAndTheMargin") {
  SwarmWorkspace ws({.up_args = {"--ttl", "6s"}});
  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-1"}).exit == 0);
  auto again = ws.swarm({"join", "--slot", "a", "--task", "T-1"});
  CHECK(again.exit == 3);
  CAPTURE(again.err);
  CHECK(again.err.find("renewed ") != std::string::npos);
  CHECK(again.err.find(" ago; a join takes it over once it is surely older than 4s") != std::string::npos);
  CHECK(again.err.find("--force") != std::string::npos);
}

// `swarm UNKNOWN --help` is no help page: exit 2 naming the word and the verbs.
TEST_CASE("Messages_HelpOfAnUnknownVerbIsExit2NamingTheVerbs") {
  SwarmWorkspace ws;
  for (const auto& args : {std::vector<std::string>{"frobnicate", "--help"},
                                              std::vector<std::string>{"frobnicate"},
                                              std::vector<std::string>{"help", "frobnicate"}}) {
    auto r = ws.swarm(args);
    CAPTURE(args.size());
    CAPTURE(r.err);
    CHECK(r.exit == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("frobnicate") != std::string::npos);
    CHECK(r.err.find("join") != std::string::npos);
  }
}
