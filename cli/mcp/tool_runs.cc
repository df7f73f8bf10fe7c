#include "cli/mcp/tool_runs.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli/verbs/exit_code.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/text.h"

namespace cli {

namespace {

// With progress asked for and no output, a long call says it still runs this often.
constexpr std::chrono::seconds kProgressBeat{5};

std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  ::lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

void flush_all() {
  std::cout.flush();
  std::fflush(stdout);
  std::cerr.flush();
  std::fflush(stderr);
}

std::vector<char*> raw_of(std::vector<std::string>& argv) {
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  return raw;
}

}  // namespace

std::vector<std::string> tool_argv(const Tool& tool, const std::vector<std::string>& globals,
                                   const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"swarm"};
  argv.insert(argv.end(), tool.words.begin(), tool.words.end());
  argv.insert(argv.end(), globals.begin(), globals.end());
  argv.push_back("--json");
  argv.insert(argv.end(), tool.fixed.begin(), tool.fixed.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

Ran run_captured(const std::function<int(int, char**)>& run_command_line, std::vector<std::string> argv, int err_fd) {
  std::vector<char*> raw = raw_of(argv);
  const int out = ::memfd_create("swarm-mcp-out", MFD_CLOEXEC), err = ::memfd_create("swarm-mcp-err", MFD_CLOEXEC);
  if (out < 0 || err < 0) {
    for (int fd : {out, err})
      if (fd >= 0) ::close(fd);
    throw swarm::Error(swarm::Errc::filesystem, "cannot capture a verb's output (memfd)");
  }
  flush_all();
  const int saved_out = ::dup(STDOUT_FILENO);
  ::dup2(out, STDOUT_FILENO);
  ::dup2(err, STDERR_FILENO);
  Ran ran;
  try {
    ran.exit = run_command_line(static_cast<int>(argv.size()), raw.data());
  } catch (const std::exception& e) {
    ran.exit = kInternal;
    std::cerr << "swarm: error: " << e.what() << "\n";
  }
  flush_all();
  ::dup2(saved_out, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  ::close(saved_out);
  ran.out = read_all(out);
  ran.err = read_all(err);
  ::close(out);
  ::close(err);
  return ran;
}

Ran run_child(std::vector<std::string> argv, const ChildHooks& hooks) {
  std::vector<char*> raw = raw_of(argv);
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  const int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (in < 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    for (int fd : {in, out[0], out[1], err[0], err[1]})
      if (fd >= 0) ::close(fd);
    throw swarm::Error(swarm::Errc::filesystem, "cannot make pipes for a tool's process");
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in, STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    // Nothing of the server's (its NATS socket, the protocol's pipes) goes along.
    ::close_range(3, ~0U, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv("/proc/self/exe", raw.data());
    ::_exit(127);
  }
  ::close(in);
  if (pid < 0) {
    for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
    throw swarm::Error(swarm::Errc::internal, "cannot start a tool's process");
  }
  ::close(out[1]);
  ::close(err[1]);
  hooks.child(pid);
  Ran ran;
  std::string pending;
  double done = 0;
  auto last = std::chrono::steady_clock::now();
  const auto started = last;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    ::poll(fds, 2, 1000);
    char buf[65536];
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      (i == 0 ? ran.out : ran.err).append(buf, static_cast<std::size_t>(n));
      if (i == 1 && hooks.progress) {
        pending.append(buf, static_cast<std::size_t>(n));
        for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) {
          const std::string line = pending.substr(0, nl);
          if (!line.empty() && line.front() != '{') hooks.progress(++done, swarm::printable(line));
          last = std::chrono::steady_clock::now();
        }
      }
    }
    if (hooks.progress && std::chrono::steady_clock::now() - last >= kProgressBeat) {
      last = std::chrono::steady_clock::now();
      hooks.progress(++done, "still running (" + swarm::format_duration(std::chrono::duration_cast<std::chrono::seconds>(
                                                     last - started)) + ")");
    }
  }
  hooks.child(0);  // its output ended: no cancellation signals this pid from now on
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ran.exit = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return ran;
}

}  // namespace cli
