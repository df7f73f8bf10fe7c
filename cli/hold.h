// What `lock`, `elect` and `lease acquire --wait` share: signals to swarm
// (SIGINT, SIGTERM, SIGHUP) stop a wait, which leaves the line, or go to the
// command running under the lease; and running that command while the lease
// is kept alive, stopping it in time when the lease is lost (adr/0012).
#pragma once

#include <CLI/CLI.hpp>

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/context.h"
#include "swarm/child_process.h"
#include "swarm/lease/lease.h"
#include "swarm/lease/mutex.h"

namespace cli {

class SignalRouter {
 public:
  // Blocks SIGINT, SIGTERM and SIGHUP in this thread and every thread made
  // after (so make it first), and receives them on a thread of its own.
  SignalRouter();
  ~SignalRouter();
  SignalRouter(const SignalRouter&) = delete;
  SignalRouter& operator=(const SignalRouter&) = delete;

  // While waiting: a signal calls `on_signal` (once per signal).
  void on_signal(std::function<void(int)> handler);
  // While a command runs: signals go to it.
  void forward_to(swarm::ChildProcess* child);
  // The last signal received (0: none).
  int received() const { return received_; }

 private:
  std::mutex mu_;
  std::function<void(int)> handler_;
  swarm::ChildProcess* child_ = nullptr;
  int undelivered_ = 0;  // a signal that came while no command ran
  std::atomic<int> received_{0};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

struct HoldOptions {
  std::vector<std::string> command;
  bool hear_resign = false;  // elect: a request to step down stops the command
};

// Runs the command holding `lease` (swarm::run_holding), with this process's
// signals going to it, and what happens said as notes; a signal that came
// before it started runs nothing. Returns the command's exit status.
int hold_while_running(const Context& ctx, const swarm::LeaseStore& store, swarm::Lease lease,
                       const HoldOptions& options, SignalRouter& signals);

// 128 + the signal that ended a wait, as a shell reports a process it ended.
inline int exit_for_signal(int signo) { return 128 + signo; }

// The options every lease verb shares (lease, lock, elect).
// NAME: a lease name (exit 2 naming it otherwise).
CLI::Validator lease_name_validator();
// --ttl: a duration of 1s to 1h, else bad_input naming it.
std::chrono::milliseconds lease_ttl_option(const std::string& text);
// The command after "--" (CLI11 keeps everything after it): bad_input when
// there is none, with an example for `verb`.
std::vector<std::string> command_after_dashes(const std::vector<std::string>& command, const char* verb);

// Waits in `mutex`'s line (`wait`: at most that long; nullopt: for ever) for
// lease `name`; a signal from `signals` leaves the line: nullopt then, with a
// note saying so (the caller exits 128 + signal).
std::optional<swarm::Lease> wait_in_line(const Context& ctx, swarm::Mutex& mutex, const std::string& name,
                                         std::optional<std::chrono::milliseconds> wait, SignalRouter& signals);

// --holder: shown in tables and JSON, so one line of printable text (1 to 200
// bytes); anything else is exit 2 naming it.
CLI::Validator holder_validator();

}  // namespace cli
