#include "swarm/lease/semaphore.h"

#include <cJSON.h>

#include <algorithm>
#include <map>
#include <set>

#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/lease/mutex.h"
#include "swarm/lease/watch_pump.h"

namespace swarm {

namespace {

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kPermitPart = ".permit.";
constexpr milliseconds kStopCheck{250};
constexpr int kLimitRaces = 20;

std::string limit_key(const std::string& name) { return "_limit." + name; }

std::string limit_value(int limit) { return "{\"limit\":" + std::to_string(limit) + "}"; }

// The limit a stored value names; nullopt when it names none (corrupt).
std::optional<int> limit_in(const std::string& value) {
  std::unique_ptr<cJSON, decltype(&cJSON_Delete)> doc(cJSON_ParseWithLength(value.data(), value.size()),
                                                      &cJSON_Delete);
  const cJSON* n = doc ? cJSON_GetObjectItemCaseSensitive(doc.get(), "limit") : nullptr;
  if (!cJSON_IsNumber(n) || n->valuedouble < 1 || n->valuedouble > kMaxPermits) return std::nullopt;
  return static_cast<int>(n->valuedouble);
}

}  // namespace

std::string permit_lease(const std::string& name, int k) { return name + kPermitPart + std::to_string(k); }
std::string gate_lease(const std::string& name) { return name + ".gate"; }

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
  Steady::time_point arrived;
  std::map<int, LeaseEntry> permits;  // by number, as listed
  std::set<int> busy;                 // held and not expired (or corrupt), at any number
  Steady::time_point next_expiry = Steady::time_point::max();
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
  auto listed = read_arriving([&] { return store_.list(name_ + kPermitPart + "*"); });
  seen.arrived = listed.at;
  const auto now = Steady::now();
  for (auto& e : listed.value) {
    auto k = permit_of(e.name);
    if (!k) continue;
    if (e.corrupt()) {
      seen.busy.insert(*k);  // until doctor --fix removes it
    } else if (!certainly_expired(clock, listed.at, e.stored_at, e.record->ttl, now)) {
      seen.busy.insert(*k);
      seen.next_expiry = std::min(seen.next_expiry, observed_expiry(clock, listed.at, e.stored_at, e.record->ttl));
    }
    seen.permits.emplace(*k, std::move(e));
  }
  return seen;
}

std::optional<Lease> Semaphore::grant_free(const Look& seen, const LeaseHolder& who, milliseconds ttl) const {
  // A cut limit grants nothing until the holders are under it.
  if (static_cast<int>(seen.busy.size()) >= seen.limit) return std::nullopt;
  for (int k = 0; k < seen.limit; ++k) {
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

Lease Semaphore::take_permit(const LeaseHolder& who, milliseconds ttl, Steady::time_point until,
                             const std::function<bool()>& stop) const {
  require_lease_ttl(ttl);
  // Woken by any write to a permit or to the limit; a held permit's expiry
  // is a timer. Each wake reads the permits again (one listing).
  WatchPump pump;
  pump.add(store_.keys().watch(name_ + kPermitPart + "*"), 1);
  pump.add(store_.keys().watch(limit_key(name_)), 2);
  while (true) {
    if (stop && stop()) throw Cancelled("stopped waiting for a permit of semaphore " + name_);
    const Look seen = look();
    if (seen.limit == 0) throw Error(Errc::not_found, "no semaphore " + name_ + " (its limit was removed)");
    if (auto granted = grant_free(seen, who, ttl)) return *granted;
    const auto now = Steady::now();
    if (now >= until) throw Error(Errc::conflict, "waited for a permit: " + busy_text(seen) + "; left the line");
    auto wake = std::min({until, seen.next_expiry, now + kStopCheck});
    // Drain what came meanwhile: one look covers every write before it.
    for (auto event = pump.next(wake); event; event = pump.next(Steady::now())) {
    }
  }
}

}  // namespace swarm
