#include "swarm/embedded_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "swarm/error.h"
#include "swarm/workspace.h"

namespace swarm {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

sockaddr_in loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

bool answers(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  auto addr = loopback(port);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  if (ok) {
    // A NATS server greets with INFO; anything else on the port is not ours.
    timeval tv{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buffer[5] = {0};
    ok = recv(fd, buffer, 4, MSG_WAITALL) == 4 && std::string(buffer) == "INFO";
  }
  close(fd);
  return ok;
}

bool is_nats_server(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return cmdline.find("nats-server") != std::string::npos;
}

bool alive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

std::string tail_of(const fs::path& path, std::size_t max_chars) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > max_chars ? text.substr(text.size() - max_chars) : text;
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && access((fs::path(dir) / program).c_str(), X_OK) == 0) return true;
  return false;
}

}  // namespace

int free_loopback_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  auto addr = loopback(0);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    throw Error(Errc::internal, "cannot find a free port on 127.0.0.1");
  }
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

bool port_is_free(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int yes = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  auto addr = loopback(port);
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

int port_of_url(const std::string& url) {
  auto colon = url.rfind(':');
  if (colon == std::string::npos) return 0;
  return std::atoi(url.c_str() + colon + 1);
}

std::optional<pid_t> EmbeddedServer::recorded_pid() const {
  std::ifstream in(pid_file());
  long pid = 0;
  if (!(in >> pid) || pid <= 0) return std::nullopt;
  return static_cast<pid_t>(pid);
}

std::optional<pid_t> EmbeddedServer::running_pid() const {
  auto pid = recorded_pid();
  if (!pid || !alive(*pid) || !is_nats_server(*pid)) return std::nullopt;
  return pid;
}

std::string EmbeddedServer::start(int port, std::chrono::milliseconds timeout) {
  if (!on_path("nats-server"))
    throw Error(Errc::unavailable,
                "nats-server is not on PATH: install it (apt-get install nats-server) or pass --nats-url");
  fs::create_directories(data_dir());
  if (port <= 0 || !port_is_free(port)) port = free_loopback_port();

  std::vector<std::string> args = {"nats-server", "-js", "-a", "127.0.0.1", "-p", std::to_string(port),
                                   "-sd", data_dir().string(), "-l", log_file().string(),
                                   "-P", pid_file().string(), "--server_name", "swarm-embedded"};
  // Built before fork: the child of a threaded process must not allocate.
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw Error(Errc::internal, "fork failed while starting nats-server");
  if (pid == 0) {
    // Detach: the server must outlive this process and its terminal.
    setsid();
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, 0);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  // The pid file is nats-server's own (-P); write it too, so a server that dies
  // before writing it still leaves a pid for doctor to name.
  write_file_atomically(pid_file(), std::to_string(pid) + "\n");

  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!answers(port)) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid)
      throw Error(Errc::unavailable, "nats-server exited at start (see " + log_file().string() + "):\n" +
                                         tail_of(log_file(), 1500));
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      throw Error(Errc::unavailable, "nats-server did not answer on 127.0.0.1:" + std::to_string(port) +
                                         " within the timeout (see " + log_file().string() + ")");
    }
    std::this_thread::sleep_for(20ms);
  }
  return "nats://127.0.0.1:" + std::to_string(port);
}

bool EmbeddedServer::stop(std::chrono::milliseconds grace) {
  auto pid = running_pid();
  if (!pid) return false;
  kill(*pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (alive(*pid) && std::chrono::steady_clock::now() < deadline) {
    waitpid(*pid, nullptr, WNOHANG);  // reaps it when we are its parent (tests)
    std::this_thread::sleep_for(20ms);
  }
  if (alive(*pid)) {
    kill(*pid, SIGKILL);
    for (int i = 0; i < 100 && alive(*pid); ++i) {
      waitpid(*pid, nullptr, WNOHANG);
      std::this_thread::sleep_for(10ms);
    }
  }
  return true;
}

}  // namespace swarm
