// Process groups and their logs for the partition runner (partition_process.h).
#include "faults/partition_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "faults/partition_support.h"

extern char** environ;

using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace partition {
namespace {

// The environment with `changes` on top ("" unsets), built before a fork:
// nothing allocates after it.
std::vector<std::string> environment_with(const std::map<std::string, std::string>& changes) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [k, v] : changes) {
    if (v.empty()) env.erase(k);
    else env[k] = v;
  }
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

pid_t spawn(const std::vector<std::string>& args, const fs::path& log, const std::map<std::string, std::string>& env,
            const fs::path& cwd) {
  std::vector<std::string> argv_strings = args;
  argv_strings[0] = on_path(args[0]);
  std::vector<std::string> env_strings = environment_with(env);
  std::vector<char*> argv = pointers_to(argv_strings), envp = pointers_to(env_strings);
  const std::string log_path = log.string(), dir = cwd.string();
  pid_t pid = fork();
  if (pid < 0) throw SetupFailed("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a runner killed outright takes its servers and loops along
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) _exit(126);
    dup2(fd, 1);
    dup2(fd, 2);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    if (!dir.empty() && chdir(dir.c_str()) != 0) _exit(126);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also here: no race with a kill of the group right after
  return pid;
}

bool reaped(pid_t pid) {
  int status = 0;
  return waitpid(pid, &status, WNOHANG) == pid;
}

void stop_group(pid_t& pid, int signo, std::chrono::milliseconds grace) {
  if (pid <= 0) return;
  kill(-pid, signo);
  auto until = std::chrono::steady_clock::now() + grace;
  while (!reaped(pid)) {
    if (std::chrono::steady_clock::now() >= until) {
      kill(-pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  kill(-pid, SIGKILL);  // what the leader left in its group
  pid = -1;
}

bool accepts(const std::string& ip, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

}  // namespace partition
