// The command `lock` and `elect` run (or any a C++ holder of a lease runs):
// in a process group of its own, so that stopping it stops what it started
// too; under a small guard process that kills that group if swarm dies
// (the parent-death signal) and, when the command ends, kills and reaps what
// it left behind; and reaped, so that no zombie is left. A signal
// is never sent once it was reaped, so a pid the kernel gave to another
// process is never hit.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace swarm {

// Throws bad_input ("cannot run X: ...") unless `program` names an
// executable file, directly (with a '/') or on PATH, as execvp would find it:
// to refuse a command that cannot start before anything is waited for or
// written. (It may still fail to start later; start() says so then.)
void require_runnable(const std::string& program);

// Where and how a command runs, beyond its argv and environment.
struct ChildOptions {
  std::string cwd;                // its working folder (empty: this process's)
  bool stdout_to_stderr = false;  // its output goes to stderr (swarm's stdout carries only the result)
};

class ChildProcess {
 public:
  // Runs argv (argv[0] looked up on PATH) with `env` added to this
  // process's environment. Signals this thread blocks are unblocked in the
  // child. Call it from a thread that lives as long as the child (the
  // parent-death signal fires when the forking thread ends). Throws
  // bad_input naming argv[0] when it cannot be run.
  static std::unique_ptr<ChildProcess> start(const std::vector<std::string>& argv,
                                             const std::vector<std::pair<std::string, std::string>>& env,
                                             const ChildOptions& options = {});
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  // Sends `signo` to its process group, unless it was reaped already.
  void signal(int signo);
  // Waits until it ends and reaps it: its status as a shell reports it
  // (128 + signal when a signal ended it).
  int wait();
  bool exited() const;

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_;
  mutable std::mutex mu_;
  bool exited_ = false;  // it ended: no signal goes to its pid any more
};

}  // namespace swarm
