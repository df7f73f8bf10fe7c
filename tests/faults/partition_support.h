// The partition runner's plumbing: the names of what it tests (3 nodes, one
// lease), ending promptly on SIGINT/SIGTERM, and the tools (ip, iptables,
// git) it runs, whose failure ends the setup.
#pragma once

#include <chrono>
#include <csignal>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/process.h"

namespace partition {

constexpr int kNodes = 3;
inline const char* const kLease = "part";
// The workspace `up` makes on the cluster, and its lease bucket.
inline const char* const kWorkspaceName = "partition";
inline const char* const kLeaseBucket = "swarm-partition-leases";
// Each node's monitoring port (its /jsz names the metadata leader).
constexpr int kMonitorPort = 8222;

// The signal that asked the run to stop, or 0.
extern volatile std::sig_atomic_t g_stop_signal;

// A second SIGINT/SIGTERM kills at once (the script's trap removes what is left).
void on_stop_signal(int signo);

struct SetupFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct Interrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void throw_if_interrupted();

// Sleeps in short steps, so that SIGINT/SIGTERM end the run promptly.
void pause_for(std::chrono::milliseconds length);

long long wall_ns();

std::string trimmed(std::string s);

// Single quotes for sh, so a path is one word whatever it holds.
std::string quoted(const std::string& word);

// execve wants a path: the program as PATH finds it.
std::string on_path(const std::string& program);

testing::RunResult run_tool(std::vector<std::string> args, std::chrono::milliseconds limit = std::chrono::seconds(30));

// A tool run that must work for the setup to go on.
void must(const std::vector<std::string>& args);

// What `nats-server --version` says, as "v2.10.x".
std::string server_version();

}  // namespace partition
