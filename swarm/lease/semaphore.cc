#include "swarm/lease/semaphore.h"

#include <cJSON.h>

#include <algorithm>
#include <map>
#include <set>

#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/lease/lease_record.h"
#include "swarm/lease/mutex.h"
#include "swarm/lease/rules.h"
#include "swarm/lease/watch_pump.h"

namespace swarm {

namespace {

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kPermitPart = ".permit.";
constexpr std::string_view kGatePart = ".gate";
constexpr std::string_view kLimitPrefix = "_limit.";
constexpr milliseconds kStopCheck{250};
constexpr int kLimitRaces = 20;

std::string limit_key(const std::string& name) { return std::string(kLimitPrefix) + name; }

std::string limit_value(int limit) { return "{\"limit\":" + std::to_string(limit) + "}"; }

}  // namespace

std::optional<int> limit_in(const std::string& value) {
  std::unique_ptr<cJSON, decltype(&cJSON_Delete)> doc(cJSON_ParseWithLength(value.data(), value.size()),
                                                      &cJSON_Delete);
  const cJSON* n = doc ? cJSON_GetObjectItemCaseSensitive(doc.get(), "limit") : nullptr;
  if (!cJSON_IsNumber(n) || n->valuedouble < 1 || n->valuedouble > kMaxPermits) return std::nullopt;
  return static_cast<int>(n->valuedouble);
}

namespace {

// The permit numbers a grant may use under `limit`: those below it less the
// live permits numbered at or above it (holders from before a cut, which
// only ever go). A view that is stale holds more of those than there are
// now, so it only errs the safe way: grantors with different views still
// take distinct keys below the bound, and never more than the limit in all.
int usable_below(int limit, const std::set<int>& busy) {
  int high = 0;
  for (int k : busy)
    if (k >= limit) ++high;
  return limit - high;
}

}  // namespace

std::string permit_lease(const std::string& name, int k) { return name + kPermitPart + std::to_string(k); }
std::string gate_lease(const std::string& name) { return name + std::string(kGatePart); }

std::optional<int> permit_of(const std::string& lease, std::string* semaphore) {
  const auto at = lease.rfind(kPermitPart);
  if (at == std::string::npos || at == 0) return std::nullopt;
  const std::string digits = lease.substr(at + std::string_view(kPermitPart).size());
  if (digits.empty() || digits.size() > 4 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return std::nullopt;
  const int k = std::stoi(digits);
  if (k >= kMaxPermits) return std::nullopt;
  if (semaphore) *semaphore = lease.substr(0, at);
  return k;
}

void require_limit(int limit) {
  if (limit < 1 || limit > kMaxPermits)
    throw Error(Errc::bad_input, "bad limit " + std::to_string(limit) + ": a semaphore admits 1 to " +
                                     std::to_string(kMaxPermits) + " holders");
}

struct Semaphore::Look {
  int limit = 0;
  std::map<int, LeaseEntry> permits;  // by number, as listed
  std::set<int> busy;                 // held and not expired (or corrupt), at any number
};

Semaphore::Semaphore(LeaseStore store, std::string name) : store_(std::move(store)), name_(std::move(name)) {
  require_lease_name(name_);
  require_lease_name(permit_lease(name_, kMaxPermits - 1));
  require_lease_name(gate_lease(name_));
}

std::optional<int> Semaphore::limit() const {
  auto entry = store_.keys().get(limit_key(name_));
  if (!entry) return std::nullopt;
  auto limit = limit_in(entry->value);
  if (!limit)
    throw Error(Errc::corrupt, "the limit of semaphore " + name_ + " (key " + limit_key(name_) + ") is corrupt: " +
                                   printable(entry->value.substr(0, 80)));
  return limit;
}

void Semaphore::require(int limit) const {
  require_limit(limit);
  for (int race = 0; race < kLimitRaces; ++race) {
    if (auto stored = this->limit()) {
      if (*stored == limit) return;
      throw Error(Errc::bad_input, "semaphore " + name_ + " has limit " + std::to_string(*stored) + ", not " +
                                       std::to_string(limit) + ": the limit is the semaphore's (pass --limit " +
                                       std::to_string(*stored) + ", or change it with swarm lease limit " + name_ +
                                       " N)");
    }
    try {
      store_.keys().create(limit_key(name_), limit_value(limit));
      return;
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict) throw;  // made meanwhile: read it again
    }
  }
  throw Error(Errc::conflict, "the limit of semaphore " + name_ + " kept changing; try again");
}

int Semaphore::change(int limit) const {
  require_limit(limit);
  for (int race = 0; race < kLimitRaces; ++race) {
    auto entry = store_.keys().get(limit_key(name_));
    if (!entry)
      throw Error(Errc::not_found, "no semaphore " + name_ + ": it gets its limit from the first lock " + name_ +
                                       " --limit N");
    const int before = limit_in(entry->value).value_or(0);
    try {
      store_.keys().update(limit_key(name_), limit_value(limit), entry->revision);
      return before;
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict) throw;
    }
  }
  throw Error(Errc::conflict, "the limit of semaphore " + name_ + " kept changing; try again");
}

Semaphore::Look Semaphore::look() const {
  Look seen;
  seen.limit = limit().value_or(0);
  const ServerClock& clock = store_.server_clock();
  auto listed = read_arriving([&] { return store_.current(name_ + kPermitPart + "*"); });
  const auto now = Steady::now();
  for (auto& e : listed.value) {
    auto k = permit_of(e.name);
    if (!k) continue;
    if (e.corrupt()) {
      seen.busy.insert(*k);  // until doctor --fix removes it
    } else if (!certainly_expired(clock, listed.at, e.stored_at, e.record->ttl, now)) {
      seen.busy.insert(*k);
    }
    seen.permits.emplace(*k, std::move(e));
  }
  return seen;
}

std::optional<Lease> Semaphore::grant_free(const Look& seen, const LeaseHolder& who, milliseconds ttl) const {
  // A cut limit grants nothing until the holders are under it.
  if (static_cast<int>(seen.busy.size()) >= seen.limit) return std::nullopt;
  for (int k = 0; k < usable_below(seen.limit, seen.busy); ++k) {
    if (seen.busy.count(k) != 0) continue;
    LastWrite over;
    if (auto it = seen.permits.find(k); it != seen.permits.end()) {
      // Expired as listed: taken over the revision the listing saw, never a later one.
      const LeaseEntry& e = it->second;
      over = {e.revision, false, e.stored_at, e.record, e.corrupt_reason};
    } else {
      over = store_.last(permit_lease(name_, k));
      if (over.revision != 0 && !over.released) continue;  // written since the listing
    }
    try {
      return store_.grant(permit_lease(name_, k), who, ttl, over);
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict) throw;
      return std::nullopt;  // another took it: look again
    }
  }
  return std::nullopt;
}

std::string Semaphore::busy_text(const Look& seen) const {
  std::string holders;
  for (int k : seen.busy) {
    auto it = seen.permits.find(k);
    const std::string who = it != seen.permits.end() && it->second.record ? printable(it->second.record->holder) : "?";
    holders += (holders.empty() ? "" : ", ") + std::to_string(k) + ": " + who;
  }
  return "semaphore " + name_ + " has limit " + std::to_string(seen.limit) + " and " +
         std::to_string(seen.busy.size()) + " permit(s) held (" + holders + ")";
}

Lease Semaphore::try_permit(const LeaseHolder& who, milliseconds ttl) const {
  require_lease_ttl(ttl);
  const Look seen = look();
  if (seen.limit == 0) throw Error(Errc::not_found, "no semaphore " + name_);
  if (auto granted = grant_free(seen, who, ttl)) return *granted;
  throw Error(Errc::conflict, busy_text(seen) + "; no permit is free");
}

namespace {

// A permit as the waiter at the gate knows it from its watch.
struct PermitView {
  LastWrite last;  // what to grant over
  bool held = false;
  Steady::time_point expires = Steady::time_point::max();  // while held
};

// The permits and the limit as the gate's watches tell them: no listing
// per wake, and a grant over the revision the watch delivered.
class GateView {
 public:
  GateView(const ServerClock& clock, int limit) : clock_(clock), limit_(limit) {}

  bool ready() const { return permits_live_; }
  int limit() const { return limit_; }

  void apply(const WatchPump::Event& event, int permits_source) {
    const kv::WatchEvent& e = event.event;
    if (event.source != permits_source) {  // the limit
      if (e.kind == kv::WatchEvent::Kind::put) limit_ = limit_in(e.entry.value).value_or(limit_);
      // A limit the bucket's age removed (a day unchanged) is no removal by
      // a user: the server's marker of it leaves the limit as it was.
      if (e.kind == kv::WatchEvent::Kind::erase && !e.expired) limit_ = 0;
      return;
    }
    if (e.kind == kv::WatchEvent::Kind::caught_up) {
      permits_live_ = true;
      return;
    }
    auto k = permit_of(e.entry.key);
    if (!k) return;
    PermitView& p = permits_[*k];
    if (e.entry.revision <= p.last.revision) return;  // the replay repeats what is known
    auto parsed = parse_lease(e.entry.value);
    const bool erased = e.kind == kv::WatchEvent::Kind::erase;
    p.last = {e.entry.revision, erased, e.entry.created, parsed.lease, parsed.corrupt_reason};
    p.held = !erased;
    p.expires = Steady::time_point::max();  // a corrupt record waits for doctor
    if (p.held && parsed.lease)
      p.expires = permits_live_ ? observed_expiry_of_new(clock_, event.arrived, parsed.lease->ttl)
                                : observed_expiry(clock_, event.arrived, e.entry.created, parsed.lease->ttl);
  }

  // Permits held now (at any number: a cut limit counts them all), and the first expiry to come.
  std::set<int> busy(Steady::time_point now, Steady::time_point* next) const {
    std::set<int> out;
    for (const auto& [k, p] : permits_)
      if (p.held && now < p.expires) {
        out.insert(k);
        *next = std::min(*next, p.expires);
      }
    return out;
  }
  // A permit numbered below `top` free at `now` (its number), and what to grant over.
  std::optional<int> free(Steady::time_point now, int top, LastWrite* over) const {
    for (int k = 0; k < top; ++k) {
      auto it = permits_.find(k);
      if (it == permits_.end()) {
        *over = {};
        return k;
      }
      if (it->second.held && now < it->second.expires) continue;
      *over = it->second.last;
      return k;
    }
    return std::nullopt;
  }
  // A grant of `k` lost its race: held until the watch says otherwise.
  void lost(int k) {
    permits_[k].held = true;
    permits_[k].expires = Steady::time_point::max();
  }

 private:
  const ServerClock& clock_;
  int limit_;
  bool permits_live_ = false;
  std::map<int, PermitView> permits_;
};

}  // namespace

Lease Semaphore::take_permit(const LeaseHolder& who, milliseconds ttl, Steady::time_point until,
                             const std::function<bool()>& stop) const {
  require_lease_ttl(ttl);
  // First without watching: a permit free now costs no watch at all.
  const Look seen = look();
  if (seen.limit == 0) throw Error(Errc::not_found, "no semaphore " + name_);
  if (auto granted = grant_free(seen, who, ttl)) return *granted;
  // Then the permits and the limit as their watches tell them: each write
  // wakes the waiter, a held permit's expiry is a timer.
  constexpr int kPermits = 1, kLimit = 2;
  WatchPump pump;
  pump.add(store_.keys().watch(name_ + kPermitPart + "*"), kPermits);
  pump.add(store_.keys().watch(limit_key(name_)), kLimit);
  GateView view(store_.server_clock(), seen.limit);
  while (true) {
    if (stop && stop()) throw Cancelled("stopped waiting for a permit of semaphore " + name_);
    if (view.limit() == 0) throw Error(Errc::not_found, "no semaphore " + name_ + " (its limit was removed)");
    const auto now = Steady::now();
    auto wake = std::min(until, now + kStopCheck);
    const std::set<int> busy = view.busy(now, &wake);
    if (view.ready() && static_cast<int>(busy.size()) < view.limit()) {
      // The limit read again right before the grant: the watch of a cut
      // may come after a release it made possible (two watches, no order).
      const int limit = this->limit().value_or(0);
      if (limit == 0) throw Error(Errc::not_found, "no semaphore " + name_ + " (its limit was removed)");
      LastWrite over;
      auto k = static_cast<int>(busy.size()) < limit ? view.free(now, usable_below(limit, busy), &over) : std::nullopt;
      if (k) {
        try {
          return store_.grant(permit_lease(name_, *k), who, ttl, over);
        } catch (const Error& e) {
          if (e.kind() != Errc::conflict) throw;
          view.lost(*k);  // taken meanwhile: its watch tells what it is now
          continue;
        }
      }
    }
    if (now >= until) throw Error(Errc::conflict, "waited for a permit: " + busy_text(look()) + "; left the line");
    if (auto event = pump.next(wake)) view.apply(*event, kPermits);
  }
}

std::optional<std::string> limit_key_of(std::string_view key) {
  if (key.substr(0, kLimitPrefix.size()) != kLimitPrefix || key.size() == kLimitPrefix.size()) return std::nullopt;
  return std::string(key.substr(kLimitPrefix.size()));
}

std::map<std::string, int> semaphore_limits(const LeaseStore& store) {
  std::map<std::string, int> out;
  for (const auto& entry : store.keys().list(std::string(kLimitPrefix) + ">"))
    if (auto name = limit_key_of(entry.key))
      if (auto limit = limit_in(entry.value)) out[*name] = *limit;
  return out;
}

std::vector<SemaphoreSummary> summarize_semaphores(const std::map<std::string, int>& limits,
                                                   const std::vector<LeaseEntry>& leases,
                                                   const std::map<std::string, int>& waiting, TimePoint now) {
  std::map<std::string, SemaphoreSummary> by_name;
  for (const auto& [name, limit] : limits) by_name[name] = {name, limit, 0, 0};
  for (const auto& entry : leases) {
    const bool held = standing_of(entry, now).state == LeaseState::held;
    std::string semaphore;
    if (permit_of(entry.name, &semaphore)) {
      if (auto it = by_name.find(semaphore); it != by_name.end() && held) ++it->second.held;
      continue;
    }
    // The one at the gate waits too (for a permit).
    const std::string_view name = entry.name;
    if (name.size() > kGatePart.size() && name.substr(name.size() - kGatePart.size()) == kGatePart)
      if (auto it = by_name.find(std::string(name.substr(0, name.size() - kGatePart.size())));
          it != by_name.end() && held)
        ++it->second.waiters;
  }
  for (auto& [name, summary] : by_name)
    if (auto w = waiting.find(gate_lease(name)); w != waiting.end()) summary.waiters += w->second;
  std::vector<SemaphoreSummary> out;
  for (auto& [name, summary] : by_name) out.push_back(std::move(summary));
  return out;
}

}  // namespace swarm
