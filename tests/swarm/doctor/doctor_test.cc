// Doctor's checks as pure functions: what was read goes in, findings come
// out, with no server and no workspace on disk.
#include "swarm/doctor/checks.h"
#include "swarm/doctor/doctor.h"

#include <doctest/doctest.h>

using namespace swarm;
using namespace swarm::doctor;
using namespace std::chrono_literals;

namespace {

const TimePoint kNow = TimePoint(std::chrono::hours(24 * 365 * 50));
const HostIdentity kMe{"here", "id-here"};
const Here kHere{kMe, "/ws/.swarm/hub.git"};
const Workspace kWs = Workspace::at("/ws");

Clock at(TimePoint t) {
  return [t] { return t; };
}

SessionEntry session(const std::string& slot, const std::string& host, std::chrono::milliseconds age,
                     const std::string& hub_url = "/ws/.swarm/hub.git") {
  SessionEntry e;
  e.slot = slot;
  e.revision = 7;
  e.stored_at = kNow - age;
  Session s;
  s.slot = slot;
  s.host = host;
  s.host_id = host == "here" ? "id-here" : "id-" + host;
  s.task_id = "t-" + slot;
  s.hub_url = hub_url;
  e.session = s;
  return e;
}

SessionEntry corrupt(const std::string& slot) {
  SessionEntry e;
  e.slot = slot;
  e.corrupt_reason = "not JSON";
  return e;
}

Findings records(const std::vector<SessionEntry>& notable, std::set<std::string> folders = {}) {
  auto has_folder = [folders](const std::string& slot) { return folders.count(slot) > 0; };
  return check_records(RecordsInput{kWs, kHere, notable, at(kNow), 60s, has_folder});
}

LeaseEntry lease(const std::string& name, std::chrono::milliseconds age, std::chrono::milliseconds ttl) {
  LeaseEntry e;
  e.name = name;
  e.revision = 11;
  e.stored_at = kNow - age;
  LeaseRecord r;
  r.name = name;
  r.holder = "here:42";
  r.host = "here";
  r.host_id = "id-here";
  r.pid = 42;
  r.ttl = ttl;
  e.record = r;
  return e;
}

Findings leases(const std::vector<LeaseEntry>& listed, const std::vector<SessionBrief>& sessions,
                const std::set<std::string>& erased = {}, bool alive = true) {
  return check_leases(LeaseInput{kMe, listed, at(kNow), sessions, erased,
                                 [alive](std::int64_t, std::uint64_t) { return alive; }});
}

}  // namespace

TEST_CASE("FindingKind_PrintsTheNamesReportsUse") {
  // the `check` of text and JSON reports: scripts match on these exact names.
  CHECK(to_string(FindingKind::stale_session) == "stale_session");
  CHECK(to_string(FindingKind::orphan_task_lease) == "orphan_task_lease");
  CHECK(to_string(FindingKind::nats_server_version) == "nats_server_version");
  CHECK(to_string(FindingKind::unsafe_path) == "unsafe_path");
}

TEST_CASE("CheckRecords_FreshSessionsOfOtherHostsAreHealthy") {
  // a fresh session, or this host's with its folder, makes no finding.
  CHECK(records({session("a", "there", 1s), session("b", "here", 1s)}, {"b"}).empty());
}

TEST_CASE("CheckRecords_NamesStaleLateCorruptAndMissingFolder") {
  // past two thirds of the TTL is stale, past a third late; this host's record with no folder is missing_folder.
  auto found = records({session("a", "there", 50s), session("b", "there", 25s), corrupt("c"), session("d", "here", 1s)});
  REQUIRE(found.size() == 4);
  CHECK(found[0].kind == FindingKind::stale_session);
  CHECK(found[0].severity == Severity::problem);
  CHECK(found[0].message == "slot a: host there's session (task t-a) was last renewed 50s ago; the server drops it at 1m");
  CHECK(found[0].fix == "on there: swarm doctor --fix   (or here: swarm evict --slot a)");
  CHECK(found[1].kind == FindingKind::late_session);
  CHECK(found[1].severity == Severity::notice);
  CHECK(found[2].kind == FindingKind::corrupt_record);
  CHECK(found[2].message == "the record of slot c is corrupt (not JSON)");
  CHECK(found[3].kind == FindingKind::missing_folder);
  CHECK(found[3].subject == "d");
}

TEST_CASE("CheckRecords_ThisHostsSessionOfAnotherWorkspaceIsANotice") {
  // same host, another hub: the slot name is another workspace's slot, never judged stale here.
  auto found = records({session("a", "here", 50s, "/elsewhere/hub.git")});
  REQUIRE(found.size() == 1);
  CHECK(found[0].kind == FindingKind::other_workspace);
  CHECK(found[0].severity == Severity::notice);
}

TEST_CASE("CheckFolders_OrphanFolderAndStrayEntry") {
  // a slot folder with no record here is an orphan; a file or a badly named entry is stray; unsafe ones are skipped.
  std::vector<SlotEntry> entries{{"a", EntryKind::folder}, {"b", EntryKind::folder}, {"c", EntryKind::file},
                                 {"d", EntryKind::folder}, {"e", EntryKind::folder}};
  std::vector<SessionBrief> all{{"a", "t-a", 1, false, true}, {"e", "t-e", 1, false, false}};
  std::set<std::filesystem::path> unsafe{kWs.slots_dir() / "d"};
  std::vector<BranchTip> tips;
  auto found = check_folders(FolderInput{kWs, entries, all, unsafe, tips});
  REQUIRE(found.size() == 3);
  CHECK(found[0].kind == FindingKind::orphan_folder);
  CHECK(found[0].subject == "b");
  CHECK(found[1].kind == FindingKind::stray_entry);
  CHECK(found[1].subject == (kWs.slots_dir() / "c").string());
  CHECK(found[2].kind == FindingKind::orphan_folder);  // e's record is another workspace's
  CHECK(found[2].subject == "e");
}

TEST_CASE("CheckUnpushedBranches_OnlyABranchWithWorkTheHubLacks") {
  // a branch the hub lacks that never moved from the default has nothing to push.
  std::vector<SlotEntry> entries;
  std::vector<SessionBrief> all;
  std::set<std::filesystem::path> unsafe;
  std::vector<BranchTip> tips{{"a", "0123456789abcdef", std::nullopt, false},
                              {"b", "0123456789abcdef", std::string("fedcba9876543210"), false}};
  auto found = check_unpushed_branches(FolderInput{kWs, entries, all, unsafe, tips});
  REQUIRE(found.size() == 1);
  CHECK(found[0].subject == "b");
  CHECK(found[0].message.find("the hub's swarm/b is at fedcba987654") != std::string::npos);
}

TEST_CASE("CheckLeases_ExpiredDeadHolderAndOrphanTask") {
  // expired is a notice; this host's lease of a gone process is dead_holder; a task lease without its session an orphan.
  auto expired = lease("db", 40s, 30s);
  auto dead = lease("cache", 1s, 30s);
  auto task = lease("task.t-a", 1s, 30s);
  task.record->slot = "a";
  task.record->task = "t-a";
  auto found = leases({expired, dead, task}, {}, {}, false);
  REQUIRE(found.size() == 3);
  CHECK(found[0].kind == FindingKind::expired_lease);
  CHECK(found[0].severity == Severity::notice);
  CHECK(found[1].kind == FindingKind::dead_holder);
  CHECK(found[2].kind == FindingKind::orphan_task_lease);
  CHECK(found[2].severity == Severity::problem);
}

TEST_CASE("CheckLeases_ATaskLeaseLivesWithItsSessionUnlessThisRunRemovedIt") {
  // the session's brief keeps the task lease healthy; the same slot erased by this run's fixes does not.
  auto task = lease("task.t-a", 1s, 30s);
  task.record->slot = "a";
  task.record->task = "t-a";
  std::vector<SessionBrief> sessions{{"a", "t-a", 1, false, true}};
  CHECK(leases({task}, sessions).empty());
  auto found = leases({task}, sessions, {"a"});
  REQUIRE(found.size() == 1);
  CHECK(found[0].kind == FindingKind::orphan_task_lease);
}

TEST_CASE("CheckBuckets_ConfigDriftOldServerAndMissingLeaseBucket") {
  // TTL and replicas unlike config.json are problems; a replicated bucket on a server before 2.10 is one too.
  WorkspaceConfig config;
  config.ttl = 60s;
  config.replicas = 1;
  config.lease_bucket = "swarm-leases";
  kv::BucketConfig have;
  have.ttl = 30s;
  have.replicas = 3;
  BucketInput in{config, have, "swarm-sessions", "nats://n1:4222", "2.9.10", false};
  auto version = check_server_version(in);
  REQUIRE(version.size() == 1);
  CHECK(version[0].kind == FindingKind::nats_server_version);
  CHECK(version[0].severity == Severity::problem);
  auto drift = check_bucket_config(in);
  REQUIRE(drift.size() == 2);
  CHECK(drift[0].fix == "swarm up --ttl 30s   (or recreate the bucket with the config's TTL when no session is live)");
  CHECK(drift[1].fix == "swarm up --replicas 3");
  auto missing = check_lease_bucket(in);
  REQUIRE(missing.size() == 1);
  CHECK(missing[0].message == "the lease bucket swarm-leases does not exist");
  in.server_version = "2.10.0";
  CHECK(check_server_version(in).empty());
}

// What the summary counts: a notice --fix mended is fixed, not a notice
// that remains; one it left alone still is.
TEST_CASE("DoctorReport_ANoticeFixMendedCountsAsFixedOnly") {
  DoctorReport report;
  Finding mended;
  mended.severity = Severity::notice;
  mended.fixed = true;
  Finding left;
  left.severity = Severity::notice;
  Finding problem;
  problem.severity = Severity::problem;
  problem.fixed = true;
  report.findings = {mended, left, problem};
  CHECK(report.notices() == 1);
  CHECK(report.fixed() == 2);
  CHECK(report.problems_remaining() == 0);
}
