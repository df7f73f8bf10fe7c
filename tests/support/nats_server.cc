#include "support/nats_server.h"

#include "swarm/base/process_info.h"
#include "swarm/workspace/embedded_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace testing {

namespace {

// Each leg's `swarm up` starts that leg's nats-server (the first on PATH),
// never the newer release beside swarm it prefers otherwise (adr/0052): the
// old leg tests the embedded default on the old server. In a CTest leg
// ($SWARM_NATS_LEG) the leg's server always wins over a $SWARM_NATS_SERVER of
// the caller's shell; run by hand, one given is kept. A test of the choice
// itself sets it to "" (unset) for the swarm it runs.
const bool kLegServerForSwarm = [] {
  const char* given = std::getenv("SWARM_NATS_SERVER");
  const char* leg = std::getenv("SWARM_NATS_LEG");
  if (given != nullptr && *given != '\0' && (leg == nullptr || *leg == '\0')) return false;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (std::size_t at = 0; at <= dirs.size();) {
    const std::size_t end = std::min(dirs.find(':', at), dirs.size());
    const std::string dir = dirs.substr(at, end - at);
    const std::string candidate = dir + "/nats-server";
    struct stat st {};
    if (!dir.empty() && dir.front() == '/' && ::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      ::setenv("SWARM_NATS_SERVER", candidate.c_str(), 1);
      return true;
    }
    at = end + 1;
  }
  return false;
}();

}  // namespace

bool leg_server_set_for_swarm() { return kLegServerForSwarm; }

int free_port() { return swarm::free_loopback_port(); }

bool accepts_connections(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

namespace {

// Whether `pid` or a process it started listens on `port`: `git daemon`
// runs git-daemon as its child.
bool listens_here(pid_t pid, int port) {
  if (swarm::listens_on(pid, port).value_or(false)) return true;
  for (pid_t child : swarm::all_processes())
    if (swarm::process_parent(child) == pid && swarm::listens_on(child, port).value_or(false)) return true;
  return false;
}

bool wait_exit(pid_t pid, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

// In a server leg ($SWARM_NATS_LEG, e.g. v2.15.2: see tests/cmake/second_leg),
// the nats-server on PATH must be that version: a leg that ran Debian's by
// mistake would pass for what it did not test.
void require_the_legs_server() {
  static const bool checked = [] {
    const char* leg = std::getenv("SWARM_NATS_LEG");
    if (leg == nullptr || *leg == '\0') return true;
    std::string want = leg[0] == 'v' ? leg + 1 : leg;
    FILE* version = ::popen("nats-server --version 2>&1", "r");
    std::string said;
    char buffer[256];
    while (version != nullptr && std::fgets(buffer, sizeof buffer, version) != nullptr) said += buffer;
    if (version != nullptr) ::pclose(version);
    if (said.find(want) == std::string::npos)
      throw std::runtime_error("this test runs in the nats-server " + std::string(leg) + " leg, but the nats-server on "
                               "PATH says: " + said);
    return true;
  }();
  (void)checked;
}

pid_t start_server(const std::vector<std::string>& args, const std::filesystem::path& log, int port,
                   const std::vector<int>& also) {
  if (!args.empty() && args[0] == "nats-server") require_the_legs_server();
  // Built before fork: the child of a threaded process must not allocate.
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log_path = log.string();
  std::error_code ec;
  const auto log_start = std::filesystem::exists(log, ec) ? std::filesystem::file_size(log, ec) : 0;
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    // A test that dies must not leave its servers running.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execvp(argv[0], argv.data());
    _exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto listening = [&] {
    if (!listens_here(pid, port)) return false;
    for (int other : also)
      if (!listens_here(pid, other)) return false;
    return true;
  };
  while (!listening()) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      std::string text = read_file(log);
      text.erase(0, std::min<std::size_t>(text.size(), log_start));  // what this start wrote
      std::string lower = text;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const std::string message = args[0] + " exited at start; see " + log_path + ":\n" + text;
      if (lower.find("address already in use") != std::string::npos) throw PortTaken(message);
      throw std::runtime_error(message);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      wait_exit(pid, std::chrono::seconds(5));
      throw std::runtime_error(args[0] + " did not listen on port " + std::to_string(port));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pid;
}

void stop_server(pid_t& pid, int signo) {
  if (pid <= 0) return;
  ::kill(pid, signo);
  if (!wait_exit(pid, std::chrono::seconds(5))) {
    ::kill(pid, SIGKILL);
    wait_exit(pid, std::chrono::seconds(5));
  }
  pid = -1;
}

SilentListener::SilentListener() : port_(free_port()) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port_));
  if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd_, 64) != 0)
    throw std::runtime_error("cannot listen on port " + std::to_string(port_));
}

SilentListener::~SilentListener() { close(fd_); }

NatsServer::NatsServer(Options options)
    : options_(std::move(options)), dir_("swarm-nats-" + options_.name), store_(dir_.path() / "store") {
  if (!options_.also_listens.empty()) {
    port_ = free_port();
    start();
    return;
  }
  start_on_a_free_port(port_, [&] { start(); });
}

NatsServer::~NatsServer() {
  try {
    stop();
  } catch (...) {
  }
}

void NatsServer::start() {
  if (running()) return;
  std::vector<std::string> args = {"nats-server", "-js", "-a", "127.0.0.1", "-p", std::to_string(port_),
                                   "-sd", store_.string(), "--server_name", options_.name};
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  pid_ = start_server(args, dir_.path() / "server.log", port_, options_.also_listens);
}

void NatsServer::stop() { stop_server(pid_, SIGTERM); }

void NatsServer::kill() { stop_server(pid_, SIGKILL); }

NatsCluster::NatsCluster() {
  // A client or route port taken meanwhile stops its node: the cluster
  // starts again on other ports.
  for (int attempt = 1;; ++attempt) {
    try {
      start_nodes();
      return;
    } catch (const PortTaken&) {
      nodes_.clear();
      if (attempt == 5) throw;
    }
  }
}

void NatsCluster::start_nodes() {
  std::vector<int> route_ports = {free_port(), free_port(), free_port()};
  for (int i = 0; i < 3; ++i) {
    std::string routes;
    for (int j = 0; j < 3; ++j) {
      if (j == i) continue;
      if (!routes.empty()) routes += ",";
      routes += "nats://127.0.0.1:" + std::to_string(route_ports[static_cast<std::size_t>(j)]);
    }
    NatsServer::Options options;
    options.name = "n" + std::to_string(i + 1);
    options.extra_args = {"--cluster_name", "swarmtest", "--cluster",
                          "nats://127.0.0.1:" + std::to_string(route_ports[static_cast<std::size_t>(i)]),
                          "--routes", routes};
    options.also_listens = {route_ports[static_cast<std::size_t>(i)]};
    nodes_.push_back(std::make_unique<NatsServer>(options));
  }
}

std::vector<std::string> NatsCluster::url_list() const {
  std::vector<std::string> out;
  for (const auto& node : nodes_) out.push_back(node->url());
  return out;
}

std::string NatsCluster::urls() const {
  std::string out;
  for (const auto& url : url_list()) out += (out.empty() ? "" : ",") + url;
  return out;
}

}  // namespace testing
