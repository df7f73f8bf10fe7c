#include "cli/verbs/signal_router.h"

#include <pthread.h>
#include <signal.h>

namespace cli {

namespace {

// Sent by the router to its own thread to stop it at once (a realtime
// signal nothing else here uses).
int wake_signal() { return SIGRTMIN + 3; }

sigset_t routed_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, wake_signal());
  return set;
}

}  // namespace

SignalRouter::SignalRouter() {
  sigset_t set = routed_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  thread_ = std::thread([this, set] {
    while (!stopping_) {
      timespec slice{0, 100 * 1000 * 1000};
      int signo = sigtimedwait(&set, nullptr, &slice);
      if (signo <= 0 || signo == wake_signal()) continue;
      std::lock_guard lock(mu_);
      received_ = signo;
      if (child_ != nullptr) {
        child_->signal(signo);
      } else {
        undelivered_ = signo;  // for a command that starts later (see forward_to)
        if (handler_) handler_(signo);
      }
    }
  });
}

SignalRouter::~SignalRouter() {
  stopping_ = true;
  // Ends its wait now rather than at the end of its slice: a verb's exit
  // would otherwise wait for it.
  if (thread_.joinable()) {
    pthread_kill(thread_.native_handle(), wake_signal());
    thread_.join();
  }
}

void SignalRouter::on_signal(std::function<void(int)> handler) {
  std::lock_guard lock(mu_);
  handler_ = std::move(handler);
}

void SignalRouter::forward_to(swarm::ChildProcess* child) {
  std::lock_guard lock(mu_);
  child_ = child;
  // A signal that came after the wait ended and before the command started
  // is the command's too, once.
  if (child_ != nullptr && undelivered_ != 0) child_->signal(undelivered_);
  undelivered_ = 0;
}

}  // namespace cli
