// The command `lock` and `elect` run (or any a C++ holder of a lease runs):
// in a process group of its own, so that stopping it stops what it started
// too; under a small guard process that kills that group if swarm dies
// (the parent-death signal) and, when the command ends, kills and reaps what
// it left behind; and reaped, so that no zombie is left. A signal
// is never sent once it was reaped, so a pid the kernel gave to another
// process is never hit.
#pragma once

#include <sys/types.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "swarm/base/boot_clock.h"
#include "swarm/base/error.h"

namespace swarm {

// Throws bad_input ("cannot run X: ...") unless `program` names an
// executable file, directly (with a '/') or on PATH, as execvp would find it:
// to refuse a command that cannot start before anything is waited for or
// written. (It may still fail to start later; start() says so then.)
void require_runnable(const std::string& program);

// Where and how a command runs, beyond its argv and environment.
struct ChildOptions {
  std::string cwd;     // its working folder (empty: this process's)
  // Where its stdout and stderr both go (2: stderr, as swarm's stdout carries
  // only the result; a pipe's write end, for a caller that labels the
  // lines); -1: where this process's go.
  int output_fd = -1;
  // Variables of this process's environment it does not inherit (those in
  // `env` are set all the same): a land check gets no credential.
  bool (*withhold_env)(std::string_view name) = nullptr;
  // The command's group becomes the terminal's foreground while it runs,
  // when this process's is (an interactive agent reads its keyboard; a
  // Ctrl-C goes to it), and job control works as under a shell: when the
  // command stops (^Z, a read from the background), wait() takes the
  // terminal back and stops this process's group too; continued, it gives
  // the terminal back (if it is in the foreground again) and continues it.
  // Started in the background of a terminal, the command reads /dev/null.
  bool foreground = false;
};

// A command that could not be started (start() throws it): its errno, and
// the status a shell would give for it: 127 when it is not there, 126 when
// it is there and cannot be run (not executable, not a program).
struct CannotRun : Error {
  CannotRun(const std::string& message, int errno_value) : Error(Errc::bad_input, message), err(errno_value) {}
  int err;
  int shell_status() const { return err == ENOENT || err == ENOTDIR ? 127 : 126; }
};

class ChildProcess {
 public:
  // Runs argv (argv[0] looked up on PATH) with `env` added to this
  // process's environment. Signals this thread blocks are unblocked in the
  // child. Call it from a thread that lives as long as the child (the
  // parent-death signal fires when the forking thread ends). Throws
  // CannotRun (bad_input) naming argv[0] when it cannot be run.
  static std::unique_ptr<ChildProcess> start(const std::vector<std::string>& argv,
                                             const std::vector<std::pair<std::string, std::string>>& env,
                                             const ChildOptions& options = {});
  ~ChildProcess();

  pid_t pid() const { return pid_; }  // the guard's, which leads the command's process group
  // The command's own pid (its guard's child); 0 when it could not be told.
  pid_t command_pid() const { return command_pid_; }
  // Sends `signo` to its process group, unless it was reaped already.
  void signal(int signo);
  // Sends SIGUSR1 or SIGUSR2 to the command alone, not its group (what it
  // started does not get it), unless it ended: through its guard, which
  // passes it on only while the command's pid is still the command's.
  void signal_command(int signo);
  // Waits until it ends and reaps it: its status as a shell reports it
  // (128 + signal when a signal ended it).
  int wait();
  bool exited() const;
  // After wait(): whether a signal ended it (not an exit, even of 128 + n).
  bool signalled() const { return signalled_; }

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  // The command stopped: this process's group stops too, until continued.
  void stop_with_it();
  pid_t pid_;
  pid_t command_pid_ = 0;
  int terminal_ = -1;  // the terminal whose foreground it took, to give back
  bool job_control_ = false;  // it took the terminal (ChildOptions::foreground)
  mutable std::mutex mu_;
  bool exited_ = false;  // it ended: no signal goes to its pid any more
  bool signalled_ = false;  // a signal ended it (wait() tells)
};

// Stops a running command in time: SIGTERM now, SIGKILL at the moment
// given, unless it ended first (finished() says it did). From any thread.
class ChildStopper {
 public:
  explicit ChildStopper(ChildProcess& child) : child_(child) {}
  void stop_by(BootTime kill_at);
  void finished();

 private:
  ChildProcess& child_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool finished_ = false;
};

}  // namespace swarm
