#include "swarm/base/child_process.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "swarm/base/error.h"
#include "swarm/base/process_secrets.h"

namespace swarm {

namespace {

// The guard: a process between swarm and its command, leader of the
// command's process group and the subreaper of everything the command
// starts. The parent-death signal reaches only a direct child, so the guard
// takes it (a realtime signal, handled) and kills the whole group: the
// command and everything it started die with swarm. SIGUSR1 and SIGUSR2
// sent to the guard alone go on to the command alone (`elect --all` tells
// its command it leads, or no longer does): the guard knows the command's
// pid is still the command's, as it reaps it itself. When the command ends, the guard
// leaves the group, kills what the command left in it and reaps it all
// before it ends itself: when swarm sees the guard end, nothing of the
// command runs any more, so the lease can go. It ignores the signals swarm
// sends the group (they are the command's), and ends with the command's
// status (by the same signal when one ended it). Only async-signal-safe calls
// here: it is a fork of a threaded process.
volatile sig_atomic_t g_group = 0;  // the command's process group (the guard's pid)
// The command's pid while it is not reaped (0 before it is forked and from
// just before it is reaped, with SIGUSR1 and SIGUSR2 blocked).
volatile sig_atomic_t g_command = 0;

// What the guard and the command say to start() on the report pipe: the
// command's pid (from the guard, once forked), or why its exec failed.
struct Report {
  char kind;  // 'P': value is the command's pid; 'E': value is exec's errno
  int value;
};

void kill_group(int) { kill(-static_cast<pid_t>(g_group), SIGKILL); }

void pass_to_command(int signo) {
  const pid_t command = static_cast<pid_t>(g_command);
  if (command > 0) kill(command, signo);
}

// The guard ends as its command did when a signal ended it: by that signal,
// so that its parent tells a kill from an exit status of 128 + n (an OOM
// kill from `exit 137`). Not dumpable first: no core file of the guard's.
// Should the signal not end it, it exits 128 + n.
[[noreturn]] void end_as_signalled(int signo) {
  prctl(PR_SET_DUMPABLE, 0);
  struct sigaction standard {};
  standard.sa_handler = SIG_DFL;
  sigaction(signo, &standard, nullptr);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signo);
  sigprocmask(SIG_UNBLOCK, &only, nullptr);
  kill(getpid(), signo);
  _exit(128 + signo);
}

// The signals the guard passes on to the command.
sigset_t passed_signals() {
  sigset_t passed;
  sigemptyset(&passed);
  sigaddset(&passed, SIGUSR1);
  sigaddset(&passed, SIGUSR2);
  return passed;
}

// The guard's own group, terminal and signals: it kills its group when swarm
// dies (or died already), ignores what a terminal sends the group, passes
// SIGUSR1 and SIGUSR2 on to the command, and blocks nothing.
void set_up_guard(pid_t parent, int terminal, int death_signal) {
  setpgid(0, 0);
  g_group = getpid();
  if (terminal >= 0) {
    struct sigaction ignore_ttou {};
    ignore_ttou.sa_handler = SIG_IGN;
    sigaction(SIGTTOU, &ignore_ttou, nullptr);  // tcsetpgrp from a group not (yet) in the foreground
    tcsetpgrp(terminal, getpid());
  }
  prctl(PR_SET_NAME, "swarm-guard");
  // What it holds (a copy of swarm's memory) is no one's to read: its
  // /proc/PID/environ, cwd and memory stay closed to the command it runs.
  prctl(PR_SET_DUMPABLE, 0);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  struct sigaction on_death {};
  on_death.sa_handler = kill_group;
  sigaction(death_signal, &on_death, nullptr);
  prctl(PR_SET_PDEATHSIG, death_signal);
  if (getppid() != parent) kill_group(0);  // swarm died before the line above
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) sigaction(signo, &ignore, nullptr);
  struct sigaction pass {};
  pass.sa_handler = pass_to_command;
  pass.sa_flags = SA_RESTART;
  for (int signo : {SIGUSR1, SIGUSR2}) sigaction(signo, &pass, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

// In the guard's child: the command starts as a program started from a
// shell would: every signal at its default (swarm ignores SIGPIPE), no
// descriptor of swarm's but 0, 1 and 2 (its NATS connection, its pipes), and
// it dies with the guard, whoever kills that.
[[noreturn]] void exec_command(char* const* argv, char* const* envp, int report, int output_fd, bool null_stdin) {
  struct sigaction standard {};
  standard.sa_handler = SIG_DFL;
  for (int signo = 1; signo < NSIG; ++signo)
    if (signo != SIGKILL && signo != SIGSTOP) sigaction(signo, &standard, nullptr);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != g_group) _exit(127);
  close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);  // the report pipe closes at exec, as the rest
  if (output_fd >= 0) {
    if (output_fd != 1) dup2(output_fd, 1);
    if (output_fd != 2) dup2(output_fd, 2);
  }
  if (null_stdin) {
    const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd >= 0 && null_fd != 0) dup2(null_fd, 0);
  }
  execvpe(argv[0], argv, envp);
  const Report failed{'E', errno};
  (void)!write(report, &failed, sizeof failed);
  _exit(127);
}

// Every child is reaped as it ends, the command's orphans too (they are
// the guard's as its subreaper): none is left a zombie while CMD runs.
// Each is seen ended before it is reaped: the command's pid is forgotten
// (no signal passed on to it any more) while it is still a zombie of ours.
// The command's wait status.
int reap_until_ended(pid_t command, int terminal) {
  const sigset_t passed = passed_signals();
  int status = 0;
  while (true) {
    siginfo_t seen{};
    if (waitid(P_ALL, 0, &seen, WEXITED | WNOWAIT | (terminal >= 0 ? WSTOPPED : 0)) != 0) {
      if (errno == EINTR) continue;
      break;  // no child left: cannot happen before CMD ends
    }
    const pid_t ended = seen.si_pid;
    if (seen.si_code == CLD_STOPPED) {
      siginfo_t taken{};
      while (waitid(P_PID, static_cast<id_t>(ended), &taken, WSTOPPED | WNOHANG) != 0 && errno == EINTR) {
      }
      if (ended != command) continue;
      // Stopped as the command is (unless it was continued meanwhile: a
      // report this guard, stopped with its group, took only after the
      // group's SIGCONT); continued with it (SIGCONT to the group).
      siginfo_t continued{};
      if (waitid(P_PID, static_cast<id_t>(command), &continued, WCONTINUED | WNOHANG) == 0 &&
          continued.si_pid == command)
        continue;
      kill(getpid(), SIGSTOP);
      continue;
    }
    if (ended == command) {
      sigprocmask(SIG_BLOCK, &passed, nullptr);
      g_command = 0;
      while (waitpid(command, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    int ignored = 0;
    while (waitpid(ended, &ignored, 0) < 0 && errno == EINTR) {
    }
  }
  return status;
}

// Out of the group (into swarm's, whose signals it ignores), then the
// group's rest is killed and reaped, until it is empty, or for at most a
// second: a member it cannot wait for (a zombie whose parent left the
// group, a process of another user) must not keep the lease held.
void empty_group(pid_t parent_group) {
  setpgid(0, parent_group);
  timespec until{};
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += 1;
  while (true) {
    if (kill(-static_cast<pid_t>(g_group), SIGKILL) != 0) break;  // ESRCH: empty; EPERM: none of ours left
    int ignored = 0;
    while (waitpid(-1, &ignored, WNOHANG) > 0) {
    }
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec > until.tv_sec || (now.tv_sec == until.tv_sec && now.tv_nsec >= until.tv_nsec)) break;
    timespec pause{0, 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
}

// `terminal`: the terminal (0) whose foreground the command's group takes
// before the command starts (an interactive command must not meet a
// background group's SIGTTIN/SIGTTOU), -1 for none. With it the guard also
// stops when the command stops (^Z, a read from the background): its
// parent sees the stop and does as a shell would. `null_stdin`: the
// command reads /dev/null (an interactive command run in the background of
// a terminal must not stop on a read no one answers).
[[noreturn]] void run_guard(pid_t parent, pid_t parent_group, char* const* argv, char* const* envp, int report,
                            const char* cwd, int output_fd, int terminal, bool null_stdin, int death_signal) {
  set_up_guard(parent, terminal, death_signal);
  // The command's folder is the guard's too: swarm's own (the workspace,
  // often) is not left for the command to find as its parent's cwd.
  if (cwd != nullptr && chdir(cwd) != 0) {
    const Report failed{'E', errno};
    (void)!write(report, &failed, sizeof failed);
    _exit(127);
  }
  pid_t command = fork();
  if (command < 0) _exit(126);
  if (command == 0) exec_command(argv, envp, report, output_fd, null_stdin);
  g_command = command;
  const Report forked{'P', static_cast<int>(command)};
  (void)!write(report, &forked, sizeof forked);
  close(report);
  const int status = reap_until_ended(command, terminal);
  empty_group(parent_group);
  if (WIFSIGNALED(status)) end_as_signalled(WTERMSIG(status));
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

}  // namespace

void require_runnable(const std::string& program) {
  auto executable = [](const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
  };
  if (program.empty()) throw Error(Errc::bad_input, "no command to run: give one after --");
  if (program.find('/') != std::string::npos) {
    if (executable(program)) return;
    throw Error(Errc::bad_input, "cannot run " + program + ": " +
                                     (::access(program.c_str(), F_OK) == 0 ? "not an executable file"
                                                                           : "No such file or directory"));
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    auto end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (executable((dir.empty() ? std::string(".") : dir) + "/" + program)) return;
    start = end + 1;
  }
  throw Error(Errc::bad_input, "cannot run " + program + ": not found on PATH");
}

std::unique_ptr<ChildProcess> ChildProcess::start(const std::vector<std::string>& argv,
                                                  const std::vector<std::pair<std::string, std::string>>& env,
                                                  const ChildOptions& options) {
  if (argv.empty()) throw Error(Errc::bad_input, "no command to run: give one after --");
  // Everything the child needs is built before fork: the child of a threaded
  // process must not allocate.
  // This process's environment, with the credentials it took out of it
  // back in (process_secrets.h), less what the command must not get.
  std::vector<std::string> env_strings;
  for (auto& entry : child_environment(options.withhold_env)) {
    bool replaced = false;
    for (const auto& [k, v] : env) replaced = replaced || entry.rfind(k + "=", 0) == 0;
    if (!replaced) env_strings.push_back(std::move(entry));
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  // Where exec failed, the command writes errno here; a successful exec closes it.
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) throw Error(Errc::internal, std::string("pipe: ") + std::strerror(errno));
  const pid_t parent = getpid();
  const pid_t parent_group = getpgrp();
  // An interactive command reads the terminal: its group is made the
  // terminal's foreground, by the guard before the command starts (this
  // process's taken back when it ends), when this process's group is the
  // foreground now: a run in the background never takes the terminal.
  const bool take_terminal =
      options.foreground && ::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) == parent_group;
  const bool background_of_a_terminal = options.foreground && !take_terminal && ::isatty(STDIN_FILENO);
  if (take_terminal) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGTTOU, &ignore, nullptr);  // giving the terminal back from the background must not stop us
  }
  const int death_signal = SIGRTMIN + 4;  // one nothing sends the guard (cli's SignalRouter wakes itself with +3)
  pid_t pid = fork();
  if (pid < 0) {
    close(report[0]);
    close(report[1]);
    throw Error(Errc::internal, std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    close(report[0]);
    run_guard(parent, parent_group, args.data(), envp.data(), report[1],
              options.cwd.empty() ? nullptr : options.cwd.c_str(), options.output_fd, take_terminal ? STDIN_FILENO : -1,
              background_of_a_terminal, death_signal);
  }
  // The guard makes the group itself, first thing; start() returns only
  // after the command's exec, so no signal goes to the group before it
  // exists. (Setting it from here too could put the guard back into the
  // group it is emptying, when this thread runs late.) The guard is the
  // group's leader: kill(-pid) reaches the command and its children.
  close(report[1]);
  // Until the pipe's last writer is gone (the guard closed it, the command
  // exec'd or died): the command's pid, and exec's errno when it failed.
  int err = 0;
  pid_t command = 0;
  for (Report r{}; true;) {
    const ssize_t n = read(report[0], &r, sizeof r);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof r)) break;
    if (r.kind == 'P') command = static_cast<pid_t>(r.value);
    if (r.kind == 'E') err = r.value;
  }
  close(report[0]);
  auto child = std::unique_ptr<ChildProcess>(new ChildProcess(pid));
  child->command_pid_ = command;
  if (err != 0) {
    child->wait();
    throw CannotRun("cannot run " + argv[0] + (options.cwd.empty() ? "" : " in " + options.cwd) + ": " +
                        std::strerror(err),
                    err);
  }
  child->job_control_ = take_terminal;
  if (take_terminal) child->terminal_ = STDIN_FILENO;
  return child;
}

ChildProcess::~ChildProcess() {
  // Never leave it running or a zombie: a holder that unwinds stops its work.
  if (!exited()) {
    signal(SIGKILL);
    wait();
  }
}

void ChildProcess::signal(int signo) {
  std::lock_guard lock(mu_);
  if (exited_) return;
  kill(-pid_, signo);
}

void ChildProcess::signal_command(int signo) {
  if (signo != SIGUSR1 && signo != SIGUSR2) throw Error(Errc::internal, "only SIGUSR1 and SIGUSR2 go to the command alone");
  std::lock_guard lock(mu_);
  if (exited_) return;
  kill(pid_, signo);  // the guard's pid: it passes the signal on
}

bool ChildProcess::exited() const {
  std::lock_guard lock(mu_);
  return exited_;
}

void ChildProcess::stop_with_it() {
  // The terminal back to this process's group, then that group stopped, as
  // the shell's job (the shell sees it stopped); once continued (fg, bg),
  // the terminal goes to the command again if this process has it, and the
  // command's group is continued.
  if (terminal_ >= 0) ::tcsetpgrp(terminal_, getpgrp());
  ::kill(0, SIGSTOP);
  if (::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) == getpgrp() && ::tcsetpgrp(STDIN_FILENO, pid_) == 0)
    terminal_ = STDIN_FILENO;
  else
    terminal_ = -1;
  signal(SIGCONT);
}

int ChildProcess::wait() {
  // Waits without reaping first: while signals may still be sent, the pid
  // stays ours (a zombie is not reused); then marks it ended, then reaps.
  // An interactive command's stop (^Z) is this process's too (job_control_).
  siginfo_t info{};
  for (;;) {
    const int stops = job_control_ ? WSTOPPED : 0;
    if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | stops | WNOWAIT) != 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (info.si_code != CLD_STOPPED) break;
    siginfo_t taken{};
    while (waitid(P_PID, static_cast<id_t>(pid_), &taken, WSTOPPED) != 0 && errno == EINTR) {
    }
    stop_with_it();
  }
  {
    std::lock_guard lock(mu_);
    // A guard that ended by a signal (someone killed it) could not take its
    // group down: this does. Its pid is still ours (a zombie), so the group
    // id names no one else's group.
    if (info.si_code != CLD_EXITED) kill(-pid_, SIGKILL);
    exited_ = true;
  }
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  if (terminal_ >= 0) {
    ::tcsetpgrp(terminal_, getpgrp());  // the terminal is this process's again
    terminal_ = -1;
  }
  // The guard ends with the command's status, or by the signal that ended
  // the command; a SIGKILL to the group ends the guard too.
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    signalled_ = true;
    return 128 + WTERMSIG(status);
  }
  return 1;
}

void ChildStopper::stop_by(BootTime kill_at) {
  child_.signal(SIGTERM);
  std::unique_lock lock(mu_);
  while (!finished_ && BootClock::now() < kill_at)
    cv_.wait_for(lock, std::min<BootClock::duration>(kill_at - BootClock::now(), std::chrono::milliseconds(50)));
  if (!finished_) child_.signal(SIGKILL);
}

void ChildStopper::finished() {
  {
    std::lock_guard lock(mu_);
    finished_ = true;
  }
  cv_.notify_all();
}

}  // namespace swarm
