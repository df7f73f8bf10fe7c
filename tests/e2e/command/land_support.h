// What the landing tests share: the hub read by the real git, a slot
// finished as an agent finishes it, and a lander stopped at a test seam.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "e2e/swarm_fixture.h"
#include "support/json_fields.h"

namespace testing::land {

namespace fs = std::filesystem;

// The hub's tip of `ref` (empty when it has none), by the real git.
inline std::string hub_tip(const SwarmWorkspace& ws, const std::string& ref, const fs::path& hub = {}) {
  auto r = ws.git({"--git-dir", (hub.empty() ? ws.root() / ".swarm/hub.git" : hub).string(), "rev-parse", "--verify",
                   "-q", ref + "^{commit}"});
  std::string out = r.out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

inline std::string hub_git(const SwarmWorkspace& ws, const std::vector<std::string>& args, const fs::path& hub = {}) {
  std::vector<std::string> full = {"--git-dir", (hub.empty() ? ws.root() / ".swarm/hub.git" : hub).string()};
  full.insert(full.end(), args.begin(), args.end());
  return ws.git(full).out;
}

// A plain `git commit -am` in a folder, as an agent would run it.
inline RunResult plain_commit(const SwarmWorkspace& ws, const fs::path& dir, const std::string& message) {
  ws.git({"add", "-A"}, dir);
  return ws.git({"-c", "user.name=agent", "-c", "user.email=agent@example.com", "commit", "-q", "-m", message}, dir);
}

// A commit of `file` pushed to swarm/<slot> from a clone of the hub of its
// own (in $HOME/<clone>), as someone outside swarm would push it.
inline void push_by_hand(const SwarmWorkspace& ws, const std::string& slot, const std::string& clone,
                         const std::string& file, const std::string& text, const std::string& message) {
  const fs::path dir = ws.home() / clone;
  REQUIRE(ws.git({"clone", "-q", "-b", "swarm/" + slot, (ws.root() / ".swarm/hub.git").string(), dir.string()}).exit == 0);
  write_file(dir / file, text);
  REQUIRE(plain_commit(ws, dir, message).exit == 0);
  REQUIRE(ws.git({"push", "-q", "origin", "swarm/" + slot}, dir).exit == 0);
}

// join, write `file`, commit, close --result success: a finished slot.
inline void finish(const SwarmWorkspace& ws, const std::string& slot, const std::string& file, const std::string& text,
            const std::map<std::string, std::string>& host = kHostA) {
  auto join = ws.swarm({"join", "--slot", slot, "--task", "T-" + slot}, host);
  REQUIRE_MESSAGE(join.exit == 0, join.err);
  write_file(ws.worktree(slot) / file, text);
  auto commit = ws.swarm({"commit", "--slot", slot, "-m", slot + ": " + file}, host);
  REQUIRE_MESSAGE(commit.exit == 0, commit.err);
  auto close = ws.swarm({"close", "--slot", slot, "--result", "success"}, host);
  REQUIRE_MESSAGE(close.exit == 0, close.err);
}

inline bool json_true(const swarm::Json& doc, const char* name) {
  return doc && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc.get(), name));
}

inline const cJSON* row_of(const swarm::Json& doc, const std::string& slot) {
  const cJSON* row = nullptr;
  cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(doc.get(), "branches")) {
    if (text_of(row, "slot") == slot) return row;
  }
  return nullptr;
}

// Whether process `pid` is stopped (SIGSTOP), within `limit`.
inline bool stopped_within(pid_t pid, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (process_state(pid) == 'T') return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}


}  // namespace testing::land
