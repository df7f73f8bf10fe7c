// The one way the CLI hears SIGINT, SIGTERM and SIGHUP: blocked in every
// thread and received by a thread of its own, so that a verb that waits
// (lock, elect, lease acquire --wait, status --watch, elect --observe) ends
// cleanly, and a command run under a lease gets them instead of swarm.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include "swarm/base/child_process.h"

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

}  // namespace cli
