#include "swarm/lease_queue.h"

#include <algorithm>
#include <random>

#include "swarm/error.h"
#include "swarm/log.h"

namespace swarm {

namespace {

using std::chrono::milliseconds;

// A place's id: random, so two waiters of one host and pid never collide.
std::string fresh_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(rng()));
  return hex;
}

}  // namespace

std::chrono::steady_clock::time_point expiry_seen_at(std::chrono::steady_clock::time_point seen, milliseconds ttl,
                                                     milliseconds age, std::chrono::nanoseconds uncertainty) {
  auto left = std::max(milliseconds(0), ttl - age);
  return seen + left + expiry_margin(ttl, uncertainty);
}

LeaseQueue::LeaseQueue(LeaseStore store, std::string lease) : store_(std::move(store)), lease_(std::move(lease)) {}

void LeaseQueue::join(const LeaseHolder& who, milliseconds ttl) {
  record_ = record_for(lease_, who, ttl);
  const std::string key = queue_prefix(lease_) + fresh_id();
  revision_ = translating_kv([&] { return store_.bucket().create(key, to_json(record_)); });
  order_ = revision_;
  key_ = key;
  spdlog::debug("lease {}: joined the line at {} (order {})", lease_, key_, order_);
}

void LeaseQueue::renew() {
  if (key_.empty()) return;
  record_.order = order_;
  record_.renewed_at = std::chrono::system_clock::now();
  revision_ = translating_kv([&] { return store_.bucket().update(key_, to_json(record_), revision_); });
}

void LeaseQueue::leave() noexcept {
  if (key_.empty()) return;
  try {
    // Quickly: a waiter just granted the lease leaves on its way to using
    // it, and a place left behind only delays those behind it until its TTL
    // runs out, as a killed waiter's would.
    auto budget = std::clamp(record_.ttl / 10, std::chrono::milliseconds(100), std::chrono::milliseconds(1000));
    store_.bucket().with_budget(budget).erase(key_, revision_);
  } catch (const std::exception& e) {
    // Removed by another (it judged the place dead), or NATS is away: the
    // place expires by itself within its TTL either way.
    spdlog::debug("lease {}: leaving the line: {}", lease_, e.what());
  }
  places_.erase(key_);
  key_.clear();
}

kv::Watch LeaseQueue::watch() const {
  return translating_kv([&] { return store_.bucket().watch(queue_prefix(lease_) + "*"); });
}

void LeaseQueue::apply(const kv::WatchEvent& event, Steady::time_point seen, TimePoint server_now, bool aged,
                       std::chrono::nanoseconds uncertainty) {
  if (event.kind == kv::WatchEvent::Kind::caught_up) return;
  const std::string& key = event.entry.key;
  if (event.kind == kv::WatchEvent::Kind::erase) {
    places_.erase(key);
    return;
  }
  auto parsed = parse_lease(event.entry.value);
  if (!parsed.lease) {
    places_.erase(key);  // not a place any waiter wrote: no one waits there
    return;
  }
  Place place;
  place.revision = event.entry.revision;
  place.order = parsed.lease->order != 0 ? parsed.lease->order : event.entry.revision;
  auto age = aged ? std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(
                                                            server_now - event.entry.created))
                            : milliseconds(0);
  place.expires = expiry_seen_at(seen, parsed.lease->ttl, age, uncertainty);
  place.waiter = std::move(*parsed.lease);
  places_[key] = place;
}

bool LeaseQueue::dead(const Place& place, Steady::time_point now) const {
  return now >= place.expires || gone_from(place.waiter, record_.host, record_.host_id);
}

bool LeaseQueue::first(Steady::time_point now) const { return ahead(now) == 0; }

int LeaseQueue::ahead(Steady::time_point now) const {
  int n = 0;
  for (const auto& [key, place] : places_)
    if (key != key_ && place.order < order_ && !dead(place, now)) ++n;
  return n;
}

std::optional<LeaseQueue::Steady::time_point> LeaseQueue::next_expiry_ahead(Steady::time_point now) const {
  std::optional<Steady::time_point> next;
  for (const auto& [key, place] : places_)
    if (key != key_ && place.order < order_ && !dead(place, now) && (!next || place.expires < *next))
      next = place.expires;
  return next;
}

void LeaseQueue::clear_dead_ahead(Steady::time_point now) {
  for (auto it = places_.begin(); it != places_.end();) {
    const auto& [key, place] = *it;
    if (key != key_ && place.order < order_ && dead(place, now)) {
      try {
        store_.bucket().erase(key, place.revision);
        spdlog::debug("lease {}: removed the dead waiter's place {}", lease_, key);
      } catch (const std::exception&) {
        // Renewed after all, or removed by another: the watch will tell.
      }
      it = places_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace swarm
