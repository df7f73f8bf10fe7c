// `swarm run`: an agent's whole life under one process. It takes the slot
// (as join does), runs the agent in the slot's worktree with the session's
// variables and the terminal, keeps the session alive however long the agent
// thinks (a SessionKeeper: every TTL/3, on its own thread), stops the agent
// before the session's deadline when the session is lost (taken over,
// evicted, out of reach), and when the agent ends closes the slot as it
// ended: success on exit 0 with a commit in this run (or `no_artifact`),
// else fail. While the agent lives the slot's
// folder is the run's (its run lock): no other join of this host takes it.
// If the run itself dies, the agent gets SIGKILL (its guard's parent-death
// signal), and the session is `dead` at once on this host (adr/0036).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "swarm/base/child_process.h"
#include "swarm/slots/lifecycle.h"
#include "swarm/slots/session_keeper.h"

namespace swarm {

// How long an agent asked to stop (a signal to the run) has before SIGKILL.
inline constexpr std::chrono::seconds kDefaultRunGrace{10};

struct RunOptions {
  std::string slot;
  std::string task;
  // --next: the queue's most urgent ready task (with these labels), waited
  // for up to `wait`, instead of `task`.
  bool next = false;
  std::vector<std::string> labels;
  std::chrono::milliseconds wait{0};
  Takeover takeover = Takeover::only_stale;
  std::string base;        // join --base
  unsigned ports = 0;      // join --ports
  std::vector<std::string> agent;  // its argv
  // Variables the agent gets besides the slot's (the run's socket).
  std::vector<std::pair<std::string, std::string>> env;
  bool keep = false;                 // leave the slot open when the agent ends
  std::optional<std::string> commit;  // commit what is left with this message (a success only)
  // An exit 0 closes as success with no commit in this run (close
  // --no-artifact); without it, as fail saying no commit was made.
  bool no_artifact = false;
  std::chrono::milliseconds grace = kDefaultRunGrace;
  // The agent started (its process), then ended (nullptr): the caller
  // routes its signals to it meanwhile. Called on the run's thread.
  std::function<void(ChildProcess*)> running;
  // The signal the run was sent (0: none): the agent has `grace` to end
  // after it, then gets SIGKILL. Asked from another thread.
  std::function<int()> signalled;
  // What happens, for people (from any thread).
  std::function<void(const std::string&)> note;
  std::function<void(const std::string&)> warn;
};

struct RunOutcome {
  std::string slot;
  std::string task;
  std::uint64_t session = 0;       // the session token
  std::filesystem::path worktree;
  int status = 0;                  // the agent's, as a shell reports it (128 + a signal)
  std::string ended;               // exited, signalled (a signal ended the agent), session_lost
  std::optional<SessionKeeper::Loss> lost;
  std::string lost_why;
  std::string result;              // success, fail; "" when the slot was kept or lost
  bool closed = false;
  std::optional<std::string> committed;  // --commit's commit, when it made one
  // Why the slot closed as fail though the agent exited 0 ("": it did not):
  // it committed nothing in this run (close's artifact rule).
  std::string why;
  std::vector<std::string> warnings;
  // What failed after the agent ended (the commit or the close): the run's
  // exit is its code then, and the slot stays as that left it.
  std::optional<Error> failed;
};

// Runs the agent under the slot: see the file's comment. Throws what join
// throws (nothing started then), and what refuses the agent's start (the
// slot is closed as fail again first); later failures are in the outcome.
RunOutcome run_agent(SlotLifecycle& lifecycle, const RunOptions& options);

}  // namespace swarm
