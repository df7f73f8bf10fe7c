// A slot's holds as its session keeps them: taken and let go by `swarm
// hold`, named in the session's record so that every renewal of the session
// renews them and close or evict releases them (see HoldStore for the leases).
// The record names or stops naming a hold in a renewal of the session (one
// write renews the session, its task lease, its port block and its holds).
#include <algorithm>

#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/holds/patterns.h"
#include "swarm/slots/lifecycle.h"

namespace swarm {

HoldResult SlotLifecycle::hold(const std::string& slot, const std::vector<std::string>& patterns, HoldKind kind,
                               const std::string& reason, ExpectedSession session) {
  require_slot_name(slot);
  if (patterns.empty()) throw Error(Errc::bad_input, "no pattern to hold; name the paths, e.g. `swarm hold 'src/api/**'`");
  if (patterns.size() > kMaxPatternsPerHold)
    throw Error(Errc::bad_input, std::to_string(patterns.size()) + " patterns in one hold: at most " +
                                     std::to_string(kMaxPatternsPerHold) + "; name folders instead of files");
  for (const auto& p : patterns) require_hold_pattern(p);
  const SessionEntry entry = read_own(slot, session);
  if (names_of_slot(slot, entry.session->holds).size() >= kMaxHoldsPerSession)
    throw Error(Errc::conflict, "slot " + slot + " holds " + std::to_string(kMaxHoldsPerSession) +
                                    " holds already; let some go (`swarm hold --release`) before taking more");
  HoldRequest request{slot, entry.token(), entry.session->leaf_pid, patterns, kind, reason};
  HoldResult result;
  result.session = entry.token();
  result.lease = holds_.take(request);
  try {
    renew(entry, std::nullopt, &result.warnings, Presence{.add_holds = {result.lease.name}});
  } catch (...) {
    // A hold no session names would live on unrenewed until its TTL: given back now.
    holds_.release(result.lease.name, result.lease.token);
    throw;
  }
  return result;
}

HoldRelease SlotLifecycle::release_holds(const std::string& slot, const std::vector<std::string>& patterns,
                                         ExpectedSession session) {
  require_slot_name(slot);
  for (const auto& p : patterns) require_hold_pattern(p);
  const SessionEntry entry = read_own(slot, session);
  const auto read = translating_kv([&] { return holds_.read(names_of_slot(slot, entry.session->holds)); });
  std::vector<LeaseEntry> mine;
  for (const auto& e : read.value)
    if (hold_of(e, slot, entry.token())) mine.push_back(e);
  // Every pattern named is held, or nothing is let go.
  for (const auto& p : patterns) {
    const bool named = std::any_of(mine.begin(), mine.end(), [&](const LeaseEntry& e) {
      return std::find(e.record->patterns.begin(), e.record->patterns.end(), p) != e.record->patterns.end();
    });
    if (!named) {
      std::string held;
      for (const auto& e : mine) held += (held.empty() ? "" : ", ") + patterns_text(e.record->patterns);
      throw Error(Errc::not_found, "slot " + slot + " holds no pattern '" + printable(p) + "' (" +
                                       (held.empty() ? std::string("it holds nothing") : "it holds " + held) +
                                       "); nothing was released");
    }
  }
  HoldRelease out;
  Presence unnamed;
  for (const auto& e : mine) {
    std::vector<std::string> left;
    for (const auto& q : e.record->patterns)
      if (!patterns.empty() && std::find(patterns.begin(), patterns.end(), q) == patterns.end()) left.push_back(q);
    if (left.size() == e.record->patterns.size()) continue;  // none of its patterns named
    // Narrowed only while it is surely still live: one past its TTL may
    // overlap a hold granted since, and is let go instead.
    if (!left.empty() && holds_.renewable(e, read.at, slot, entry.token())) {
      const std::uint64_t narrowed = translating_kv([&] { return holds_.narrow(e, left); });
      if (auto w = holds_.confirm_renewal(e, read.at, narrowed); !w.empty()) {
        out.warnings.push_back(w);
        out.released.push_back(e.name);
        unnamed.drop_holds.push_back(e.name);
        continue;
      }
      out.narrowed.push_back(e.name);
      continue;
    }
    if (auto w = holds_.release(e.name, e.token()); !w.empty()) out.warnings.push_back(w);
    out.released.push_back(e.name);
    unnamed.drop_holds.push_back(e.name);
  }
  // The record stops naming them in a renewal of the session (which also
  // drops the names of holds that are gone).
  renew(entry, std::nullopt, &out.warnings, unnamed);
  return out;
}

}  // namespace swarm
