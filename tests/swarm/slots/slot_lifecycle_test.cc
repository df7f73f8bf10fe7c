// SlotLifecycle against a real server and a real hub: the CAS rules and the undo paths.
#include "swarm/slots/lifecycle.h"

#include <doctest/doctest.h>

#include <functional>
#include <thread>
#include <utility>

#include "support/expect.h"
#include "support/nats_server.h"
#include "swarm/base/error.h"
#include "swarm/git/hub.h"
#include "swarm/workspace/bootstrap.h"

using namespace swarm;
using namespace std::chrono_literals;
using testing::kind_of;

namespace {

struct Fixture {
  testing::NatsServer server;
  testing::TempDir dir{"swarm-lifecycle"};
  UpResult up_result = up({.root = dir.path(), .nats_url = server.url(), .connection = {}});
  kv::Connection connection = connect_nats({.urls = {server.url()}});
  TimePoint now = std::chrono::system_clock::now();

  SlotLifecycle lifecycle(HostIdentity me = {"host-a", "id-a"}) {
    return SlotLifecycle(up_result.workspace, up_result.config, SessionStore::open(connection, up_result.config.bucket),
                         LeaseStore::open(connection, up_result.config.names()), me,
                         [this] { return now; });
  }
  const SessionStore store() { return SessionStore::open(connection, up_result.config.bucket); }
};

}  // namespace

TEST_CASE("SlotLifecycle_RenewRetriesOnlyForTheSameSession") {
  // a renewal that lost a race to the same session retries and keeps its fields; to another session it stops.
  Fixture f;
  auto life = f.lifecycle();
  life.join("s", "T-1", Takeover::only_stale, 1);
  auto read = *f.store().get("s");

  // The same session moved on (say, another process of it renewed and added a field).
  Session same = *read.session;
  same.unknown_fields.push_back({"remark", "\"from a newer client\""});
  f.store().update(same, read.revision);
  auto rev = life.renew(read);
  auto after = *f.store().get("s");
  CHECK(after.revision == rev);
  CHECK(f.store().bucket().get("s")->value.find("from a newer client") != std::string::npos);

  // Another session took the slot: the stale read must not renew it.
  Session other = *after.session;
  other.started_at = *other.started_at + 1s;
  other.task_id = "T-other";
  auto other_rev = f.store().update(other, after.revision);
  CHECK(kind_of([&] { life.renew(after); }) == Errc::conflict);
  auto untouched = *f.store().get("s");
  CHECK(untouched.revision == other_rev);
  CHECK(untouched.session->task_id == "T-other");
}

TEST_CASE("SlotLifecycle_CommitWhoseRenewalFailsStillStands") {
  // the slot changes hands while a commit renews: the renewal stops (same-session rule) as a warning; the
  // commit and its push stand, and the new session's record is left alone.
  Fixture f;
  std::function<void()> as_renewal_starts;
  SlotLifecycle life(f.up_result.workspace, f.up_result.config, SessionStore::open(f.connection, f.up_result.config.bucket),
                     LeaseStore::open(f.connection, f.up_result.config.names()), {"host-a", "id-a"},
                     [&] {
                       if (auto hook = std::exchange(as_renewal_starts, nullptr)) hook();
                       return f.now;
                     });
  life.join("s", "T-1", Takeover::only_stale, 1);
  testing::write_file(f.up_result.workspace.worktree("s") / "f.txt", "work\n");
  as_renewal_starts = [&] {  // another session of this host takes the slot (a --force join elsewhere)
    auto read = *f.store().get("s");
    Session other = *read.session;
    other.started_at = *other.started_at + 1s;
    other.task_id = "T-other";
    f.store().update(other, read.revision);
  };
  auto r = life.commit("s", "work", {});
  REQUIRE(r.commit);
  CHECK(r.pushed);
  CHECK(r.revision == 0);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find("renewal failed") != std::string::npos);
  CHECK(r.warnings[0].find("changed hands") != std::string::npos);
  CHECK(f.store().get("s")->session->task_id == "T-other");
  CHECK(Hub::open(f.up_result.config.hub).branch_tip("swarm/s") == *r.commit);
}

TEST_CASE("SlotLifecycle_JoinUndoesTheRecordWhenTheWorktreeFails") {
  // if the worktree cannot be made, the record it just wrote is removed again.
  Fixture f;
  auto life = f.lifecycle();
  std::filesystem::create_directories(f.up_result.workspace.slots_dir());
  testing::write_file(f.up_result.workspace.slot_dir("s"), "a file where the slot folder should be");
  CHECK_THROWS(life.join("s", "T-1", Takeover::only_stale, 1));
  CHECK_FALSE(f.store().get("s"));
}

TEST_CASE("SlotLifecycle_JoinFailingAfterTheCloneRemovesTheNewWorktreeOnly") {
  // when a step after the clone fails, the record and the worktree it just made go; nothing else is touched.
  Fixture f;
  auto life = f.lifecycle();
  const auto& ws = f.up_result.workspace;
  std::filesystem::create_directories(ws.session_base("s") / "in-the-way");  // session-base cannot be written
  CHECK_THROWS(life.join("s", "T-1", Takeover::only_stale, 1));
  CHECK_FALSE(f.store().get("s"));
  CHECK_FALSE(std::filesystem::exists(ws.worktree("s")));
  CHECK_FALSE(std::filesystem::exists(ws.pid_file("s")));
  CHECK(std::filesystem::exists(ws.session_base("s") / "in-the-way"));
}

TEST_CASE("SlotLifecycle_AgesAreOnTheServersClockNotThisHosts") {
  // a host whose clock runs minutes ahead (or behind) of the server still sees its fresh session as fresh.
  Fixture f;
  f.now += 4min;  // TTL is 5m: by this host's clock the record would be past 2/3 of it
  auto life = f.lifecycle();
  life.join("s", "T-1", Takeover::only_stale, 1);
  CHECK(kind_of([&] { life.join("s", "T-2", Takeover::only_stale, 2); }) == Errc::conflict);
  f.now -= 10min;
  CHECK(kind_of([&] { life.join("s", "T-2", Takeover::only_stale, 2); }) == Errc::conflict);
  CHECK(f.store().get("s")->session->task_id == "T-1");
  // Another host never replaces it, whatever its clock says.
  auto other = f.lifecycle({"host-b", "id-b"});
  f.now += 60min;
  CHECK(kind_of([&] { other.join("s", "T-3", Takeover::force, 3); }) == Errc::foreign_host);
}

TEST_CASE("SlotLifecycle_StaleSessionOfThisHostIsReplaced") {
  // in a 4.5s-TTL workspace a session of this host older than 3s (by the server's clock) is replaced without --force.
  testing::NatsServer server;
  testing::TempDir dir{"swarm-lifecycle"};
  auto up_result = up({.root = dir.path(), .nats_url = server.url(), .ttl = 4500ms, .connection = {}});
  auto connection = connect_nats({.urls = {server.url()}});
  SlotLifecycle life(up_result.workspace, up_result.config, SessionStore::open(connection, up_result.config.bucket),
                     LeaseStore::open(connection, up_result.config.names()), {"host-a", "id-a"});
  life.join("s", "T-1", Takeover::only_stale, 1);
  CHECK(kind_of([&] { life.join("s", "T-2", Takeover::only_stale, 2); }) == Errc::conflict);
  std::this_thread::sleep_for(3100ms);  // stale from 3s; the server drops it at 4.5s
  auto r = life.join("s", "T-2", Takeover::only_stale, 2);
  CHECK(r.replaced);
  CHECK(SessionStore::open(connection, up_result.config.bucket).get("s")->session->task_id == "T-2");
}

TEST_CASE("HostIdentity_OwnsByHostAndMachineId") {
  // host_id must match when the record has one; a record without it matches by hostname.
  HostIdentity me{"box", "m1"};
  Session s;
  s.host = "box";
  s.host_id = "m1";
  CHECK(me.owns(s));
  s.host_id = "m2";
  CHECK_FALSE(me.owns(s));
  s.host_id = "";
  CHECK(me.owns(s));
  s.host = "other";
  CHECK_FALSE(me.owns(s));
}

TEST_CASE("SlotLifecycle_CommitsCarryTheirProvenance") {
  // trailers start a block of their own, or join the message's own trailer block.
  Session s;
  s.slot = "render";
  s.task_id = "acme/api#9";
  const std::string trailers = "Swarm-Slot: render\nSwarm-Task: acme/api#9\nSwarm-Session: 42\n";
  CHECK(with_provenance("fix it", s, 42) == "fix it\n\n" + trailers);
  CHECK(with_provenance("fix it\n\n", s, 42) == "fix it\n\n" + trailers);
  CHECK(with_provenance("fix it\n\nthe reason is: many", s, 42) ==
        "fix it\n\nthe reason is: many\n\n" + trailers);  // a sentence, not a trailer
  CHECK(with_provenance("fix it\n\nSigned-off-by: A <a@x>", s, 42) == "fix it\n\nSigned-off-by: A <a@x>\n" + trailers);
  CHECK(with_provenance("Key: value", s, 42) == "Key: value\n\n" + trailers);  // a subject is no trailer block
}
