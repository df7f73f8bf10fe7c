#include "swarm/holds/hold_store.h"

#include <algorithm>
#include <charconv>

#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/text.h"
#include "swarm/holds/patterns.h"

namespace swarm {

namespace {

constexpr std::string_view kPrefix = "hold.";
// Holds of one slot taken at once each try the next number after a lost create.
constexpr int kMaxTakeAttempts = 8;
constexpr const char* kExclusive = "exclusive";
constexpr const char* kShared = "shared";

// The n of hold.<slot>.<n>; 0 for another name.
std::uint64_t number_of(std::string_view name, const std::string& slot) {
  const std::string head = std::string(kPrefix) + slot + ".";
  if (name.substr(0, head.size()) != head) return 0;
  const std::string_view digits = name.substr(head.size());
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  return ec == std::errc() && end == digits.data() + digits.size() ? n : 0;
}

}  // namespace

std::vector<std::string> names_of_slot(const std::string& slot, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names)
    if (number_of(n, slot) != 0 && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  return out;
}

std::string patterns_text(const std::vector<std::string>& patterns) {
  std::string out;
  for (const auto& p : patterns) out += (out.empty() ? "" : ", ") + printable(p);
  return out;
}

std::string_view to_string(HoldKind kind) { return kind == HoldKind::shared ? kShared : kExclusive; }

std::string hold_lease_name(const std::string& slot, std::uint64_t n) {
  return std::string(kPrefix) + slot + "." + std::to_string(n);
}

std::optional<std::string> hold_slot_of(std::string_view name) {
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  const auto dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  return std::string(name.substr(0, dot));
}

bool hold_of(const LeaseEntry& entry, const std::string& slot, std::uint64_t session) {
  return !entry.corrupt() && entry.record->slot == slot && hold_slot_of(entry.name) == slot &&
         (session == 0 || entry.record->session == session);
}

bool hold_conflicts(const LeaseEntry& entry, const std::string& slot, HoldKind kind,
                    const std::vector<std::string>& patterns) {
  // A record that cannot be read may hold anything of its own slot (its
  // key names it): it stands in that slot's way alone, never in another's,
  // until doctor --fix removes it (a planted one blocks nobody else).
  if (entry.corrupt()) return kind == HoldKind::exclusive && hold_slot_of(entry.name) == slot;
  if (entry.record->slot == slot) return false;  // a slot's holds never stand in each other's way
  const bool theirs_exclusive = entry.record->kind != kShared;
  if (kind == HoldKind::shared && !theirs_exclusive) return false;
  return any_overlap(entry.record->patterns, patterns);
}

std::string hold_text(const LeaseEntry& entry) {
  if (entry.corrupt()) return "a corrupt hold record " + printable(entry.name) + " (`swarm doctor --fix` removes it)";
  const LeaseRecord& r = *entry.record;
  return "slot " + printable(r.slot) + " (host " + printable(r.host) + ") holds " + patterns_text(r.patterns) + " " +
         (r.kind == kShared ? "shared" : "exclusively") + ", token " + std::to_string(entry.token()) +
         (r.reason.empty() ? "" : ", for: " + printable(r.reason));
}

std::vector<HeldPath> held_elsewhere(const std::vector<LeaseEntry>& live, const std::string& slot,
                                     const std::vector<std::string>& paths) {
  std::vector<HeldPath> out;
  for (const auto& path : paths)
    for (const auto& e : live) {
      if (e.corrupt() || e.record->slot == slot || e.record->kind == kShared) continue;
      const bool matched = std::any_of(e.record->patterns.begin(), e.record->patterns.end(),
                                       [&](const std::string& p) { return pattern_matches(p, path); });
      if (!matched) continue;
      out.push_back({path, e.name, e.record->slot, e.record->host, e.token()});
      break;
    }
  return out;
}

std::string held_paths_text(const std::vector<HeldPath>& held) {
  std::string out;
  for (std::size_t i = 0; i < held.size() && i < 5; ++i)
    out += (i == 0 ? "" : ", ") + printable(held[i].path) + " (held by slot " + printable(held[i].slot) + " on host " +
           printable(held[i].host) + ")";
  if (held.size() > 5) out += ", and " + std::to_string(held.size() - 5) + " more";
  return out;
}

LeaseHolder HoldStore::holder(const HoldRequest& request) const {
  LeaseHolder who = LeaseHolder::process(me_, request.pid, request.slot);
  who.slot = request.slot;
  who.patterns = request.patterns;
  who.kind = std::string(to_string(request.kind));
  who.reason = request.reason;
  who.session = request.session;
  return who;
}

std::vector<LeaseEntry> HoldStore::still_live(std::vector<LeaseEntry> listed, Steady::time_point arrived) const {
  std::vector<LeaseEntry> out;
  for (auto& e : listed) {
    if (!hold_slot_of(e.name)) continue;
    // A corrupt record holds what it may hold until doctor --fix removes it.
    if (e.record && certainly_expired(store_.server_clock(), arrived, e.stored_at, e.record->ttl, Steady::now()))
      continue;
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<LeaseEntry> HoldStore::live(Listing how) const {
  const std::string pattern = std::string(kPrefix) + ">";
  auto listed = read_arriving([&] {
    return how == Listing::exact ? store_.current_with_clock(pattern) : store_.list_with_clock(pattern);
  });
  auto out = still_live(std::move(listed.value), listed.at);
  std::sort(out.begin(), out.end(), [](const LeaseEntry& a, const LeaseEntry& b) { return a.name < b.name; });
  return out;
}

std::vector<LeaseEntry> HoldStore::live_exclusive_of_others(const std::string& slot, Listing how) const {
  const std::string pattern = std::string(kPrefix) + ">";
  auto listed =
      read_arriving([&] { return how == Listing::exact ? store_.current(pattern) : store_.list(pattern); });
  std::vector<LeaseEntry> others;
  for (auto& e : listed.value)
    if (!e.corrupt() && e.record->slot != slot && e.record->kind != kShared) others.push_back(std::move(e));
  if (others.empty()) return others;
  return still_live(std::move(others), listed.at);
}

Arrived<std::vector<LeaseEntry>> HoldStore::read(const std::vector<std::string>& names) const {
  return read_arriving([&] { return store_.get_together(names); });
}

std::optional<LeaseEntry> HoldStore::earlier_conflict(const std::string& slot, HoldKind kind,
                                                      const std::vector<std::string>& patterns,
                                                      std::uint64_t token) const {
  for (auto& e : live(Listing::exact))
    if (e.token() < token && hold_conflicts(e, slot, kind, patterns)) return std::move(e);
  return std::nullopt;
}

Lease HoldStore::take(const HoldRequest& request) const {
  const LeaseHolder who = holder(request);
  for (int attempt = 1; attempt <= kMaxTakeAttempts; ++attempt) {
    // A replay: a conflicting hold it misses (renewed as it ran) is found by
    // the exact listing after the grant, which then gives this one back.
    auto listed = read_arriving([&] { return store_.list_with_clock(std::string(kPrefix) + ">"); });
    std::uint64_t next = 1;
    for (const auto& e : listed.value) next = std::max(next, number_of(e.name, request.slot) + 1);
    std::vector<std::string> in_the_way;
    for (const auto& e : still_live(std::move(listed.value), listed.at))
      if (hold_conflicts(e, request.slot, request.kind, request.patterns)) in_the_way.push_back(hold_text(e));
    if (!in_the_way.empty()) {
      std::string named;
      for (std::size_t i = 0; i < in_the_way.size() && i < 5; ++i) named += (i == 0 ? "" : "; ") + in_the_way[i];
      if (in_the_way.size() > 5) named += "; and " + std::to_string(in_the_way.size() - 5) + " more";
      throw Error(Errc::conflict, "cannot hold " + patterns_text(request.patterns) + " for slot " + request.slot +
                                      ": " + named + "; nothing was held (`swarm holds` lists every hold)");
    }
    const std::string name = hold_lease_name(request.slot, next);
    Lease granted;
    try {
      granted = store_.grant(name, who, ttl_, LastWrite{});
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict) throw;
      continue;  // another hold of this slot took that number first
    }
    std::optional<LeaseEntry> earlier;
    try {
      earlier = earlier_conflict(request.slot, request.kind, request.patterns, granted.token);
    } catch (...) {
      release(name, granted.token);  // never left held unchecked
      throw;
    }
    if (!earlier) return granted;
    release(name, granted.token);
    throw Error(Errc::conflict, "cannot hold " + patterns_text(request.patterns) + " for slot " + request.slot +
                                    ": " + hold_text(*earlier) + " (granted just before); nothing was held");
  }
  throw Error(Errc::conflict, "could not number a new hold of slot " + request.slot + " after " +
                                  std::to_string(kMaxTakeAttempts) + " tries (other holds of the slot were being "
                                  "taken at once); try again");
}

bool HoldStore::renewable(const LeaseEntry& entry, Steady::time_point arrived, const std::string& slot,
                          std::uint64_t session) const {
  return hold_of(entry, slot, session) &&
         !certainly_expired(store_.server_clock(), arrived, entry.stored_at, entry.record->ttl, Steady::now());
}

kv::Bucket::Write HoldStore::renewal(const LeaseEntry& held, std::chrono::milliseconds ttl) const {
  return store_.renewal_of(held, ttl);
}

std::string HoldStore::confirm_renewal(const LeaseEntry& before, Steady::time_point arrived,
                                      std::uint64_t renewed) const {
  if (before.corrupt()) return {};
  try {
    // Younger than 2/3 of its TTL still now (by the read's arrival): the
    // renewal landed before it could have expired.
    const auto age_now = age_at_arrival(store_.server_clock(), arrived, before.stored_at) +
                         std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - arrived);
    if (age_now < before.record->ttl * 2 / 3) return {};
    auto after = store_.get(before.name);
    if (!after || after->revision != renewed || before.corrupt()) return {};
    // As a port block's (both times the server's): a renewal that landed
    // late may have landed on an expired hold, which a hold granted meanwhile
    // may overlap. It stands only as a new grant would.
    if (after->stored_at - before.stored_at < before.record->ttl * 2 / 3) return {};
    const HoldKind kind = before.record->kind == kShared ? HoldKind::shared : HoldKind::exclusive;
    // Ordered by the renewal's revision: a hold granted since it expired
    // is earlier than this renewal, though not than its original grant.
    auto earlier = earlier_conflict(before.record->slot, kind, before.record->patterns, renewed);
    if (!earlier) return {};
    release(after->name, after->token());
    return "the hold " + before.name + " (" + patterns_text(before.record->patterns) +
           ") expired before its renewal landed, and " + hold_text(*earlier) + " since: it was given up";
  } catch (const Error& e) {
    return "the hold " + before.name + " could not be checked after its renewal: " + e.what();
  }
}

std::uint64_t HoldStore::narrow(const LeaseEntry& held, const std::vector<std::string>& patterns) const {
  LeaseEntry current = held;
  for (int attempt = 1;; ++attempt) {
    Lease lease;
    lease.name = current.name;
    lease.token = current.token();
    lease.revision = current.revision;
    lease.record = *current.record;
    lease.record.patterns = patterns;
    try {
      return store_.renew(lease).revision;
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict || attempt == 3) throw;
    }
    // Renewed meanwhile (the session's keeper): the same grant is narrowed again.
    auto now = store_.get(held.name);
    if (!now || now->corrupt() || now->token() != held.token())
      throw Error(Errc::conflict, "the hold " + held.name + " changed hands while it was narrowed; nothing of it changed");
    current = std::move(*now);
  }
}

std::string HoldStore::release(const std::string& name, std::uint64_t token) const {
  for (int attempt = 1;; ++attempt) {
    try {
      store_.release(name, token);
      return {};
    } catch (const Error& e) {
      if (e.kind() == Errc::not_found) return {};
      if (e.kind() == Errc::conflict) {
        // A renewal of the same grant moved it between the read and the
        // delete: read again; another grant's (or none) is not ours to release.
        std::optional<LeaseEntry> now;
        try {
          now = store_.get(name);
        } catch (const Error&) {
        }
        if (!now || now->token() != token) return {};
      }
      if (attempt == 3) {
        log::debug("hold {}: not released ({}); it expires by itself", name, e.what());
        return "the hold " + name + " was not released (it expires by itself): " + e.what();
      }
    }
  }
}

std::vector<std::string> HoldStore::release_all(const std::string& slot, std::uint64_t session,
                                                const std::vector<std::string>& names) const {
  std::vector<std::string> warnings;
  const auto mine = names_of_slot(slot, names);
  if (mine.empty()) return warnings;
  try {
    for (const auto& e : read(mine).value)
      if (hold_of(e, slot, session))
        if (auto w = release(e.name, e.token()); !w.empty()) warnings.push_back(w);
  } catch (const Error& e) {
    warnings.push_back("the holds of slot " + slot + " were not released (they expire by themselves): " + e.what());
  }
  return warnings;
}

}  // namespace swarm
