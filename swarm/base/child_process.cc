#include "swarm/base/child_process.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "swarm/base/error.h"

extern char** environ;

namespace swarm {

namespace {

// The guard: a process between swarm and its command, leader of the
// command's process group and the subreaper of everything the command
// starts. The parent-death signal reaches only a direct child, so the guard
// takes it (SIGUSR2, handled) and kills the whole group: the command and
// everything it started die with swarm. When the command ends, the guard
// leaves the group, kills what the command left in it and reaps it all
// before it ends itself: when swarm sees the guard end, nothing of the
// command runs any more, so the lease can go. It ignores the signals swarm
// sends the group (they are the command's), and ends with the command's
// status (128 + signal when one ended it). Only async-signal-safe calls
// here: it is a fork of a threaded process.
volatile sig_atomic_t g_group = 0;  // the command's process group (the guard's pid)

void kill_group(int) { kill(-static_cast<pid_t>(g_group), SIGKILL); }

[[noreturn]] void run_guard(pid_t parent, pid_t parent_group, char* const* argv, char* const* envp, int report,
                            const char* cwd, int output_fd) {
  setpgid(0, 0);
  g_group = getpid();
  prctl(PR_SET_NAME, "swarm-guard");
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  struct sigaction on_death {};
  on_death.sa_handler = kill_group;
  sigaction(SIGUSR2, &on_death, nullptr);
  prctl(PR_SET_PDEATHSIG, SIGUSR2);
  if (getppid() != parent) kill_group(0);  // swarm died before the line above
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) sigaction(signo, &ignore, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  pid_t command = fork();
  if (command < 0) _exit(126);
  if (command == 0) {
    // The command starts as a program started from a shell would: every
    // signal at its default (swarm ignores SIGPIPE), no descriptor of swarm's
    // but 0, 1 and 2 (its NATS connection, its pipes), and it dies with the
    // guard, whoever kills that.
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
    if (cwd != nullptr && chdir(cwd) != 0) {
      int err = errno;
      (void)!write(report, &err, sizeof err);
      _exit(127);
    }
    execvpe(argv[0], argv, envp);
    int err = errno;
    (void)!write(report, &err, sizeof err);
    _exit(127);
  }
  close(report);
  // Every child is reaped as it ends, the command's orphans too (they are
  // the guard's as its subreaper): none is left a zombie while CMD runs.
  int status = 0;
  while (true) {
    int child_status = 0;
    pid_t ended = waitpid(-1, &child_status, 0);
    if (ended == command) {
      status = child_status;
      break;
    }
    if (ended < 0 && errno != EINTR) break;  // no child left: cannot happen before CMD ends
  }
  // Out of the group (into swarm's, whose signals it ignores), then the
  // group's rest is killed and reaped, until it is empty, or for at most a
  // second: a member it cannot wait for (a zombie whose parent left the
  // group, a process of another user) must not keep the lease held.
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
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1);
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
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    if (options.withhold_env != nullptr && options.withhold_env(std::string_view(entry).substr(0, entry.find('='))))
      continue;
    bool replaced = false;
    for (const auto& [k, v] : env) replaced = replaced || entry.rfind(k + "=", 0) == 0;
    if (!replaced) env_strings.push_back(entry);
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
  pid_t pid = fork();
  if (pid < 0) {
    close(report[0]);
    close(report[1]);
    throw Error(Errc::internal, std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    close(report[0]);
    run_guard(parent, parent_group, args.data(), envp.data(), report[1],
              options.cwd.empty() ? nullptr : options.cwd.c_str(), options.output_fd);
  }
  // The guard makes the group itself, first thing; start() returns only
  // after the command's exec, so no signal goes to the group before it
  // exists. (Setting it from here too could put the guard back into the
  // group it is emptying, when this thread runs late.) The guard is the
  // group's leader: kill(-pid) reaches the command and its children.
  close(report[1]);
  int err = 0;
  ssize_t n = read(report[0], &err, sizeof err);
  close(report[0]);
  auto child = std::unique_ptr<ChildProcess>(new ChildProcess(pid));
  if (n == static_cast<ssize_t>(sizeof err)) {
    child->wait();
    throw CannotRun("cannot run " + argv[0] + (options.cwd.empty() ? "" : " in " + options.cwd) + ": " +
                        std::strerror(err),
                    err);
  }
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

bool ChildProcess::exited() const {
  std::lock_guard lock(mu_);
  return exited_;
}

int ChildProcess::wait() {
  // Waits without reaping first: while signals may still be sent, the pid
  // stays ours (a zombie is not reused); then marks it ended, then reaps.
  siginfo_t info{};
  while (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
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
  // The guard ends with the command's status; a SIGKILL to the group ends the guard too.
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace swarm
