// A land's check: CHECK run (no shell) in the land's checkout, its output
// relayed a line at a time for the caller to label with its slot, and
// stoppable from another thread (the lease's keeper, when the lease is lost)
// without ever signalling a process that is gone.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "swarm/base/child_process.h"
#include "swarm/base/safe_dir.h"
#include "swarm/workspace/workspace.h"

namespace swarm {

// A check to run on the merged tree before the onto branch moves: the
// workspace's required check (`up --check`) and the one given after `--`,
// each run (no shell) in turn until one fails.
struct LandCheck {
  std::vector<std::vector<std::string>> commands;  // empty: none
  bool forced = false;                         // the workspace's check was skipped (--no-check): journaled
  int retries = 0;                             // a failed check is run again on the same tree up to this often
  std::string who;                             // what it checks (a slot, a batch's slots): for `output`
  std::function<void(ChildProcess*)> running;  // started (its process), then ended (nullptr)
  std::function<bool()> interrupted;           // a signal stopped it: the land stops (Cancelled), nothing journaled
  // Each line the check prints (stdout and stderr), as it comes; unset: its
  // output goes to stderr as it is.
  std::function<void(std::string_view who, std::string_view line)> output;
};

// What a check never sees of the lander's environment (a check is code from
// an agent's branch): every inherited NATS_* and SWARM_* variable (the NATS
// and hub credentials, the session token, the workspace), whatever swarm
// sets for the check itself aside, and every variable that names a
// credential: a word of its name (split at `_`, any case) is TOKEN,
// PASSWORD, SECRET, KEY, AUTH, CREDENTIALS or the like (GITHUB_TOKEN,
// AWS_SECRET_ACCESS_KEY, SSH_AUTH_SOCK), or it starts with AWS_.
bool withheld_from_checks(std::string_view variable);

// Where the checkouts the land checks of `ws` run in are kept: outside the
// workspace, in this user's cache (${XDG_CACHE_HOME:-~/.cache}/swarm/land/
// <folder name>-<hash of its path>, else /tmp/swarm-<uid>/land/...), each
// folder on the way this user's own and no link. No relative path from a
// check reaches .swarm/'s secrets (.swarm/nats/token, .swarm/serve/token).
SafeDir land_checkouts(const Workspace& ws);

class CheckRun {
 public:
  // Runs `command` in `dir` with `env` added to the lander's environment
  // (less what withheld_from_checks names), until it ends: its status as a
  // shell reports it (126 when it cannot be executed, 127 when it is not
  // there).
  int run(const LandCheck& check, const std::vector<std::string>& command, const std::filesystem::path& dir,
          const std::vector<std::pair<std::string, std::string>>& env);
  // SIGKILL to the check's process group while it runs; from any thread.
  void kill();

 private:
  std::mutex mu_;
  std::unique_ptr<ChildProcess> running_;
};

}  // namespace swarm
