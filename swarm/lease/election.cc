#include "swarm/lease/election.h"

#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/warnings.h"
#include "swarm/lease/events.h"
#include "swarm/lease/lease_queue.h"

namespace swarm {

namespace {

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A request to step down is a record like a lease's, kept this long.
constexpr std::chrono::minutes kResignRequestTtl{1};

}  // namespace

LeaseEntry request_resignation(const LeaseStore& store, const std::string& name, const LeaseHolder& by,
                               const std::optional<LiveWaiter>& to) {
  auto entry = store.get(name);
  if (!entry) throw Error(Errc::not_found, "nobody leads " + name + " (no lease by that name)");
  if (entry->corrupt())
    throw Error::corrupt_lease(name, entry->corrupt_reason);
  LeaseRecord request = record_for(name, by, kResignRequestTtl);
  request.token = entry->token();
  if (to) {
    request.handover_to = to->id;
    request.handover_holder = to->holder;
  }
  const std::string key = resign_key(name);
  bool released = false;
  auto last = store.keys().last(key, &released);
  if (last) store.keys().update(key, to_json(request), last->revision);
  else store.keys().create(key, to_json(request));
  return *entry;
}

ResignWatch::ResignWatch(const LeaseStore& store, const std::string& name, std::uint64_t token,
                         std::function<void(const LeaseRecord&)> on_request)
    : store_(store), name_(name), token_(token), on_request_(std::move(on_request)) {
  watch_.emplace(store_.keys().watch(resign_key(name_)));
  thread_ = std::thread([this] {
    while (!stopping_) {
      std::optional<kv::WatchEvent> event;
      try {
        event = watch_->next(std::chrono::milliseconds(250));
      } catch (const std::exception& e) {
        if (!stopping_) warn(log::format("lease {}: no longer hearing requests to step down: {}", name_, e.what()));
        return;
      }
      if (!event || event->kind != kv::WatchEvent::Kind::put) continue;
      auto parsed = parse_lease(event->entry.value);
      if (!parsed.lease || parsed.lease->token != token_) continue;  // another leader's request
      request_revision_ = event->entry.revision;
      swarm::log::debug("lease {}: {} asked the leader (token {}) to step down", name_, parsed.lease->holder, token_);
      if (on_request_) on_request_(*parsed.lease);
      return;
    }
  });
}

ResignWatch::~ResignWatch() {
  stopping_ = true;
  if (watch_) watch_->stop();
  if (thread_.joinable()) thread_.join();
}

void ResignWatch::withdraw() {
  if (request_revision_ == 0) return;
  try {
    store_.keys().erase(resign_key(name_), request_revision_);
  } catch (const std::exception&) {
    // A newer request, or removed already: it names another token anyway.
  }
}

StepDownWatch::StepDownWatch(const LeaseStore& store, const Lease& lease, std::string doing,
                             std::function<void(const std::string&)> note, std::function<void()> step_down)
    : term_ends_(lease.deadline - lease.record.ttl + lease.record.min_term), step_down_(std::move(step_down)) {
  const std::string name = lease.name;
  watch_.emplace(store, name, lease.token,
                 [this, name, doing = std::move(doing), note = std::move(note)](const LeaseRecord& request) {
                   {
                     std::lock_guard lock(mu_);
                     to_ = request.handover_to;
                     to_holder_ = request.handover_holder;
                   }
                   const auto held_for = term_ends_ - BootClock::now();
                   std::string what = "asked to step down as leader of " + name + ": ";
                   if (held_for > milliseconds(0))
                     what += "its minimum term ends in " +
                             format_duration(std::chrono::duration_cast<milliseconds>(held_for)) + "; " + doing +
                             " then";
                   else
                     what += doing;
                   if (note) note(what);
                   // Its own thread: the watch's thread ends now, and the
                   // term may be long.
                   waiter_ = std::thread([this] {
                     std::unique_lock lock(mu_);
                     while (!cancelled_ && BootClock::now() < term_ends_)
                       cv_.wait_for(lock, std::min<BootClock::duration>(term_ends_ - BootClock::now(), milliseconds(100)));
                     if (cancelled_) return;  // its work ended by itself first: no step down
                     stepped_down_ = true;
                     lock.unlock();
                     step_down_();
                   });
                 });
}

StepDownWatch::~StepDownWatch() {
  cancel();
  watch_.reset();  // its thread may start the waiter: joined below, after it
  if (waiter_.joinable()) waiter_.join();
}

void StepDownWatch::cancel() {
  {
    std::lock_guard lock(mu_);
    cancelled_ = true;
  }
  cv_.notify_all();
}

std::pair<std::string, std::string> StepDownWatch::handover() const {
  std::lock_guard lock(mu_);
  return {to_, to_holder_};
}

void StepDownWatch::withdraw() {
  if (watch_) watch_->withdraw();
}

std::string_view to_string(Leadership::Change change) {
  switch (change) {
    case Leadership::Change::current: return "current";
    case Leadership::Change::elected: return "elected";
    case Leadership::Change::released: return "released";
    case Leadership::Change::expired: return "expired";
  }
  return "current";
}

LeaderWatch::LeaderWatch(const LeaseStore& store, const std::string& name, std::optional<HostIdentity> me)
    : store_(store), name_(name), me_(std::move(me)) {
  try {
    if (store_.keys().announces_expiry()) grace_ = kServerMarkerGrace;
  } catch (const Error& e) {
    // Not known: judged by this watch's clock alone, as on 2.9.
    swarm::log::debug("lease {}: whether the server announces expiry is not known ({})", name_, e.what());
  }
  // Who leads now, from one read: a lease never taken replays nothing.
  bool released = false;
  auto read = read_arriving([&] { return store_.keys().last(name_, &released); });
  if (const auto& last = read.value) {
    revision_ = last->revision;
    auto parsed = parse_lease(last->value);
    if (!released && parsed.lease) {
      leader_ = parsed.lease;
      token_ = token_of(parsed.lease->token, last->revision);
      leader_revision_ = last->revision;
      expires_ = observed_expiry(store_.server_clock(), read.at, last->created, parsed.lease->ttl) + grace_;
    }
  }
  pump_.add(store_.keys().watch(name_), 0);
}

std::optional<Leadership> LeaderWatch::next(milliseconds timeout) {
  const auto until = Steady::now() + timeout;
  auto report = [&](Leadership::Change change) {
    Leadership out;
    out.change = change;
    out.leader = leader_;
    out.token = leader_ ? token_ : 0;
    if (change != Leadership::Change::current) out.reason = reason_;
    if (change == Leadership::Change::elected) reason_.clear();
    return out;
  };
  if (!told_current_) {
    told_current_ = true;
    if (leader_ && Steady::now() >= expires_) leader_.reset();
    return report(Leadership::Change::current);
  }
  while (!stopped_) {
    auto now = Steady::now();
    if (leader_ && now >= expires_) {
      leader_.reset();
      token_ = 0;
      reason_ = "expired";
      return report(Leadership::Change::expired);
    }
    if (now >= until) return std::nullopt;
    auto event = pump_.next(leader_ ? std::min(until, expires_) : until);
    if (event && event->event.kind == kv::WatchEvent::Kind::caught_up) live_ = true;
    if (!event || event->event.kind == kv::WatchEvent::Kind::caught_up) continue;
    const kv::Entry& entry = event->event.entry;
    if (entry.revision <= revision_) continue;  // what the read above saw
    revision_ = entry.revision;
    if (event->event.kind == kv::WatchEvent::Kind::erase) {
      bool had = leader_.has_value();
      const std::optional<LeaseRecord> last_leader = leader_;
      leader_.reset();
      token_ = 0;
      expires_ = Steady::time_point::max();
      if (!had) continue;  // its end was reported (expired) already
      if (event->event.expired) {
        // The server ended it by its TTL: journaled by whoever hears it live.
        if (me_ && live_) {
          LastWrite ended;
          ended.record = last_leader;
          ended.expired_revision = leader_revision_;
          ended.expired_by_server = true;
          store_.journal().with_budget(kJournalBudget).record(
              lease_expired_event(store_.bucket_name(), name_, ended, entry.revision, entry.created, *me_));
        }
        reason_ = "expired";
        return report(Leadership::Change::expired);
      }
      auto marker = parse_lease(entry.value);
      reason_ = marker.lease && !marker.lease->handover_to.empty() ? "handed_over" : "resigned";
      return report(Leadership::Change::released);
    }
    auto parsed = parse_lease(entry.value);
    if (!parsed.lease) continue;
    const std::uint64_t token = token_of(parsed.lease->token, entry.revision);
    expires_ = observed_expiry_of_new(store_.server_clock(), event->arrived, parsed.lease->ttl) + grace_;
    leader_revision_ = entry.revision;
    bool changed = !leader_ || token != token_;
    if (leader_ && changed) reason_ = "expired";  // taken over before its expiry was seen here
    leader_ = parsed.lease;
    token_ = token;
    if (changed) return report(Leadership::Change::elected);
  }
  return std::nullopt;
}

}  // namespace swarm
