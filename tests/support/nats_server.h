// Real nats-servers for tests: one JetStream server, or a 3-node cluster, on
// free 127.0.0.1 ports with temporary store dirs, stopped by pid.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace testing {

// A port nobody listens on right now (bound to port 0 and released).
int free_port();
// Whether the test process set $SWARM_NATS_SERVER to the leg's nats-server
// (the first on PATH) for the swarm it runs (adr/0052).
bool leg_server_set_for_swarm();
// Whether something accepts TCP connections on 127.0.0.1:port.
bool accepts_connections(int port);

// A server exited at start because its port was taken between free_port()
// and its bind (tests running in parallel choose ports too).
struct PortTaken : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Starts a server program (args[0] looked up on PATH) with its output
// appended to `log`, killed if the test dies, and waits until it (or its
// child: git daemon) listens on `port` itself: another test's server
// answering there is not it. Throws PortTaken when it exits saying the
// address is in use, and runtime_error, with the log, when it exits
// otherwise or does not listen in 10 s.
// `also` are more ports it must listen on before it counts as started (a
// nats-server's route port, which it binds after its client port).
pid_t start_server(const std::vector<std::string>& args, const std::filesystem::path& log, int port,
                   const std::vector<int>& also = {});

// Sets `port` to a free port and calls start() until a start is not beaten
// to the port by another process (a few tries).
template <class Start>
void start_on_a_free_port(int& port, Start start) {
  for (int attempt = 1;; ++attempt) {
    port = free_port();
    try {
      start();
      return;
    } catch (const PortTaken&) {
      if (attempt == 5) throw;
    }
  }
}
// Sends `signo` (then SIGKILL after 5 s), reaps it, and sets pid to -1.
void stop_server(pid_t& pid, int signo);

// A socket on 127.0.0.1 that accepts connections and never says a word: the
// shape of a hung server.
class SilentListener {
 public:
  SilentListener();
  ~SilentListener();
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;
  int port() const { return port_; }
  std::string url() const { return "nats://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

class NatsServer {
 public:
  struct Options {
    std::string name = "solo";
    std::vector<std::string> extra_args;  // e.g. cluster flags
    // Ports the flags above make it listen on too (its route port). A server
    // with such does not move to another client port when one is taken:
    // PortTaken goes to its cluster, which starts again on other ports.
    std::vector<int> also_listens;
  };

  NatsServer() : NatsServer(Options{}) {}
  explicit NatsServer(Options options);
  ~NatsServer();
  NatsServer(const NatsServer&) = delete;
  NatsServer& operator=(const NatsServer&) = delete;

  // Starts the server (again, on the same port and store) and waits until it
  // listens.
  void start();
  // SIGTERM, then SIGKILL if it lingers; waits for the process.
  void stop();
  // SIGKILL: a node lost without warning.
  void kill();
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  int port() const { return port_; }
  std::string url() const { return "nats://127.0.0.1:" + std::to_string(port_); }
  const std::filesystem::path& store_dir() const { return store_; }

 private:
  Options options_;
  TempDir dir_;
  std::filesystem::path store_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// Three JetStream servers routed together as one cluster.
class NatsCluster {
 public:
  NatsCluster();
  NatsServer& node(int i) { return *nodes_.at(static_cast<std::size_t>(i)); }
  // All client URLs, comma-separated.
  std::string urls() const;
  std::vector<std::string> url_list() const;

 private:
  void start_nodes();

  std::vector<std::unique_ptr<NatsServer>> nodes_;
};

}  // namespace testing
