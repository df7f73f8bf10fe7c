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

namespace swarm {

// A check to run on the merged tree before the onto branch moves.
struct LandCheck {
  std::vector<std::string> command;            // empty: none
  int retries = 0;                             // a failed check is run again on the same tree up to this often
  std::string who;                             // what it checks (a slot, a batch's slots): for `output`
  std::function<void(ChildProcess*)> running;  // started (its process), then ended (nullptr)
  std::function<bool()> interrupted;           // a signal stopped it: the land stops (Cancelled), nothing journaled
  // Each line the check prints (stdout and stderr), as it comes; unset: its
  // output goes to stderr as it is.
  std::function<void(std::string_view who, std::string_view line)> output;
};

class CheckRun {
 public:
  // Runs `check.command` in `dir` with `env` added, until it ends: its
  // status as a shell reports it (126 when it cannot be executed, 127 when
  // it is not there).
  int run(const LandCheck& check, const std::filesystem::path& dir,
          const std::vector<std::pair<std::string, std::string>>& env);
  // SIGKILL to the check's process group while it runs; from any thread.
  void kill();

 private:
  std::mutex mu_;
  std::unique_ptr<ChildProcess> running_;
};

}  // namespace swarm
