#include "swarm/mutex.h"

#include "swarm/duration.h"
#include "swarm/error.h"
#include "swarm/lease_queue.h"
#include "swarm/log.h"
#include "swarm/names.h"

namespace swarm {

namespace {

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

enum Source { kLease, kLine };

// The lease as the waiter sees it through its watch.
struct LeaseView {
  bool held = false;          // a record is there (not released)
  LastWrite last;             // what to grant over
  Steady::time_point expires = Steady::time_point::max();
  bool corrupt = false;
};

}  // namespace

Mutex::Mutex(LeaseStore store, std::string name, LeaseHolder who, milliseconds ttl)
    : store_(std::move(store)), name_(std::move(name)), who_(std::move(who)), ttl_(ttl) {
  require_lease_name(name_);
}

void Mutex::cancel() {
  cancelled_ = true;
  std::lock_guard lock(pump_mu_);
  if (pump_ != nullptr) pump_->wake();
}

Lease Mutex::lock(std::optional<milliseconds> wait) {
  if (wait && wait->count() == 0) return store_.acquire(name_, who_, ttl_);
  return wait_in_line(wait);
}

Lease Mutex::wait_in_line(std::optional<milliseconds> wait) {
  if (ttl_ < kMinLeaseTtl || ttl_ > kMaxLeaseTtl)
    throw Error(Errc::bad_input, "a lease TTL of " + format_duration(ttl_) + " is out of range: use 1s to 1h");
  const ServerClock& clock = store_.server_clock();
  LeaseQueue line(store_, name_);
  WatchPump pump;
  {
    std::lock_guard lock(pump_mu_);
    pump_ = &pump;
  }
  struct Done {  // leaves the line and forgets the pump whatever happens
    Mutex& m;
    LeaseQueue& line;
    WatchPump& pump;
    ~Done() {
      pump.stop();
      line.leave();
      std::lock_guard lock(m.pump_mu_);
      m.pump_ = nullptr;
    }
  } done{*this, line, pump};

  line.join(who_, ttl_);
  // Watches after the place exists: the line's replay shows it.
  pump.add(line.watch(), kLine);
  pump.add(translating_kv([&] { return store_.bucket().watch(name_); }), kLease);

  const auto start = Steady::now();
  const auto deadline = wait ? start + *wait : Steady::time_point::max();
  auto next_renewal = start + ttl_ / 3;
  LeaseView lease;
  // How the lease stands, from one read now: a key never written replays
  // nothing, and its watch would only say so after a pause.
  bool lease_seen = false, line_seen = false;  // each watch replayed what it holds
  // A record that was there before we looked is aged on the server's clock
  // at the moment it was seen; one written while we watch is taken as new
  // (age 0: it was stamped before we saw it, so this only waits longer).
  // Neither reads the wall clock, which a step may have moved since.
  auto see_lease = [&](std::uint64_t revision, TimePoint stored_at, bool released, const std::string& value,
                       Steady::time_point seen, bool live) {
    lease.last.revision = revision;
    lease.last.stored_at = stored_at;
    lease.last.released = released;
    auto parsed = parse_lease(value);
    lease.last.record = parsed.lease;
    lease.held = revision != 0 && !released;
    lease.corrupt = lease.held && !parsed.lease;
    lease.expires = Steady::time_point::max();
    if (lease.held && parsed.lease) {
      auto age = clock.measured && !live
                     ? std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(clock.at(seen) - stored_at))
                     : milliseconds(0);
      lease.expires = expiry_seen_at(seen, parsed.lease->ttl, age, clock.uncertainty);
      spdlog::debug("lease {}: revision {} ({}), {} ms old by the server's clock: expires in {} ms", name_, revision,
                    parsed.lease->holder, age.count(),
                    std::chrono::duration_cast<milliseconds>(lease.expires - Steady::now()).count());
    } else {
      spdlog::debug("lease {}: revision {} is {}", name_, revision, released ? "a release" : "not a lease record");
    }
  };
  {
    const auto seen = Steady::now();
    bool released = false;
    auto last = translating_kv([&] { return store_.bucket().last(name_, &released); });
    if (last) see_lease(last->revision, last->created, released, last->value, seen, false);
    lease_seen = true;
  }
  bool told_corrupt = false;
  bool lease_live = false;  // the lease's watch replayed what was there: what comes now is new
  while (true) {
    if (cancelled_) throw Cancelled("stopped waiting for lease " + name_);
    auto now = Steady::now();
    if (now >= deadline) {
      int ahead = line.ahead(now);
      throw Error(Errc::conflict, "waited " + format_duration(*wait) + " for lease " + name_ + ", which is still " +
                                      (lease.held ? "held by " + (lease.last.record ? lease.last.record->holder : "?")
                                                  : "not free") +
                                      (ahead > 0 ? " with " + std::to_string(ahead) + " waiter(s) ahead" : "") +
                                      "; left the line");
    }
    if (now >= next_renewal) {
      line.renew();
      next_renewal = now + ttl_ / 3;
    }
    if (lease_seen && line_seen && line.first(now)) {
      line.clear_dead_ahead(now);
      if (lease.corrupt && !told_corrupt) {
        spdlog::warn("the record of lease {} is corrupt: waiting until `swarm doctor --fix` removes it", name_);
        told_corrupt = true;
      }
      if (!lease.corrupt && (!lease.held || now >= lease.expires)) {
        try {
          spdlog::debug("lease {}: first in line; granting it over revision {} ({})", name_, lease.last.revision,
                        lease.held ? "expired" : "free");
          Lease granted = store_.grant(name_, who_, ttl_, lease.last);
          spdlog::debug("lease {}: granted, token {}", name_, granted.token);
          return granted;
        } catch (const Error& e) {
          if (e.kind() != Errc::conflict) throw;
          // Moved meanwhile (renewed, or taken by a waiter that thought it was
          // first): the lease's watch tells what it is now.
          spdlog::debug("lease {}: {}", name_, e.what());
          lease.held = true;
          lease.expires = Steady::time_point::max();
        }
      }
    }
    auto wake = std::min(deadline, next_renewal);
    if (lease.held && lease.expires < wake) wake = lease.expires;
    if (auto expiry = line.next_expiry_ahead(now); expiry && *expiry < wake) wake = *expiry;
    auto event = pump.next(wake);
    if (!event) continue;
    const kv::WatchEvent& e = event->event;
    if (event->source == kLine) {
      if (e.kind == kv::WatchEvent::Kind::caught_up) line_seen = true;
      else line.apply(e, event->seen, clock.at(event->seen), clock.measured && !line_seen, clock.uncertainty);
      continue;
    }
    if (e.kind == kv::WatchEvent::Kind::caught_up) {
      lease_live = true;
      continue;
    }
    // The replay repeats what the read above saw; only newer revisions count.
    if (e.entry.revision < lease.last.revision) continue;
    if (e.entry.revision == lease.last.revision) continue;
    see_lease(e.entry.revision, e.entry.created, e.kind == kv::WatchEvent::Kind::erase, e.entry.value, event->seen,
              lease_live);
  }
}

}  // namespace swarm
