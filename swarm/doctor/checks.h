// The checks behind Doctor, internal to swarm/: one function per kind of
// finding (or a small group), each given what was read (records, folders,
// leases, the hub) as an explicit value, so no check depends on another's
// side effects; and the fixes, a separate pass over the findings.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "kv/bucket.h"
#include "swarm/base/error.h"
#include "swarm/base/safe_dir.h"
#include "swarm/base/server_clock.h"
#include "swarm/bus/bus.h"
#include "swarm/doctor/doctor.h"
#include "swarm/tasks/task_store.h"
#include "swarm/git/hub.h"
#include "swarm/git/hub_location.h"
#include "swarm/journal/journal.h"
#include "swarm/lease/lease.h"
#include "swarm/slots/session_store.h"

namespace swarm::doctor {

using Findings = std::vector<Finding>;

// A check of one stage: what was read in, findings out, in report order.
template <class Input>
using Check = Findings (*)(const Input&);

template <class Input, std::size_t N>
Findings run_checks(const Check<Input> (&table)[N], const Input& input) {
  Findings out;
  for (const auto& check : table) {
    Findings found = check(input);
    out.insert(out.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
  }
  return out;
}

Finding make_finding(Severity severity, FindingKind kind, std::string subject, std::string message, std::string fix);
std::string ago(std::chrono::milliseconds age);

// Which records are this workspace's: another workspace of this host may
// share the bucket (its hub is elsewhere), and its slot names are other slots.
struct Here {
  HostIdentity me;
  std::string hub_url;  // this workspace's hub as sessions record it

  bool other_workspace(const Session& s) const { return me.owns(s) && !s.hub_url.empty() && s.hub_url != hub_url; }
  // A corrupt record, or a session that is not another workspace's.
  bool has_record_here(const SessionEntry& e) const { return e.corrupt() || !other_workspace(*e.session); }
};

// ---- the host: hub, .swarm/'s folders, the embedded server, trash ----

// What opening the hub said.
struct HubProbe {
  HubLocation where;
  std::optional<Hub> hub;      // opened
  std::optional<Error> error;  // why not
  bool missing = false;        // a local hub whose folder is not there
  bool own = false;            // a local hub in this workspace's .swarm/
};
HubProbe probe_hub(const Workspace& ws, const HubLocation& where);

// A link or a stranger's folder where swarm keeps its own: never followed.
struct UnsafePath {
  std::filesystem::path path;
  std::string why;
};
std::vector<UnsafePath> find_unsafe_paths(const Workspace& ws);
std::set<std::filesystem::path> paths_of(const std::vector<UnsafePath>& unsafe);

struct HostInput {
  const Workspace& ws;
  const WorkspaceConfig& config;
  const HubProbe& hub;
  const std::vector<UnsafePath>& unsafe;
};
Findings check_hub(const HostInput& in);
Findings check_unsafe_paths(const HostInput& in);
Findings check_embedded_server(const HostInput& in);
Findings check_leftovers(const HostInput& in);

// A folder swarm keeps in .swarm/, when it is there and safe to use.
std::optional<SafeDir> kept_folder(const Workspace& ws, const char* name);
// Whether the slot has a folder; a link or a stranger's folder there counts.
bool has_folder(const Workspace& ws, const std::string& slot);
// Whether the slot's folder holds its worktree (wt/, a folder).
bool has_worktree(const Workspace& ws, const std::string& slot);

// ---- the buckets and the server ----

struct BucketInput {
  const WorkspaceConfig& config;
  kv::BucketConfig have;           // the session bucket as it is
  std::string bucket_name;
  std::string server_url;          // redacted
  std::string server_version;      // read only for a replicated bucket
  bool lease_bucket_exists = true;
  // NATS failed while the lease bucket was looked for: the checks above run
  // on what was read, then doctor reports NATS (as before the table).
  std::optional<Error> lease_bucket_unreadable;
  std::optional<kv::StreamStatus> journal;  // the journal's stream; nullopt: missing
  // Buckets whose expiry the server could announce (2.11+) but does not (an
  // older swarm made them): their ends are judged by each host's clock.
  std::vector<std::string> unannounced;
};
Findings check_server_version(const BucketInput& in);
Findings check_bucket_config(const BucketInput& in);
Findings check_lease_bucket(const BucketInput& in);
Findings check_journal(const BucketInput& in);

// ---- the task queue ----

// Each corrupt task record (its key the subject): a problem --fix removes.
Findings check_task_records(const std::vector<TaskEntry>& tasks);

// ---- the session records and the slot folders ----

// What doctor keeps of the records: every one briefly (for the folder and
// lease checks), and whole only those it may report on: corrupt, this
// host's, or no longer fresh. At 100,000 sessions of other hosts that is
// a few MB instead of all the records.
struct SessionBrief {
  std::string slot;
  std::string task_id;  // "" when corrupt
  std::uint64_t revision = 0;
  bool corrupt = false;
  bool here = false;  // a record of this workspace (Here::has_record_here)
  std::optional<PortBlock> ports;  // its block of ports, if any
  std::uint64_t token = 0;           // its session token (0 when corrupt)
  std::vector<std::string> holds;    // the holds it names (swarm hold)
};
struct SessionListing {
  std::vector<SessionBrief> all;       // sorted by slot
  std::vector<SessionEntry> notable;   // one per slot
  std::optional<ServerClock> server;   // read before the first record is judged
};
SessionListing list_sessions(const SessionStore& store, std::chrono::milliseconds ttl, const Here& here,
                             const Clock& clock);
// The brief of `slot`'s record, if there is one (`all` is sorted by slot).
const SessionBrief* find_brief(const std::vector<SessionBrief>& all, const std::string& slot);

struct RecordsInput {
  const Workspace& ws;  // for the paths named
  const Here& here;
  const std::vector<SessionEntry>& notable;
  Clock server_now;  // the server's clock, read after the listing arrived
  std::chrono::milliseconds ttl{0};
  std::function<bool(const std::string& slot)> has_folder;
  // The error of that clock's reading (lease/rules' expiry margin): an age is
  // judged less it, since --fix removes what it judges stale (adr/0023).
  std::chrono::milliseconds margin{0};
  // Whether a slot's folder holds its worktree.
  std::function<bool(const std::string& slot)> has_worktree;
};
// Late, stale, corrupt, another workspace's, and this host's with no folder
// or no worktree.
Findings check_records(const RecordsInput& in);

// An entry of .swarm/slots/.
struct SlotEntry {
  std::string name;
  EntryKind kind = EntryKind::missing;
};
std::vector<SlotEntry> list_slot_entries(const Workspace& ws);  // sorted by name

// The last commit of one of this host's slots, and the hub's of its branch.
struct BranchTip {
  std::string slot;
  std::string local;
  std::optional<std::string> on_hub;
  bool beyond_default = false;  // read only when the hub lacks the branch
};
std::vector<BranchTip> branch_tips(const Workspace& ws, const HubProbe& hub, const Here& here,
                                   const std::vector<SessionEntry>& notable);

struct FolderInput {
  const Workspace& ws;
  const std::vector<SlotEntry>& entries;
  const std::vector<SessionBrief>& all;
  const std::set<std::filesystem::path>& unsafe;
  const std::vector<BranchTip>& tips;
};
Findings check_folders(const FolderInput& in);
Findings check_unpushed_branches(const FolderInput& in);

// ---- the leases ----

struct LeaseInput {
  const HostIdentity& me;
  const std::vector<LeaseEntry>& leases;
  Clock server_now;
  const std::vector<SessionBrief>& sessions;
  const std::set<std::string>& erased_slots;  // sessions this run removed
  std::function<bool(std::int64_t pid, std::uint64_t start)> process_alive;
};
Findings check_leases(const LeaseInput& in);
// A task lease whose slot has no session for its task (removed ones left out).
bool task_is_orphan(const LeaseRecord& r, const LeaseInput& in);
// A hold whose session is gone: its slot has no session, or one with
// another token (removed ones left out).
bool hold_is_orphan(const LeaseEntry& hold, const LeaseInput& in);

// ---- the fix pass ----

// What fixing needs, filled in as the run reads it.
struct FixInput {
  const Workspace& ws;
  Clock clock;
  const HubProbe* hub = nullptr;
  std::string folders_elsewhere;  // non-empty: folders are reported only
  std::optional<Here> here;
  const SessionStore* sessions = nullptr;
  std::map<std::string, const SessionEntry*> records;  // the notable records by slot
  bool age_is_certain = false;                         // the server's clock was read
  const LeaseStore* leases = nullptr;
  const LeaseInput* lease_input = nullptr;
  std::map<std::string, const LeaseEntry*> lease_entries;  // the leases listed, by name
  const TaskStore* tasks = nullptr;
  std::map<std::string, const TaskEntry*> task_entries;  // the task records listed, by key
  // Where each repair is journaled (none: not recorded), as whom.
  const Journal* journal = nullptr;
  Actor actor;
};
// What the pass did that later checks must know.
struct FixResult {
  std::set<std::string> erased_slots;
};
// Fixes what is safe among `findings` (this host's only), in order.
void fix_findings(std::span<Finding> findings, const FixInput& in, FixResult& result);

// The fixers, by subject (doctor_fix.cc dispatches to them).
void fix_corrupt_record(Finding& f, const FixInput& in, FixResult& result);
void fix_stale_session(Finding& f, const FixInput& in, FixResult& result);
void fix_missing_folder(Finding& f, const FixInput& in, FixResult& result);
void fix_dead_session(Finding& f, const FixInput& in, FixResult& result);
void fix_orphan_folder(Finding& f, const FixInput& in, FixResult& result);
void fix_unfinished_removal(Finding& f, const FixInput& in, FixResult& result);
void fix_lease(Finding& f, const FixInput& in, FixResult& result);
void fix_corrupt_task(Finding& f, const FixInput& in, FixResult& result);
// Another swarm process of this host holds the slot's folder right now.
void busy(const Workspace& ws, Finding& f, const std::string& slot);
// A `swarm run` of this host that lives keeps the slot (its run lock).
void kept_by_run(const Workspace& ws, Finding& f, const std::string& slot);

// Doctor::run's stages over the stores beside the sessions (store_checks.cc).
// report_stage adds a stage's findings to the report, then fixes them when
// asked (added first: a fix that finds NATS gone leaves every one reported).
void report_stage(DoctorReport& report, Findings found, const FixInput* fixes, FixResult& fixed);
// Working tasks whose claim lapsed: a notice each (adr/0038).
void check_lapsed_claims(DoctorReport& report, const kv::Connection& nats, const WorkspaceConfig& config,
                         const std::vector<TaskEntry>& tasks);
// The task queue's bucket and each record that cannot be read.
void check_tasks(DoctorReport& report, const kv::Connection& nats, const WorkspaceConfig& config, FixInput* fixes,
                 FixResult& fixed);
// The blobs: those no message names, and those a message names but lacks.
void check_blobs(DoctorReport& report, const kv::Connection& nats, const WorkspaceNames& names, const Bus& bus,
                 bool fix);
// The bus's stream and each inbox whose unacked messages retention dropped.
void check_bus(DoctorReport& report, const kv::Connection& nats, const WorkspaceConfig& config, bool fix);

}  // namespace swarm::doctor
