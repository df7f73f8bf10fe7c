#include "swarm/lease/mutex.h"

#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/base/warnings.h"
#include "swarm/lease/events.h"
#include "swarm/lease/lease_queue.h"

namespace swarm {

namespace {

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The pump's sources: the lease itself, and the place ahead (a new source
// each time the place ahead changes, so events of an old one are told apart).
constexpr int kLeaseSource = 0;
// Requests to the leader to step down (heard for a handover to this waiter).
constexpr int kHandoverSource = -1;
// While a lease released to another candidate waits for it, how often the
// others look whether that candidate's place is still live.
constexpr milliseconds kHandoverPoll{250};

// The lease as the first in line sees it through its watch.
struct LeaseView {
  bool held = false;          // a record is there (not released)
  LastWrite last;             // what to grant over
  Steady::time_point expires = Steady::time_point::max();
  bool corrupt = false;
  std::string handover_to;    // released to this waiter's place id (elect --resign --to)
  Steady::time_point handover_until = Steady::time_point::min();  // the others wait for it until then
};

}  // namespace

// One wait in line: its place, its watches, and what it knows of the lease.
class Mutex::InLine {
 public:
  InLine(Mutex& m, std::optional<milliseconds> wait) : m_(m), line_(m.store_, m.name_), wait_(wait) {
    std::lock_guard lock(m_.pump_mu_);
    m_.pump_ = &pump_;
  }
  // Leaves the line and forgets the pump, whatever happened.
  ~InLine() {
    pump_.stop();
    line_.leave(granted_);
    std::lock_guard lock(m_.pump_mu_);
    m_.pump_ = nullptr;
  }
  InLine(const InLine&) = delete;
  InLine& operator=(const InLine&) = delete;

  Lease run() {
    const auto start = Steady::now();
    deadline_ = wait_ ? start + *wait_ : Steady::time_point::max();
    line_.join(m_.who_, m_.ttl_);
    m_.order_ = line_.order();
    clock_ = line_.clock();
    next_renewal_ = start + m_.ttl_ / 3;
    if (m_.hear_handover_) {
      // Best effort: a candidate that does not hear it is not handed the
      // lease, and the line waits for it one TTL at most (see may_take).
      try {
        pump_.add(m_.store_.keys().watch(resign_key(m_.name_)), kHandoverSource, true);
      } catch (const Error& e) {
        swarm::log::debug("lease {}: not hearing requests to hand over: {}", m_.name_, e.what());
      }
    }
    look_ahead();
    while (true) {
      if (m_.cancelled_) throw Cancelled("stopped waiting for lease " + m_.name_);
      const auto now = Steady::now();
      if (now >= deadline_) give_up(now);
      if (now >= next_renewal_) {
        next_renewal_ = now + m_.ttl_ / 3;
        if (!line_.renew()) {
          rejoin();
          continue;
        }
      }
      if (!first_ && line_.ahead_dead(now, clock_)) {
        look_ahead();
        continue;
      }
      if (first_ && may_take(now)) {
        // Put out of line while it was stuck: behind those who waited meanwhile.
        if (!line_.still_in_line()) {
          rejoin();
          continue;
        }
        if (someone_came_ahead()) continue;
        if (auto granted = try_grant()) {
          granted_ = true;
          return *granted;
        }
      }
      if (auto event = pump_.next(next_wake(now))) {
        ++m_.wakeups_;
        on_event(*event);
      }
    }
  }

 private:
  // Finds the place just ahead and watches it, or, with none ahead, becomes
  // first and watches the lease.
  void look_ahead() {
    stop_watching_ahead();
    if (!line_.look_ahead(clock_)) {
      become_first();
      return;
    }
    watch_ahead();
  }

  // The place ahead (as line_ last read it) watched, as a new source.
  void watch_ahead() {
    ahead_source_ = ++last_source_;
    ahead_heard_ = false;
    pump_.add(line_.watch_ahead(), ahead_source_);
  }

  void stop_watching_ahead() {
    if (ahead_source_ != 0) pump_.remove(ahead_source_);
    ahead_source_ = 0;
  }

  // First in line after a wait: a candidate of a higher priority that came
  // meanwhile goes first (it saw this one behind it, and waits for the lease
  // too). One listing, only when the lease was held since the last look.
  bool someone_came_ahead() {
    if (!look_again_) return false;
    look_again_ = false;
    if (!lease_.handover_to.empty() && lease_.handover_to == line_.id()) return false;  // handed to this one
    if (!line_.look_ahead(clock_)) return false;
    swarm::log::debug("lease {}: a waiter of a higher priority came; it goes first", m_.name_);
    pump_.remove(kLeaseSource);
    first_ = false;
    lease_ = {};
    lease_live_ = false;
    watch_ahead();
    return true;
  }

  void become_first() {
    first_ = true;
    swarm::log::debug("lease {}: first in line", m_.name_);
    // How the lease stands, from one read now: a key never written replays
    // nothing, and its watch would only say so after a pause. What the read
    // returns is timed from when its answer arrived, however long it took.
    bool released = false;
    auto last = read_arriving([&] { return m_.store_.keys().last(m_.name_, &released); });
    if (last.value) see_lease(last.value->revision, last.value->created, released, last.value->value, last.at, false);
    pump_.add(m_.store_.keys().watch(m_.name_), kLeaseSource);
  }

  // A record that was there before we looked is aged on the server's clock
  // at the moment its answer arrived; one written while we watch is taken as
  // new (age 0 when it arrived: it was stamped before, so this only waits
  // longer). Neither reads the wall clock, which a step may have moved since.
  // `by_server`: the server's marker of its expiry (2.11+), which carries
  // no record: the one it ended is kept, for the grant's took_over and count.
  // It never brings the grant forward: the waiter still takes a holder's
  // lease only when its own clock says it ended (adr/0011), which comes
  // first unless the server's clock stepped ahead; the grant is then made
  // over the marker.
  void see_lease(std::uint64_t revision, TimePoint stored_at, bool released, const std::string& value,
                 Steady::time_point arrived, bool live, bool by_server = false) {
    const LastWrite before = lease_.last;
    if (by_server && lease_.held && before.record) {
      lease_.last = {revision, true, stored_at, before.record, {}};
      lease_.last.expired_by_server = true;
      lease_.last.expired_revision = before.revision;
      // A grant this waiter tried already (its clock had said so) lost its
      // CAS to this very marker: it may take it now, over the marker.
      if (lease_.expires == Steady::time_point::max()) lease_.expires = Steady::now();
      swarm::log::debug("lease {}: the server ended revision {} by its TTL", m_.name_, before.revision);
      // Journaled by whoever hears it live, briefly (the line goes on
      // meanwhile); the journal keeps one of all.
      if (live)
        m_.store_.journal()
            .with_budget(kJournalBudget)
            .record(lease_expired_event(m_.store_.bucket_name(), m_.name_, lease_.last, revision, stored_at,
                                        HostIdentity{m_.who_.host, m_.who_.host_id}));
      return;
    }
    lease_.last = {revision, released, stored_at, std::nullopt, {}};
    auto parsed = parse_lease(value);
    lease_.last.record = parsed.lease;
    lease_.held = revision != 0 && !released;
    if (lease_.held) look_again_ = true;
    lease_.handover_to = released && parsed.lease ? parsed.lease->handover_to : std::string();
    // One TTL (the leader's) from the release at most, whatever becomes of
    // the candidate: one that does not hear it, or stepped back, never
    // stalls the line.
    if (!lease_.handover_to.empty())
      lease_.handover_until = live ? observed_expiry_of_new(clock_, arrived, parsed.lease->ttl)
                                   : observed_expiry(clock_, arrived, stored_at, parsed.lease->ttl);
    lease_.corrupt = lease_.held && !parsed.lease;
    lease_.expires = Steady::time_point::max();
    if (!lease_.held || !parsed.lease) return;
    lease_.expires = live ? observed_expiry_of_new(clock_, arrived, parsed.lease->ttl)
                          : observed_expiry(clock_, arrived, stored_at, parsed.lease->ttl);
    swarm::log::debug("lease {}: revision {} ({}): expires in {} ms unless renewed", m_.name_, revision,
                  parsed.lease->holder,
                  std::chrono::duration_cast<milliseconds>(lease_.expires - Steady::now()).count());
  }

  // Whether the lease is free, or its holder's TTL ran out, for the first
  // in line (a corrupt record waits for doctor, said once).
  bool may_take(Steady::time_point now) {
    if (lease_.corrupt) {
      if (!told_corrupt_)
        warn(log::format("the record of lease {} is corrupt: waiting until `swarm doctor --fix` removes it", m_.name_));
      told_corrupt_ = true;
      return false;
    }
    if (lease_.held) return now >= lease_.expires;
    // Released to another candidate: only once its place is dead (it left,
    // or froze past its TTL) may the line go on without it.
    if (!lease_.handover_to.empty() && lease_.handover_to != line_.id() && now < lease_.handover_until) {
      if (now < next_handover_look_) return false;
      next_handover_look_ = now + kHandoverPoll;
      if (!line_.place_dead(lease_.handover_to, clock_)) return false;
      swarm::log::debug("lease {}: the candidate it was handed to is gone; the line goes on", m_.name_);
      lease_.handover_to.clear();
    }
    return true;
  }

  // First in line, the lease free or expired: granted over what was seen.
  std::optional<Lease> try_grant() {
    try {
      swarm::log::debug("lease {}: granting it over revision {} ({})", m_.name_, lease_.last.revision,
                    lease_.held ? "expired" : "free");
      return m_.store_.grant(m_.name_, m_.who_, m_.ttl_, lease_.last);
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict) throw;
      // Moved meanwhile (renewed, or taken by a waiter that thought it was
      // first): the lease's watch tells what it is now.
      swarm::log::debug("lease {}: {}", m_.name_, e.what());
      lease_.held = true;
      look_again_ = true;
      lease_.expires = Steady::time_point::max();
      return std::nullopt;
    }
  }

  // Out of line (its place removed while it was stuck): a new place at the
  // end, and the line read again; what it knew of the lease is forgotten.
  void rejoin() {
    swarm::log::debug("lease {}: out of line; joining it again", m_.name_);
    if (first_) pump_.remove(kLeaseSource);
    first_ = false;
    lease_ = {};
    lease_live_ = false;
    line_.rejoin(m_.who_);
    m_.order_ = line_.order();
    look_ahead();
  }

  void on_event(const WatchPump::Event& event) {
    const kv::WatchEvent& e = event.event;
    if (event.source == kHandoverSource) {
      if (e.kind != kv::WatchEvent::Kind::put || first_) return;
      auto request = parse_lease(e.entry.value);
      if (!request.lease || request.lease->handover_to != line_.id()) return;
      // Only a request to the leader of now: an old one (its leader gone, or
      // one it acted on already) would let this waiter jump the line.
      std::optional<LeaseEntry> leader;
      try {
        leader = m_.store_.get(m_.name_);
      } catch (const Error& failed) {
        // Best effort, as the watch: not handed the lease, the line waits for
        // this waiter one TTL at most.
        swarm::log::debug("lease {}: could not read the lease to check a hand-over: {}", m_.name_, failed.what());
        return;
      }
      if (!leader || leader->token() != request.lease->token) return;
      // The leader is asked to hand over to this waiter: it watches the lease
      // from now on, wherever it stands in line.
      swarm::log::debug("lease {}: the leader is asked to hand over to this waiter", m_.name_);
      stop_watching_ahead();
      become_first();
      return;
    }
    if (event.source == kLeaseSource) {
      if (e.kind == kv::WatchEvent::Kind::caught_up) lease_live_ = true;
      // The replay repeats what the read saw; only newer revisions count.
      else if (e.entry.revision > lease_.last.revision)
        see_lease(e.entry.revision, e.entry.created, e.kind == kv::WatchEvent::Kind::erase, e.entry.value,
                  event.arrived, lease_live_, e.expired);
      return;
    }
    if (event.source != ahead_source_) return;  // a place we no longer watch
    // A replay with nothing in it: the place went before the watch began.
    const bool empty_replay = e.kind == kv::WatchEvent::Kind::caught_up && !ahead_heard_;
    ahead_heard_ = true;
    const auto ahead = empty_replay ? LeaseQueue::Ahead::gone : line_.apply_ahead(e, event.arrived, clock_);
    if (ahead == LeaseQueue::Ahead::gone) look_ahead();
    if (ahead == LeaseQueue::Ahead::granted) {
      // The waiter ahead was first and got the lease: now this one is.
      stop_watching_ahead();
      become_first();
    }
  }

  Steady::time_point next_wake(Steady::time_point now) const {
    (void)now;
    auto wake = std::min(deadline_, next_renewal_);
    if (first_ && lease_.held) wake = std::min(wake, lease_.expires);
    if (first_ && !lease_.held && !lease_.handover_to.empty())
      wake = std::min(wake, std::min(next_handover_look_, lease_.handover_until));
    if (!first_) wake = std::min(wake, line_.ahead_expires());
    return wake;
  }

  [[noreturn]] void give_up(Steady::time_point) const {
    const int ahead = first_ ? 0 : line_.ahead();
    throw Error(Errc::conflict, "waited " + format_duration(*wait_) + " for lease " + m_.name_ + ", which is still " +
                                    (lease_.held ? "held by " + (lease_.last.record ? lease_.last.record->holder : "?")
                                                 : "not free") +
                                    (ahead > 0 ? " with " + std::to_string(ahead) + " waiter(s) ahead" : "") +
                                    "; left the line");
  }

  Mutex& m_;
  ServerClock clock_;
  LeaseQueue line_;
  WatchPump pump_;
  std::optional<milliseconds> wait_;
  Steady::time_point deadline_, next_renewal_;
  bool first_ = false;
  int ahead_source_ = 0;  // the pump source watching the place ahead (0: none)
  int last_source_ = kLeaseSource;
  bool ahead_heard_ = false;  // that watch delivered the place (or its end)
  LeaseView lease_;
  bool lease_live_ = false;  // the lease's watch replayed what was there: what comes now is new
  bool told_corrupt_ = false;
  bool granted_ = false;  // leaving because the lease is ours
  bool look_again_ = false;  // the lease was held since the line was read: read it before taking the lease
  Steady::time_point next_handover_look_{};  // when to look again whether the candidate handed to is live
};

Mutex::Mutex(LeaseStore store, std::string name, LeaseHolder who, milliseconds ttl, bool hear_handover)
    : store_(std::move(store)), name_(std::move(name)), who_(std::move(who)), hear_handover_(hear_handover), ttl_(ttl) {
  require_lease_name(name_);
}

Mutex::~Mutex() {
  if (leaving_.valid()) leaving_.wait();
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
  require_lease_ttl(ttl_);
  if (leaving_.valid()) leaving_.wait();
  wakeups_ = 0;
  auto in_line = std::make_unique<InLine>(*this, wait);
  Lease granted = in_line->run();  // a throw leaves the line here, at once
  // Granted: stopping the watches and leaving the line cost round trips,
  // which the caller need not wait for to start its work.
  leaving_ = std::async(std::launch::async, [in = std::move(in_line)]() mutable { in.reset(); });
  return granted;
}

}  // namespace swarm
