// A slot's holds as its session keeps them: taken and let go by `swarm
// hold`, named in the session's record so that every renewal of the session
// renews them and close or evict releases them (see HoldStore for the leases).
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
  for (const auto& p : patterns) require_hold_pattern(p);
  const SessionEntry entry = read_own(slot, session);
  HoldRequest request{slot, entry.token(), entry.session->leaf_pid, patterns, kind, reason};
  HoldResult result;
  result.session = entry.token();
  result.lease = holds_.take(request);
  const std::string& name = result.lease.name;
  try {
    same_session_cas(entry, "naming its hold", [&](SessionEntry& current) {
      require_session(current, result.session);
      Session& s = *current.session;
      s.session_token = current.token();
      if (std::find(s.holds.begin(), s.holds.end(), name) == s.holds.end()) s.holds.push_back(name);
      return store_.update(s, current.revision);
    });
  } catch (...) {
    // A hold no session names would live on unrenewed until its TTL: given back now.
    holds_.release(name, result.lease.token);
    throw;
  }
  return result;
}

HoldRelease SlotLifecycle::release_holds(const std::string& slot, const std::vector<std::string>& patterns,
                                         ExpectedSession session) {
  require_slot_name(slot);
  for (const auto& p : patterns) require_hold_pattern(p);
  const SessionEntry entry = read_own(slot, session);
  const Session& s = *entry.session;
  std::vector<LeaseEntry> mine;
  for (auto& e : translating_kv([&] { return holds_.read(s.holds).value; }))
    if (hold_of(e, slot)) mine.push_back(std::move(e));
  // Every pattern named is held, or nothing is let go.
  for (const auto& p : patterns) {
    const bool named = std::any_of(mine.begin(), mine.end(), [&](const LeaseEntry& e) {
      return std::find(e.record->patterns.begin(), e.record->patterns.end(), p) != e.record->patterns.end();
    });
    if (!named) {
      std::string held;
      for (const auto& e : mine)
        for (const auto& q : e.record->patterns) held += (held.empty() ? "" : ", ") + printable(q);
      throw Error(Errc::not_found, "slot " + slot + " holds no pattern '" + printable(p) + "' (" +
                                       (held.empty() ? std::string("it holds nothing") : "it holds " + held) +
                                       "); nothing was released");
    }
  }
  HoldRelease out;
  for (const auto& e : mine) {
    std::vector<std::string> left;
    for (const auto& q : e.record->patterns)
      if (!patterns.empty() && std::find(patterns.begin(), patterns.end(), q) == patterns.end()) left.push_back(q);
    if (left.size() == e.record->patterns.size()) continue;  // none of its patterns named
    if (!left.empty()) {
      translating_kv([&] { holds_.narrow(e, left); });
      out.narrowed.push_back(e.name);
      continue;
    }
    if (auto w = holds_.release(e.name, e.token()); !w.empty()) out.warnings.push_back(w);
    out.released.push_back(e.name);
  }
  // The record names what is left (a hold that is gone, too, is no longer named).
  same_session_cas(entry, "letting go of its holds", [&](SessionEntry& current) {
    Session& cur = *current.session;
    std::vector<std::string> kept;
    for (const auto& name : cur.holds) {
      const bool released = std::find(out.released.begin(), out.released.end(), name) != out.released.end();
      const bool exists = std::any_of(mine.begin(), mine.end(), [&](const LeaseEntry& e) { return e.name == name; });
      // A hold taken since the read (not in `mine`, listed now) stays named.
      const bool newer = std::find(s.holds.begin(), s.holds.end(), name) == s.holds.end();
      if (!released && (exists || newer)) kept.push_back(name);
    }
    if (kept == cur.holds) return current.revision;
    cur.session_token = current.token();
    cur.holds = std::move(kept);
    return store_.update(cur, current.revision);
  });
  return out;
}

}  // namespace swarm
