// Holds: a slot's announcement that it edits the paths matching some
// patterns (swarm hold). Each hold is a lease, hold.<slot>.<n>, in the lease
// bucket, with its patterns, kind and reason in the record and its own
// fencing token; it lives with the slot's session (renewed and released with
// it, see SlotLifecycle). Holds of different slots have different names, so
// two may be granted at once: each looks again after its grant, and of two
// that conflict the later grant (the higher token) gives its hold back
// (adr/0042), as port blocks do.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "swarm/base/host.h"
#include "swarm/lease/lease.h"

namespace swarm {

enum class HoldKind { exclusive, shared };
std::string_view to_string(HoldKind kind);

// What `swarm hold` asks for: the slot's session (its token and the process
// the session is tied to), the patterns, the kind and why.
struct HoldRequest {
  std::string slot;
  std::uint64_t session = 0;
  std::int64_t pid = 0;
  std::vector<std::string> patterns;
  HoldKind kind = HoldKind::exclusive;
  std::string reason;
};

// "hold.<slot>.<n>"; the slot a hold's name names (nullopt: not a hold's).
std::string hold_lease_name(const std::string& slot, std::uint64_t n);
std::optional<std::string> hold_slot_of(std::string_view lease_name);

// Those of `names` (a session record's, as read: anything may be planted
// there) that name holds of `slot`, each once, in their order.
std::vector<std::string> names_of_slot(const std::string& slot, const std::vector<std::string>& names);
// Whether `entry` is a hold of `slot` (its record names the slot), and of its
// session `session` when that is not 0.
bool hold_of(const LeaseEntry& entry, const std::string& slot, std::uint64_t session = 0);
// Whether the hold `entry` (of another slot) stands in the way of a hold of
// `slot` of `kind` on `patterns`: both held by different slots, one of them
// exclusive, and a path both may match. A corrupt record (nobody can say
// what it holds) stands in the way of every exclusive hold.
bool hold_conflicts(const LeaseEntry& entry, const std::string& slot, HoldKind kind,
                    const std::vector<std::string>& patterns);
// Patterns as people read them: escaped, ", " between them.
std::string patterns_text(const std::vector<std::string>& patterns);
// One line naming a hold for people: "slot S (host H) holds P, Q exclusively, token T".
std::string hold_text(const LeaseEntry& entry);

// A path that another live slot's exclusive hold covers (commit, land).
struct HeldPath {
  std::string path;
  std::string hold;  // the lease name
  std::string slot;
  std::string host;
  std::uint64_t token = 0;
};
// Each of `paths` that a live exclusive hold of a slot other than `slot`
// matches (the first such hold for each), in the order of `paths`.
std::vector<HeldPath> held_elsewhere(const std::vector<LeaseEntry>& live, const std::string& slot,
                                     const std::vector<std::string>& paths);
// "a.go (held by slot S on host H), b.go (...)", at most five then how many more.
std::string held_paths_text(const std::vector<HeldPath>& held);

class HoldStore : public SlotLeases<HoldStore> {
 public:
  using SlotLeases::SlotLeases;

  // How holds are listed: a replay, which may miss a hold renewed as it
  // runs (for what is shown, and commit's warning, which land repeats), or
  // by name, which misses none (what decides a grant or a land: adr/0044).
  enum class Listing { replay, exact };
  // Every hold someone may still hold (not certainly expired), corrupt ones
  // included, in name order: one listing of hold.>.
  std::vector<LeaseEntry> live(Listing how = Listing::replay) const;
  // The live exclusive holds of slots other than `slot` (what commit and
  // land compare paths with): the server's clock is read only when the
  // listing has some, so a workspace without holds pays one listing.
  std::vector<LeaseEntry> live_exclusive_of_others(const std::string& slot, Listing how) const;
  // The holds of `names` as they are now, read in one round trip, with when
  // the answer arrived.
  Arrived<std::vector<LeaseEntry>> read(const std::vector<std::string>& names) const;

  // Takes a hold for `request`: refused (conflict, naming each hold in the
  // way: slot, host, patterns) before anything is written when a live hold
  // of another slot conflicts; after its grant, looks again, and gives it
  // back (conflict, naming the earlier one) when a conflicting hold was
  // granted before it. Patterns are checked by the caller (require_hold_pattern).
  Lease take(const HoldRequest& request) const;

  // Whether the slot's session may renew `entry` (read at `arrived`): its
  // own, of that session, and not past its TTL (one past it may overlap a
  // hold granted since: it is lost instead).
  bool renewable(const LeaseEntry& entry, Steady::time_point arrived, const std::string& slot,
                 std::uint64_t session) const;
  // The write that renews it, sent with the session's, with the TTL of now.
  kv::Bucket::Write renewal(const LeaseEntry& held, std::chrono::milliseconds ttl) const;
  // After a renewal of `before` (read at `arrived`) that landed as revision
  // `renewed`: when it may have landed so late that the hold had expired
  // first, it stands only as a new grant would, if no conflicting hold was
  // granted before that revision; else it is given up. What to say ("" when
  // all is well). One that cannot have been late costs no request.
  std::string confirm_renewal(const LeaseEntry& before, Steady::time_point arrived, std::uint64_t renewed) const;
  // The same hold, narrowed to `patterns` (a release of some of them), its
  // token kept, by CAS; a renewal that moved it meanwhile is read again (the
  // same token: narrowed again, at most three times). Returns the new
  // revision; conflict when it changed hands.
  std::uint64_t narrow(const LeaseEntry& held, const std::vector<std::string>& patterns) const;
  // Releases `name` while it is still the hold `token` granted (a renewal
  // meanwhile is read again, at most three times; one that changed hands is
  // left alone); "" or what to say.
  std::string release(const std::string& name, std::uint64_t token) const;
  // Releases those of `names` that `slot`'s session `session` holds;
  // warnings for those that failed.
  std::vector<std::string> release_all(const std::string& slot, std::uint64_t session,
                                       const std::vector<std::string>& names) const;


 private:
  LeaseHolder holder(const HoldRequest& request) const;
  // The live holds of `listed` (answered at `arrived`).
  std::vector<LeaseEntry> still_live(std::vector<LeaseEntry> listed, Steady::time_point arrived) const;
  // The live hold of another slot that conflicts with `mine` (granted as
  // `token`) and was granted before it; nullopt when there is none.
  std::optional<LeaseEntry> earlier_conflict(const std::string& slot, HoldKind kind,
                                             const std::vector<std::string>& patterns, std::uint64_t token) const;
};

}  // namespace swarm
