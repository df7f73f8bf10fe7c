#include "swarm/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "swarm/error.h"

extern char** environ;

namespace swarm {

std::unique_ptr<ChildProcess> ChildProcess::start(const std::vector<std::string>& argv,
                                                  const std::vector<std::pair<std::string, std::string>>& env) {
  if (argv.empty()) throw Error(Errc::bad_input, "no command to run: give one after --");
  // Everything the child needs is built before fork: the child of a threaded
  // process must not allocate.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
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
  // Where exec failed, the child writes errno here; a successful exec closes it.
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) throw Error(Errc::internal, std::string("pipe: ") + std::strerror(errno));
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(report[0]);
    close(report[1]);
    throw Error(Errc::internal, std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    close(report[0]);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(137);  // swarm died before the line above
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execvpe(args[0], args.data(), envp.data());
    int err = errno;
    (void)!write(report[1], &err, sizeof err);
    _exit(127);
  }
  setpgid(pid, pid);  // also here: whichever runs first, the group exists before any signal
  close(report[1]);
  int err = 0;
  ssize_t n = read(report[0], &err, sizeof err);
  close(report[0]);
  auto child = std::unique_ptr<ChildProcess>(new ChildProcess(pid));
  if (n == static_cast<ssize_t>(sizeof err)) {
    child->wait();
    throw Error(Errc::bad_input, "cannot run " + argv[0] + ": " + std::strerror(err));
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
    exited_ = true;
  }
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace swarm
