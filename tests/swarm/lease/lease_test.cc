// Leases against a real nats-server: CAS on revisions, fencing tokens,
// expiry without per-key TTL, task lease names and keys that are no lease.
#include "swarm/lease/lease.h"

#include <doctest/doctest.h>

#include <thread>

#include "support/expect.h"
#include "support/lease_fixture.h"
#include "swarm/base/error.h"

using namespace swarm;
using namespace std::chrono_literals;
using testing::kind_of;
using testing::lease_holder;
using Fixture = testing::LeaseFixture;

TEST_CASE("Lease_TokenIsTheGrantingRevisionAndOnlyItsHolderRenewsOrReleases") {
  // the token is the revision that granted the lease and survives renewals; a token that is no longer the lease's
  // is a conflict that changes nothing; a release lets the next grant count a transition.
  Fixture f;
  auto store = f.store();
  Lease a = store.acquire("task.T-42", lease_holder("a"), 10s);
  CHECK(a.token == a.revision);
  CHECK(store.get("task.T-42")->token() == a.token);
  Lease renewed = store.renew(a);
  CHECK(renewed.token == a.token);
  CHECK(renewed.revision > a.revision);
  CHECK(store.get("task.T-42")->token() == a.token);  // written into the record by the renewal
  CHECK(kind_of([&] { store.acquire("task.T-42", lease_holder("b"), 10s); }) == Errc::conflict);

  auto before = f.bucket.get("task.T-42")->revision;
  CHECK(kind_of([&] { store.renew("task.T-42", a.token + 1000); }) == Errc::conflict);
  CHECK(kind_of([&] { store.release("task.T-42", a.token + 1000); }) == Errc::conflict);
  CHECK(f.bucket.get("task.T-42")->revision == before);  // nothing changed
  CHECK(kind_of([&] { store.renew("no-such-lease", 1); }) == Errc::not_found);

  store.release("task.T-42", a.token);
  CHECK_FALSE(store.get("task.T-42"));
  Lease b = store.acquire("task.T-42", lease_holder("b"), 10s);
  CHECK(b.token > a.token);
  CHECK(b.record.transitions == 1);  // counted across the release
  CHECK(kind_of([&] { store.release(renewed); }) == Errc::conflict);  // an old grant cannot release the new one
  CHECK(store.get("task.T-42")->record->holder == "b");
}

TEST_CASE("Lease_ExpiredOnlyAfterItsTtlAndNeverRenewedAfter") {
  // a lease not renewed is taken only once its TTL (by the server's clock, plus the margin) has passed; its old
  // holder can then neither renew it by token nor act on it.
  Fixture f;
  auto store = f.store();
  Lease a = store.acquire("job", lease_holder("a"), 1s);
  CHECK(kind_of([&] { f.other_store().acquire("job", lease_holder("b"), 1s); }) == Errc::conflict);
  std::this_thread::sleep_for(600ms);
  CHECK(kind_of([&] { f.other_store().acquire("job", lease_holder("b"), 1s); }) == Errc::conflict);
  std::this_thread::sleep_for(700ms);  // 1.3 s: past the TTL and the margin
  CHECK(kind_of([&] { store.renew("job", a.token); }) == Errc::conflict);  // expired: not renewed by token
  Lease b = f.other_store().acquire("job", lease_holder("b"), 1s);
  CHECK(b.token > a.token);
  CHECK(b.record.transitions == 1);
  CHECK(kind_of([&] { store.renew(a); }) == Errc::conflict);  // the old grant is gone
}

TEST_CASE("Lease_TaskLeaseNamesAndKeysThatAreNoLease") {
  // a task id that is a lease name keeps it; any other gets a stable hash; queue and resign keys are no leases.
  CHECK(task_lease_name("T-42") == "task.T-42");
  CHECK(task_lease_name("a.b") == "task.a.b");
  auto hashed = task_lease_name("gh#17");
  CHECK(hashed.rfind("task.h", 0) == 0);
  CHECK(hashed.size() == 22);
  CHECK(task_lease_name("gh#17") == hashed);
  CHECK(task_lease_name("gh#18") != hashed);
  CHECK(task_lease_name("acme/api#9") != hashed);
  CHECK(is_lease_key("task.T-42"));
  CHECK_FALSE(is_lease_key(queue_prefix("x") + "abc"));
  CHECK_FALSE(is_lease_key(resign_key("x")));
}
