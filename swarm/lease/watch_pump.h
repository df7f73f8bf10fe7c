// Several KV watches read at once, their events handed out in arrival order
// with the moment each arrived: a waiter in a lease's line watches the lease
// and the line together, and wakes on either (or on a timer, or when told).
#pragma once

#include <chrono>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "kv/watch.h"

namespace swarm {

class WatchPump {
 public:
  struct Event {
    int source = 0;  // as given to add()
    kv::WatchEvent event;
    // Taken once the watch handed it over: never before it arrived (adr/0023).
    std::chrono::steady_clock::time_point arrived;
  };

  WatchPump() = default;
  WatchPump(const WatchPump&) = delete;
  WatchPump& operator=(const WatchPump&) = delete;
  ~WatchPump();

  // Starts reading `watch` on a thread of its own. An `optional` source that
  // breaks just ends (logged); any other's break is rethrown by next().
  void add(kv::Watch watch, int source, bool optional = false);
  // Stops reading the watches of `source` and drops their events not yet
  // handed out (a waiter whose predecessor changed watches another key).
  void remove(int source);
  // The next event, or nullopt when `until` passed or wake() was called first.
  // Rethrows what broke a watch.
  std::optional<Event> next(std::chrono::steady_clock::time_point until);
  // Makes a waiting next() return at once (safe from any thread, a signal
  // handler excepted).
  void wake();
  // Stops every watch and joins the threads.
  void stop();

 private:
  struct Source {
    int id = 0;
    std::unique_ptr<kv::Watch> watch;
    std::thread reader;
    std::shared_ptr<std::atomic<bool>> stop = std::make_shared<std::atomic<bool>>(false);
  };
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<Event> events_;
  std::exception_ptr broken_;
  bool woken_ = false;
  bool stopping_ = false;
  std::vector<Source> sources_;
};

}  // namespace swarm
