#include "swarm/lease/watch_pump.h"

#include "swarm/base/log.h"

namespace swarm {

using namespace std::chrono_literals;

namespace {
// How long a reader blocks before it looks whether it should stop.
constexpr std::chrono::milliseconds kReadSlice{250};
}  // namespace

WatchPump::~WatchPump() { stop(); }

void WatchPump::add(kv::Watch watch, int source, bool optional) {
  Source s;
  s.id = source;
  s.watch = std::make_unique<kv::Watch>(std::move(watch));
  kv::Watch* w = s.watch.get();
  s.reader = std::thread([this, w, source, optional, stop = s.stop] {
    while (true) {
      {
        std::lock_guard lock(mu_);
        if (stopping_ || *stop) return;
      }
      try {
        auto event = w->next(kReadSlice);
        if (!event) continue;
        std::lock_guard lock(mu_);
        if (*stop) return;
        events_.push_back({source, std::move(*event), std::chrono::steady_clock::now()});
      } catch (const std::exception& e) {
        std::lock_guard lock(mu_);
        if (optional) {
          swarm::log::debug("a watch that may end ended: {}", e.what());
          return;
        }
        if (!stopping_ && !*stop && !broken_) broken_ = std::current_exception();
        ready_.notify_all();
        return;
      }
      ready_.notify_all();
    }
  });
  std::lock_guard lock(mu_);
  sources_.push_back(std::move(s));
}

std::optional<WatchPump::Event> WatchPump::next(std::chrono::steady_clock::time_point until) {
  std::unique_lock lock(mu_);
  ready_.wait_until(lock, until, [&] { return !events_.empty() || broken_ || woken_; });
  if (!events_.empty()) {
    Event e = std::move(events_.front());
    events_.pop_front();
    return e;
  }
  if (broken_) std::rethrow_exception(broken_);
  woken_ = false;
  return std::nullopt;
}

void WatchPump::remove(int source) {
  std::vector<Source> removed;
  {
    std::lock_guard lock(mu_);
    for (auto it = sources_.begin(); it != sources_.end();) {
      if (it->id != source) {
        ++it;
        continue;
      }
      *it->stop = true;
      removed.push_back(std::move(*it));
      it = sources_.erase(it);
    }
    std::erase_if(events_, [&](const Event& e) { return e.source == source; });
  }
  for (auto& s : removed) s.watch->stop();  // wakes a reader blocked in next()
  for (auto& s : removed)
    if (s.reader.joinable()) s.reader.join();
}

void WatchPump::wake() {
  std::lock_guard lock(mu_);
  woken_ = true;
  ready_.notify_all();
}

void WatchPump::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  for (auto& s : sources_) s.watch->stop();  // wakes a reader blocked in next()
  for (auto& s : sources_)
    if (s.reader.joinable()) s.reader.join();
}

}  // namespace swarm
