// The agent's socket (cli/socket/): `swarm VERB` inside a run's agent,
// answered by the run, against the same verb as a process of its own; and
// the request sent by hand (no process at all) as the floor.
#include <spawn.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <thread>

#include "bench/bench_cases.h"

extern char** environ;

namespace bench {

namespace {

// A `swarm run` whose agent only waits: its socket's path, and the run
// stopped (SIGTERM) when it goes.
class Run {
 public:
  Run(const std::string& swarm, const std::vector<std::string>& env_extra, const std::string& path_file) {
    std::vector<std::string> args = {swarm, "run", "--slot", "sock", "--task", "T-sock", "--keep", "--",
                                     "/bin/sh", "-c", "echo \"$SWARM_SOCKET\" > " + path_file + "; exec sleep 600"};
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
    env.insert(env.end(), env_extra.begin(), env_extra.end());
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    if (::posix_spawn(&pid_, swarm.c_str(), nullptr, nullptr, argv.data(), envp.data()) != 0) fail("swarm run");
  }
  ~Run() {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }

 private:
  pid_t pid_ = -1;
};

// One request written by hand to the socket, its frames read to the end.
double by_hand(const std::string& path, const std::string& request) {
  const auto start = Clock::now();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), std::min(path.size(), sizeof addr.sun_path - 1));
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) fail("connect to the socket");
  const std::string line = request + "\n";
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) fail("write to the socket");
  std::string answer;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) answer.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  if (answer.find("\"result\"") == std::string::npos) fail("the socket answered: " + answer.substr(0, 200));
  return ms_since(start);
}

}  // namespace

// 42. renew, status, send, inbox -n 10 and hold through a run's socket (as
// the agent's `swarm VERB`, a process) against each as a process of its own.
void socket_verbs(Bench& b) {
  const std::vector<std::string> env = {b.ws_env, "SWARM_HOST=bench-host", "SWARM_HOST_ID=bench-id"};
  const std::string path_file = (b.dir.path() / "socket-path").string();
  std::filesystem::remove(path_file);
  Run run(b.swarm_bin, env, path_file);
  std::string path;
  for (int i = 0; i < 200 && path.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream in(path_file);
    std::getline(in, path);
  }
  if (path.empty()) fail("swarm run gave its agent no socket");
  std::vector<std::string> via = env;
  via.push_back("SWARM_SOCKET=" + path);
  const int n = b.quick ? 10 : 40;
  struct Verb {
    const char* name;
    std::function<std::vector<std::string>(int)> args;
    std::string request;  // by hand ("": not measured so)
  };
  const std::string& s = b.swarm_bin;
  const std::vector<Verb> verbs = {
      {"renew", [&](int) { return std::vector<std::string>{s, "renew", "--slot", "sock"}; },
       R"({"verb":"renew","arguments":{"slot":"sock"}})"},
      {"status", [&](int) { return std::vector<std::string>{s, "--json", "status"}; },
       R"({"verb":"status","arguments":{},"json":true})"},
      {"send", [&](int) { return std::vector<std::string>{s, "send", "--to", "sock", "--from", "bench", "hello"}; }, ""},
      {"inbox -n 10", [&](int) { return std::vector<std::string>{s, "--json", "inbox", "--as", "sock", "-n", "10"}; },
       R"({"verb":"inbox","arguments":{"as":"sock","n":10},"json":true})"},
      {"hold", [&](int i) {
         return std::vector<std::string>{s, "hold", "--slot", "sock", "bench/" + std::to_string(i) + "/**"}; }, ""}};
  // The floor under every row: a process that links nats.c and exits (no
  // connection), against the cheapest verb as a process (first: the holds
  // the hold rows add make each renewal longer).
  std::vector<double> floor_ms, renew_ms;
  for (int i = 0; i < n + 2; ++i) {
    auto f = run_process({NATS_FLOOR_BINARY}, env);
    auto p = run_process({s, "renew", "--slot", "sock"}, env);
    if (f.exit != 0 || p.exit != 0) fail("the floor or renew failed");
    if (i < 2) continue;
    floor_ms.push_back(f.ms);
    renew_ms.push_back(p.ms);
  }
  Row floor{.name = "the agent's socket: its floor, a process linking nats.c", .swarm = stats_of(floor_ms),
            .baseline = stats_of(renew_ms), .target = "< 1x (a floor)"};
  finish(floor, 1.0);
  floor.note = std::to_string(n) + " each; a process that links nats.c (libssl, libcrypto) and exits, no "
               "connection, against `swarm renew` as a process: no `swarm` process with nats.c linked goes below it";
  b.rows.push_back(floor);
  for (const auto& verb : verbs) {
    std::vector<double> socket_ms, process_ms, hand_ms;
    for (int i = 0; i < n + 2; ++i) {
      auto a = run_process(verb.args(2 * i), via);
      auto p = run_process(verb.args(2 * i + 1), env);
      if (a.exit != 0 || p.exit != 0) fail(std::string(verb.name) + " failed");
      const double hand = verb.request.empty() ? 0 : by_hand(path, verb.request);
      if (i < 2) continue;
      socket_ms.push_back(a.ms);
      process_ms.push_back(p.ms);
      hand_ms.push_back(hand);
    }
    Row row{.name = std::string("the agent's socket: ") + verb.name, .swarm = stats_of(socket_ms),
            .baseline = stats_of(process_ms), .target = "<= 0.3x"};
    finish(row, 0.3);
    row.note = std::to_string(n) + " each; baseline: the same verb as a process with its own connection" +
               (verb.request.empty() ? std::string()
                                     : "; the request by hand, no process: " +
                                           std::to_string(stats_of(hand_ms).p50).substr(0, 5) + " ms p50");
    b.rows.push_back(row);
  }
}

}  // namespace bench
