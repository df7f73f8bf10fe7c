// Holds as leases, against a real server where it matters: names, which
// holds stand in each other's way, which paths another slot holds, and a
// session's renewal that renews its holds and says which it lost.
#include "swarm/holds/hold_store.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include "kv/bucket.h"
#include "support/nats_server.h"
#include "swarm/slots/lifecycle.h"
#include "swarm/workspace/bootstrap.h"

using namespace swarm;
using namespace std::chrono_literals;

namespace {

LeaseEntry hold_entry(const std::string& slot, std::vector<std::string> patterns, const std::string& kind,
                      std::uint64_t revision) {
  LeaseEntry e;
  e.name = hold_lease_name(slot, 1);
  e.revision = revision;
  LeaseRecord r;
  r.name = e.name;
  r.holder = slot;
  r.host = "h";
  r.slot = slot;
  r.patterns = std::move(patterns);
  r.kind = kind;
  r.ttl = 10s;
  e.record = r;
  return e;
}

}  // namespace

TEST_CASE("HoldName_IsTheSlotAndANumber") {
  // hold.<slot>.<n>, read back to its slot; other names are no hold's.
  CHECK(hold_lease_name("render", 3) == "hold.render.3");
  CHECK(hold_slot_of("hold.render.3") == "render");
  CHECK(hold_slot_of("hold.a-b_c.12") == "a-b_c");
  CHECK_FALSE(hold_slot_of("task.render"));
  CHECK_FALSE(hold_slot_of("hold.render"));
  CHECK_FALSE(hold_slot_of("holds.render.1"));
}

TEST_CASE("HoldConflict_ByKindSlotAndOverlap") {
  // exclusive meets any overlapping hold of another slot; shared meets only exclusive; a slot never meets
  // itself; a corrupt record meets every exclusive hold.
  const auto theirs = hold_entry("a", {"src/api/**"}, "exclusive", 5);
  CHECK(hold_conflicts(theirs, "b", HoldKind::exclusive, {"src/**"}));
  CHECK(hold_conflicts(theirs, "b", HoldKind::shared, {"src/api/x.go"}));
  CHECK_FALSE(hold_conflicts(theirs, "b", HoldKind::exclusive, {"src/web/**"}));
  CHECK_FALSE(hold_conflicts(theirs, "a", HoldKind::exclusive, {"src/**"}));
  const auto shared = hold_entry("a", {"README.md"}, "shared", 6);
  CHECK_FALSE(hold_conflicts(shared, "b", HoldKind::shared, {"README.md"}));
  CHECK(hold_conflicts(shared, "b", HoldKind::exclusive, {"*.md"}));
  LeaseEntry corrupt;
  corrupt.name = "hold.x.1";
  corrupt.corrupt_reason = "not JSON";
  // A corrupt record stands in its own slot's way alone (its key names it), never in another's.
  CHECK(hold_conflicts(corrupt, "x", HoldKind::exclusive, {"anything"}));
  CHECK_FALSE(hold_conflicts(corrupt, "x", HoldKind::shared, {"anything"}));
  CHECK_FALSE(hold_conflicts(corrupt, "b", HoldKind::exclusive, {"anything"}));
}

TEST_CASE("HeldElsewhere_NamesEachPathsFirstExclusiveHolder") {
  // paths in their order, each with the first exclusive hold of another slot that matches it; shared holds and
  // the slot's own never count.
  const std::vector<LeaseEntry> live = {hold_entry("a", {"src/api/**"}, "exclusive", 5),
                                        hold_entry("b", {"docs"}, "shared", 6),
                                        hold_entry("me", {"lib/**"}, "exclusive", 7)};
  const auto held = held_elsewhere(live, "me", {"src/api/x.go", "docs/a.md", "lib/y.c", "src/api/v2/z.go"});
  REQUIRE(held.size() == 2);
  CHECK(held[0].path == "src/api/x.go");
  CHECK(held[0].slot == "a");
  CHECK(held[0].token == 5);
  CHECK(held[1].path == "src/api/v2/z.go");
  CHECK(held_paths_text(held) == "src/api/x.go (held by slot a on host h), src/api/v2/z.go (held by slot a on host h)");
}

TEST_CASE("SlotLifecycle_RenewalKeepsItsHoldsAndDropsOneLost") {
  // a renewal renews every hold its session names (tokens kept); a hold released behind its back is said lost
  // and no longer named by the record.
  testing::NatsServer server;
  testing::TempDir dir{"swarm-holds"};
  auto made = up({.root = dir.path(), .nats_url = server.url(), .connection = {}});
  auto connection = connect_nats({.urls = {server.url()}});
  SlotLifecycle life(made.workspace, made.config, SessionStore::open(connection, made.config.bucket),
                     LeaseStore::open(connection, made.config.names()),
                     {"host-a", "id-a"});
  life.join("s", "T-1", Takeover::only_stale, 1);
  const auto first = life.hold("s", {"src/**"}, HoldKind::exclusive, "");
  const auto second = life.hold("s", {"docs/**"}, HoldKind::shared, "notes");
  auto before = *life.leases().get(first.lease.name);
  std::vector<std::string> warnings;
  life.renew("s", &warnings);
  CHECK(warnings.empty());
  auto after = *life.leases().get(first.lease.name);
  CHECK(after.revision > before.revision);
  CHECK(after.token() == first.lease.token);
  life.leases().release(second.lease.name, second.lease.token);
  life.renew("s", &warnings);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("the hold " + second.lease.name + " of slot s was lost (released)") != std::string::npos);
  auto record = *SessionStore::open(connection, made.config.bucket).get("s");
  CHECK(record.session->holds == std::vector<std::string>{first.lease.name});
  warnings.clear();
  life.renew("s", &warnings);
  CHECK(warnings.empty());
}

TEST_CASE("HoldStore_ALateRenewalStandsOnlyIfNoConflictingHoldCameMeanwhile") {
  // a renewal that may have landed after its hold expired is ordered by its own revision, not by the hold's
  // token: a conflicting hold granted before the renewal wins, and the renewed hold is given up; a renewal
  // that cannot have been late stands, and costs no request.
  testing::NatsServer server;
  testing::TempDir dir{"swarm-holds"};
  auto made = up({.root = dir.path(), .nats_url = server.url(), .connection = {}});
  auto connection = connect_nats({.urls = {server.url()}});
  const LeaseStore leases = LeaseStore::open(connection, made.config.names());
  const HoldStore store(leases, {"host-a", "id-a"}, 10s);
  const Lease mine = store.take({"a", 1, ::getpid(), {"src/**"}, HoldKind::exclusive, ""});
  const LeaseEntry before = *leases.get(mine.name);
  auto renew = [&](const LeaseEntry& e) {
    Lease l;
    l.name = e.name;
    l.token = e.token();
    l.revision = e.revision;
    l.record = *e.record;
    return leases.renew(l).revision;
  };
  // On time: it stands.
  const std::uint64_t on_time = renew(before);
  CHECK(store.confirm_renewal(before, Steady::now(), on_time).empty());
  // Late: b's overlapping hold was granted (as if a's had expired), then a's renewal landed. Seen from a read
  // of a TTL ago, the renewal may have come after the expiry.
  kv::Bucket::open(connection, made.config.lease_bucket)
      .create("hold.b.1", R"({"name":"hold.b.1","holder":"b","host":"h","ttl_ms":10000,"slot":"b",)"
                          R"("patterns":["src/x/**"],"kind":"exclusive","session":1})");
  LeaseEntry read_long_ago = *leases.get(mine.name);
  const std::uint64_t late = renew(read_long_ago);
  read_long_ago.stored_at -= 10s;
  const std::string said = store.confirm_renewal(read_long_ago, Steady::now() - 10s, late);
  CHECK(said.find("expired before its renewal landed") != std::string::npos);
  CHECK(said.find("slot b") != std::string::npos);
  CHECK_FALSE(leases.get(mine.name));  // given up
  CHECK(leases.get("hold.b.1"));
}
