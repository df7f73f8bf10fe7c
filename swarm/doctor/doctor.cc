// Doctor::run: reads what there is, stage by stage, runs each stage's table
// of checks on it, and fixes the stage's findings before the next stage
// reads (a session removed is no session for the lease checks).
#include "swarm/doctor/doctor.h"

#include <algorithm>
#include <map>
#include <set>
#include <span>

#include "kv/bucket.h"
#include "swarm/base/error.h"
#include "swarm/base/process_info.h"
#include "swarm/base/text.h"
#include "swarm/bus/blobs.h"
#include "swarm/bus/bus.h"
#include "swarm/bus/cursors.h"
#include "swarm/doctor/checks.h"
#include "swarm/slots/liveness.h"
#include "swarm/lease/rules.h"
#include "swarm/workspace/bootstrap.h"
#include "swarm/workspace/embedded_server.h"

namespace swarm {

std::string_view to_string(Severity severity) { return severity == Severity::notice ? "notice" : "problem"; }

std::string_view to_string(FindingKind kind) {
  switch (kind) {
    case FindingKind::config: return "config";
    case FindingKind::hub: return "hub";
    case FindingKind::unsafe_path: return "unsafe_path";
    case FindingKind::embedded_server: return "embedded_server";
    case FindingKind::embedded_store_full: return "embedded_store_full";
    case FindingKind::unfinished_removal: return "unfinished_removal";
    case FindingKind::nats: return "nats";
    case FindingKind::bucket: return "bucket";
    case FindingKind::nats_server_version: return "nats_server_version";
    case FindingKind::bucket_config: return "bucket_config";
    case FindingKind::lease_bucket: return "lease_bucket";
    case FindingKind::journal: return "journal";
    case FindingKind::corrupt_record: return "corrupt_record";
    case FindingKind::other_workspace: return "other_workspace";
    case FindingKind::stale_session: return "stale_session";
    case FindingKind::missing_folder: return "missing_folder";
    case FindingKind::dead_session: return "dead_session";
    case FindingKind::missing_worktree: return "missing_worktree";
    case FindingKind::late_session: return "late_session";
    case FindingKind::stray_entry: return "stray_entry";
    case FindingKind::orphan_folder: return "orphan_folder";
    case FindingKind::unpushed_branch: return "unpushed_branch";
    case FindingKind::corrupt_lease: return "corrupt_lease";
    case FindingKind::expired_lease: return "expired_lease";
    case FindingKind::orphan_task_lease: return "orphan_task_lease";
    case FindingKind::orphan_port_block: return "orphan_port_block";
    case FindingKind::orphan_hold: return "orphan_hold";
    case FindingKind::dead_holder: return "dead_holder";
    case FindingKind::task_bucket: return "task_bucket";
    case FindingKind::bus: return "bus";
    case FindingKind::inbox_gap: return "inbox_gap";
    case FindingKind::blob_orphan: return "blob_orphan";
    case FindingKind::blob_missing: return "blob_missing";
    case FindingKind::blob_leftover: return "blob_leftover";
    case FindingKind::corrupt_task: return "corrupt_task";
    case FindingKind::lapsed_claim: return "lapsed_claim";
    case FindingKind::inbox_cursor: return "inbox_cursor";
    case FindingKind::bus_full: return "bus_full";
  }
  return "unknown";
}

int DoctorReport::problems_remaining() const {
  return static_cast<int>(std::count_if(findings.begin(), findings.end(), [](const Finding& f) {
    return f.severity == Severity::problem && !f.fixed;
  }));
}

int DoctorReport::notices() const {
  return static_cast<int>(
      std::count_if(findings.begin(), findings.end(), [](const Finding& f) {
        return f.severity == Severity::notice && !f.fixed;  // a notice --fix mended is counted as fixed only
      }));
}

int DoctorReport::fixed() const {
  return static_cast<int>(std::count_if(findings.begin(), findings.end(), [](const Finding& f) { return f.fixed; }));
}

namespace {

namespace d = doctor;

// The checks, stage by stage, in the order they report. Adding a check is a
// function in doctor_*.cc and a row here (and a row in doctor_fix.cc's
// table when --fix repairs it).
constexpr d::Check<d::HostInput> kHostChecks[] = {d::check_hub, d::check_unsafe_paths, d::check_embedded_server,
                                                  d::check_leftovers};
constexpr d::Check<d::BucketInput> kBucketChecks[] = {d::check_server_version, d::check_bucket_config,
                                                      d::check_lease_bucket, d::check_journal};
constexpr d::Check<d::RecordsInput> kRecordChecks[] = {d::check_records};
constexpr d::Check<d::FolderInput> kFolderChecks[] = {d::check_folders, d::check_unpushed_branches};
constexpr d::Check<d::LeaseInput> kLeaseChecks[] = {d::check_leases};

// What the servers say of the buckets.
d::BucketInput read_buckets(const SessionStore& store, const WorkspaceConfig& config, const kv::Connection& nats) {
  d::BucketInput in{config, store.bucket_config(), store.bucket_name()};
  in.server_url = kv::redact_urls(nats.connected_url());
  if (in.have.replicas > 1) in.server_version = nats.server_version();
  try {
    kv::Bucket::open(nats, config.lease_bucket);
  } catch (const kv::Error& e) {
    if (e.kind() == kv::Errc::not_found) in.lease_bucket_exists = false;
    else in.lease_bucket_unreadable = from_kv(e);
  }
  if (!in.lease_bucket_unreadable) {
    try {
      if (in.lease_bucket_exists && !kv::version_before(nats.server_version(), 2, 11))
        for (const auto& name : {store.bucket_name(), config.lease_bucket})
          if (!translating_kv([&] { return kv::Bucket::open(nats, name).announces_expiry(); }))
            in.unannounced.push_back(name);
      in.journal = Journal(nats, config.names()).state();
    } catch (const Error& e) {
      in.lease_bucket_unreadable = e;  // NATS failed: reported as NATS trouble
    }
  }
  return in;
}

// The records, then the slot folders and branches; returns what was listed.
d::SessionListing check_sessions(DoctorReport& report, const SessionStore& store, const d::HostInput& host,
                                 const d::Here& here, const Clock& clock, d::FixInput* fixes, d::FixResult& fixed) {
  const Workspace& ws = host.ws;
  auto ttl = store.ttl();
  d::SessionListing listing = d::list_sessions(store, ttl, here, clock);
  if (fixes) {
    fixes->sessions = &store;
    for (const auto& entry : listing.notable) fixes->records[entry.slot] = &entry;
    fixes->age_is_certain = listing.server && listing.server->measured;
  }
  const Clock server_now = listing.server ? listing.server->now : Clock();
  auto has_folder = [&ws](const std::string& slot) { return d::has_folder(ws, slot); };
  auto has_worktree = [&ws](const std::string& slot) { return d::has_worktree(ws, slot); };
  const auto margin = listing.server ? observer_margin(ttl, listing.server->uncertainty) : std::chrono::milliseconds(0);
  d::report_stage(report,
                  d::run_checks(kRecordChecks, d::RecordsInput{ws, here, listing.notable, server_now, ttl, has_folder,
                                                               margin, has_worktree}),
                  fixes, fixed);
  // Read after the records' fixes: a stale session's folder is gone now.
  const auto entries = d::list_slot_entries(ws);
  const auto tips = d::branch_tips(ws, host.hub, here, listing.notable);
  const auto unsafe = d::paths_of(host.unsafe);
  d::report_stage(report, d::run_checks(kFolderChecks, d::FolderInput{ws, entries, listing.all, unsafe, tips}),
                  fixes, fixed);
  return listing;
}

void check_leases(DoctorReport& report, const kv::Connection& nats, const WorkspaceConfig& config,
                  const HostIdentity& me, const std::vector<d::SessionBrief>& sessions, d::FixInput* fixes,
                  d::FixResult& fixed) {
  std::optional<LeaseStore> store;
  try {
    store.emplace(LeaseStore::open(nats, config.names()));
  } catch (const Error& e) {
    if (e.kind() == Errc::not_bootstrapped) return;  // reported by check_lease_bucket
    throw;
  }
  const ServerClock& clock = store->server_clock();
  const std::vector<LeaseEntry> leases = store->list();
  const std::set<std::string> erased = fixed.erased_slots;  // sessions this run removed
  auto alive = [](std::int64_t pid, std::uint64_t start) { return process_is(static_cast<pid_t>(pid), start); };
  const d::LeaseInput in{me, leases, clock.now, sessions, erased, alive};
  if (fixes) {
    fixes->leases = &*store;
    fixes->lease_input = &in;
    for (const auto& lease : leases) fixes->lease_entries[lease.name] = &lease;
  }
  d::report_stage(report, d::run_checks(kLeaseChecks, in), fixes, fixed);
  if (fixes) fixes->lease_input = nullptr;  // `in` ends here
}

// The servers' URLs, joined and with any secret redacted.
std::string shown_urls(const std::vector<std::string>& urls) {
  std::string out;
  for (const auto& url : urls) out += (out.empty() ? "" : ",") + url;
  return kv::redact_urls(out);
}

// NATS trouble, at connect or at any request after it.
Finding nats_problem(const Error& e, const Workspace& ws, const WorkspaceConfig& config, bool own_server,
                     const std::string& nats_url) {
  const std::string trouble = own_server ? embedded_trouble(ws.nats_dir(), config) : std::string();
  return d::make_finding(Severity::problem, FindingKind::nats, nats_url,
                         trouble.empty() ? std::string(e.what()) : e.what() + ("; " + trouble),
                         config.embedded && own_server
                             ? "swarm up   (restarts the embedded nats-server)"
                             : "check the NATS server at " + nats_url + ", then run swarm doctor again");
}

// The session bucket; none yet is a finding (and the end of the checks).
std::optional<SessionStore> open_sessions(DoctorReport& report, const kv::Connection& nats, const std::string& bucket) {
  try {
    return SessionStore::open(nats, bucket);
  } catch (const Error& e) {
    if (e.kind() != Errc::not_bootstrapped) throw;
    report.findings.push_back(d::make_finding(Severity::problem, FindingKind::bucket, bucket, e.what(), "swarm up"));
    return std::nullopt;
  }
}

// What guards the workspace's tokens against a crash of the server's machine.
Durability durability_of(const Workspace& ws, const WorkspaceConfig& config, const kv::Connection& nats,
                         bool own_server) {
  Durability d;
  const auto server = config.embedded && own_server ? EmbeddedServer(ws.nats_dir()).running() : std::nullopt;
  d.server_version = server && !server->version.empty() ? server->version : nats.server_version();
  const std::string named = "nats-server " + (d.server_version.empty() ? std::string("?") : d.server_version);
  const std::string watermark = (ws.swarm_dir() / "tokens.json").string();
  if (server && server->sync_always) {
    d.level = "synced";
    d.message = "the workspace's " + named + " writes every change to disk before it acknowledges it (sync_interval "
                "always): a crash of this machine loses nothing acknowledged";
  } else if (server) {
    d.level = "watermark";
    d.message = "the workspace's " + named + " syncs its store about once a minute: a crash of this machine can take "
                "back its last writes; the token watermark in " + watermark + " keeps every fencing and session "
                "token from being handed out twice (the current release, " + std::string(current_nats_release()) +
                ", syncs every write: scripts/setup.sh builds it beside swarm, then `swarm down; swarm up`)";
  } else {
    d.level = "unknown";
    d.message = "the workspace's NATS (" + named + ") is not its own: whether it syncs every write is its config's "
                "(`jetstream { sync_interval: always }`, 2.10 or later); the token watermark in " + watermark +
                " guards the tokens this host handed out, other hosts' watermarks theirs";
  }
  d.lacks = server_lacks(d.server_version, !server ? ServerSync::unknown
                                           : server->sync_always ? ServerSync::always : ServerSync::interval);
  return d;
}

}  // namespace

Doctor::Doctor(Workspace workspace, HostIdentity me, kv::ConnectionOptions connection, std::string bucket_override,
               Clock clock)
    : workspace_(std::move(workspace)),
      me_(std::move(me)),
      connection_(std::move(connection)),
      bucket_override_(std::move(bucket_override)),
      clock_(std::move(clock)) {}

DoctorReport Doctor::run(bool fix) {
  DoctorReport report;
  report.workspace = workspace_.root().string();

  auto file = workspace_.read_config();
  if (file.state != Workspace::ConfigFile::State::good) {
    report.findings.push_back(d::make_finding(Severity::problem, FindingKind::config,
                                              workspace_.config_file().string(), file.problem,
                                              config_fix(workspace_, file)));
    return report;
  }
  WorkspaceConfig config = file.config;
  // --nats-url (already in the options) or --bucket may point elsewhere than
  // the workspace's own records. Then a slot folder without a record there may
  // well have one in the workspace's: folders are reported, never removed.
  const bool own_bucket = bucket_override_.empty() || bucket_override_ == config.bucket;
  const bool own_server = connection_.urls.empty() || connection_.urls == kv::split_urls(config.nats_url);
  if (!bucket_override_.empty()) config.bucket = bucket_override_;
  if (connection_.urls.empty()) connection_.urls = kv::split_urls(config.nats_url);
  use_embedded_token(workspace_.nats_dir(), config, connection_);
  d::FixInput fix_input{workspace_, clock_};
  if (!own_server || !own_bucket) fix_input.folders_elsewhere = own_server ? "--bucket" : "--nats-url (or $NATS_URL)";
  d::FixInput* fixes = fix ? &fix_input : nullptr;
  d::FixResult fixed;
  const std::string nats_url = shown_urls(connection_.urls);
  report.nats_url = nats_url;

  // The filesystem checks run whatever NATS does.
  const d::HubProbe hub = d::probe_hub(workspace_, config.hub_location());
  const std::vector<d::UnsafePath> unsafe = d::find_unsafe_paths(workspace_);
  const d::HostInput host{workspace_, config, hub, unsafe};
  fix_input.hub = &hub;
  d::report_stage(report, d::run_checks(kHostChecks, host), fixes, fixed);

  // NATS trouble, at connect or at any request after it (a cluster electing
  // a new leader, a server going away), is a finding, never an exit 7.
  auto nats_finding = [&](const Error& e) {
    report.findings.push_back(nats_problem(e, workspace_, config, own_server, nats_url));
  };
  std::optional<kv::Connection> nats;
  try {
    nats.emplace(connect_nats(connection_));
  } catch (const Error& e) {
    nats_finding(e);
    return report;
  }
  report.nats_reachable = true;
  report.durability = durability_of(workspace_, config, *nats, own_server);
  const Journal journal(*nats, config.names());
  fix_input.journal = &journal;
  fix_input.actor = Actor::here(me_);

  try {
    std::optional<SessionStore> store = open_sessions(report, *nats, config.bucket);
    if (!store) return report;
    const d::BucketInput buckets = read_buckets(*store, config, *nats);
    d::report_stage(report, d::run_checks(kBucketChecks, buckets), fixes, fixed);
    if (buckets.lease_bucket_unreadable) throw *buckets.lease_bucket_unreadable;
    const d::Here here{me_, hub.where.session_url()};
    fix_input.here = here;
    const d::SessionListing listing = check_sessions(report, *store, host, here, clock_, fixes, fixed);
    check_leases(report, *nats, config, me_, listing.all, fixes, fixed);
    d::check_tasks(report, *nats, config, fixes, fixed);
    d::check_bus(report, *nats, config, fix);
  } catch (const Error& e) {
    if (e.kind() != Errc::unavailable) throw;
    report.nats_reachable = false;
    nats_finding(e);
  }
  return report;
}

}  // namespace swarm
