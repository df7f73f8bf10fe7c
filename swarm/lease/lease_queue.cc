#include "swarm/lease/lease_queue.h"

#include <algorithm>

#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/random.h"
#include "swarm/base/server_clock.h"

namespace swarm {

namespace {

using std::chrono::milliseconds;

// What a granted waiter's place's delete marker carries.
constexpr const char* kGrantedMark = "{\"left\":\"granted\"}";

// A place's id: random, so two waiters of one host and pid never collide.
std::string fresh_id() {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(thread_random()()));
  return hex;
}

// Whether a place of priority `p` and order `o` goes before one of `q`, `r`.
bool ranks_ahead(std::uint64_t p, std::uint64_t o, std::uint64_t q, std::uint64_t r) {
  return p != q ? p > q : o < r;
}

}  // namespace

LeaseQueue::LeaseQueue(LeaseStore store, std::string lease) : store_(std::move(store)), lease_(std::move(lease)) {}

void LeaseQueue::join(const LeaseHolder& who, milliseconds ttl) {
  record_ = record_for(lease_, who, ttl);
  const std::string id = fresh_id();
  const TimePoint sent = std::chrono::system_clock::now();
  const auto sent_steady = Steady::now();
  const BootTime sent_boot = BootClock::now();
  order_ = store_.keys().create(place_key(id), to_json(record_));
  const auto answered = Steady::now();
  id_ = id;
  place_deadline_ = holder_deadline(sent_boot, ttl);
  lapsed_ = false;
  // The server's stamp on our own place: its clock, give or take the round trip.
  auto mine = store_.keys().get(place_key(id));
  clock_ = mine && mine->revision == order_ ? clock_from_stamp(sent, sent_steady, answered, mine->created)
                                            : store_.server_clock();
  swarm::log::debug("lease {}: joined the line at {} (order {})", lease_, place_key(id_), order_);
}

bool LeaseQueue::renew() {
  if (id_.empty()) return false;
  // The place itself stays as it was written: whoever watches it wakes only
  // when it goes.
  record_.order = order_;
  record_.renewed_at = std::chrono::system_clock::now();
  const std::string value = to_json(record_);
  const BootTime sent = BootClock::now();
  // A heartbeat sent after the place's last write lapsed cannot vouch for
  // the place: it may have been removed meanwhile (the heartbeat is a key
  // of its own), so the place must be read back before it counts again.
  if (sent >= place_deadline_) lapsed_ = true;
  try {
    beat_revision_ = beat_revision_ == 0 ? store_.keys().create(beat_key(id_), value)
                                         : store_.keys().update(beat_key(id_), value, beat_revision_);
  } catch (const Error& e) {
    if (e.kind() != Errc::conflict) throw;
    // The heartbeat was removed (with the place: judged dead while this
    // waiter was stuck) or written by another: this place is no longer ours.
    swarm::log::debug("lease {}: the heartbeat of {} was removed: out of line", lease_, place_key(id_));
    return false;
  }
  place_deadline_ = holder_deadline(sent, record_.ttl);
  return true;
}

bool LeaseQueue::still_in_line() {
  if (id_.empty()) return false;
  if (!lapsed_ && BootClock::now() < place_deadline_) return true;
  // Its heartbeats lapsed (a stuck read, a stalled host): beat now, then
  // look whether the place is still there.
  if (!renew()) return false;
  auto place = store_.keys().get(place_key(id_));
  const bool there = place && place->revision == order_;
  if (!there) swarm::log::debug("lease {}: {} was removed while this waiter was stuck", lease_, place_key(id_));
  lapsed_ = !there;
  return there;
}

void LeaseQueue::rejoin(const LeaseHolder& who) {
  const milliseconds ttl = record_.ttl;
  leave();
  join(who, ttl);
}

void LeaseQueue::leave(bool granted) noexcept {
  if (id_.empty()) return;
  try {
    // Quickly: a waiter just granted the lease leaves on its way to using
    // it, and a place left behind only delays those behind it until its TTL
    // runs out, as a killed waiter's would.
    auto budget = std::clamp(record_.ttl / 10, milliseconds(100), milliseconds(1000));
    const LeaseKeys keys = store_.keys().with_budget(budget);
    keys.erase(place_key(id_), order_, granted ? kGrantedMark : "");
    if (beat_revision_ != 0) keys.erase(beat_key(id_), beat_revision_);
  } catch (const std::exception& e) {
    // Removed by another (it judged the place dead), or NATS is away: the
    // place expires by itself within its TTL either way.
    swarm::log::debug("lease {}: leaving the line: {}", lease_, e.what());
  }
  id_.clear();
  ahead_.reset();
}

LeaseQueue::Steady::time_point LeaseQueue::expiry_of(const Place& place, TimePoint stored_at,
                                                     Steady::time_point arrived, const ServerClock& clock,
                                                     bool aged) const {
  const milliseconds ttl = place.waiter.ttl;
  auto expires = aged ? observed_expiry(clock, arrived, stored_at, ttl) : observed_expiry_of_new(clock, arrived, ttl);
  if (Steady::now() < expires) return expires;
  // Its place is old: a waiter that has waited a while beats elsewhere.
  auto beat = read_arriving([&] { return store_.keys().get(beat_key(place.id)); });
  if (beat.value) expires = std::max(expires, observed_expiry(clock, beat.at, beat.value->created, ttl));
  return expires;
}

bool LeaseQueue::look_ahead(const ServerClock& clock) {
  ahead_.reset();
  ahead_count_ = 0;
  auto listed = read_arriving([&] { return store_.keys().list(queue_prefix(lease_) + "*"); });
  std::vector<kv::Entry>& entries = listed.value;
  const auto arrived = listed.at;
  for (auto& entry : entries) {
    auto parsed = parse_lease(entry.value);
    if (!parsed.lease) continue;  // not a place any waiter wrote: no one waits there
    Place place{entry.key.substr(queue_prefix(lease_).size()), token_of(parsed.lease->order, entry.revision),
                entry.revision, {}, std::move(*parsed.lease)};
    if (!ranks_ahead(place.waiter.priority, place.order, record_.priority, order_)) continue;
    place.expires = expiry_of(place, entry.created, arrived, clock, true);
    if (Steady::now() >= place.expires || gone_from(place.waiter, record_.host, record_.host_id)) {
      remove(place);
      continue;
    }
    ++ahead_count_;
    // Just ahead: the one that ranks last of those ahead.
    if (!ahead_ || ranks_ahead(ahead_->waiter.priority, ahead_->order, place.waiter.priority, place.order))
      ahead_ = std::move(place);
  }
  if (ahead_) swarm::log::debug("lease {}: {} waiter(s) ahead; watching {}", lease_, ahead_count_, place_key(ahead_->id));
  return ahead_.has_value();
}

kv::Watch LeaseQueue::watch_ahead() const {
  return store_.keys().watch(place_key(ahead_->id));
}

LeaseQueue::Ahead LeaseQueue::apply_ahead(const kv::WatchEvent& event, Steady::time_point arrived,
                                          const ServerClock& clock) {
  if (!ahead_) return Ahead::gone;
  if (event.kind == kv::WatchEvent::Kind::caught_up) return Ahead::there;
  if (event.kind == kv::WatchEvent::Kind::erase)
    return event.entry.value == kGrantedMark ? Ahead::granted : Ahead::gone;
  auto parsed = parse_lease(event.entry.value);
  if (!parsed.lease) return Ahead::gone;
  if (event.entry.revision == ahead_->revision) return Ahead::there;  // the replay of what the look saw
  // A newer write of the place: a waiter of an older swarm renews its place
  // itself; the write is new, so it counts from now.
  ahead_->revision = event.entry.revision;
  ahead_->waiter = std::move(*parsed.lease);
  ahead_->expires = expiry_of(*ahead_, event.entry.created, arrived, clock, false);
  return Ahead::there;
}

bool LeaseQueue::ahead_dead(Steady::time_point now, const ServerClock& clock) {
  if (!ahead_) return false;
  if (!gone_from(ahead_->waiter, record_.host, record_.host_id)) {
    if (now < ahead_->expires) return false;
    // Its TTL ran out since the last write we know of: did it beat since?
    auto beat = read_arriving([&] { return store_.keys().get(beat_key(ahead_->id)); });
    if (beat.value) {
      auto expires = observed_expiry(clock, beat.at, beat.value->created, ahead_->waiter.ttl);
      if (expires > Steady::now()) {
        ahead_->expires = expires;
        return false;
      }
    }
  }
  swarm::log::debug("lease {}: the waiter ahead ({}) is gone; removing its place", lease_, ahead_->waiter.holder);
  remove(*ahead_);
  ahead_.reset();
  return true;
}

bool LeaseQueue::place_dead(const std::string& id, const ServerClock& clock) const {
  auto place = store_.keys().get(place_key(id));
  if (!place) return true;
  const TimePoint now = clock.now();
  if (place_is_live(*place, std::nullopt, now, record_.host, record_.host_id)) return false;
  auto beat = store_.keys().get(beat_key(id));
  return !place_is_live(*place, beat ? std::optional<TimePoint>(beat->created) : std::nullopt, now, record_.host,
                        record_.host_id);
}

void LeaseQueue::remove(const Place& place) noexcept {
  try {
    store_.keys().erase(place_key(place.id), place.revision);
    bool deleted = false;
    if (auto beat = store_.keys().last(beat_key(place.id), &deleted); beat && !deleted)
      store_.keys().erase(beat_key(place.id), beat->revision);
    swarm::log::debug("lease {}: removed the dead waiter's place {}", lease_, place_key(place.id));
  } catch (const std::exception&) {
    // Written again after all (an older waiter renewing), or removed by another.
  }
}

}  // namespace swarm
