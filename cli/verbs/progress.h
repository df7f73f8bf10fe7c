// A line on a terminal's stderr while a verb takes longer than a second
// (a big clone, a salvage, a land's check): "swarm: cloning ... 3s", updated
// in place each second and cleared when the work ends. Nothing at all when
// stderr is no terminal or the work is quick.
#pragma once

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace cli {

class Progress {
 public:
  // `shown`: whether this process's stderr is the caller's (Context::draws_progress).
  explicit Progress(std::string what, bool shown = true) : what_(std::move(what)) {
    if (!shown || isatty(STDERR_FILENO) == 0) return;
    thread_ = std::thread([this] { run(); });
  }
  ~Progress() { done(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // The work ended: the line goes (before the verb prints its result).
  void done() {
    {
      std::lock_guard lock(mu_);
      if (done_) return;
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    using namespace std::chrono_literals;
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock lock(mu_);
    bool shown = false;
    for (auto next = start + 1s; !cv_.wait_until(lock, next, [&] { return done_; }); next += 1s) {
      const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start);
      std::fprintf(stderr, "\r\033[2Kswarm: %s ... %llds", what_.c_str(), static_cast<long long>(seconds.count()));
      std::fflush(stderr);
      shown = true;
    }
    if (shown) {
      std::fputs("\r\033[2K", stderr);
      std::fflush(stderr);
    }
  }

  std::string what_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace cli
