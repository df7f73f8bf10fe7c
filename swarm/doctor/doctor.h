// Doctor: finds what is wrong with a workspace (stale and corrupt records,
// orphaned slot folders, a missing hub, an unreachable NATS, a bucket unlike
// its config, a dead embedded server), names the command that fixes each, and
// with `fix` repairs what is safe on this host. Never starts a server.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kv/connection.h"
#include "swarm/base/clock.h"
#include "swarm/base/host.h"
#include "swarm/workspace/server_release.h"
#include "swarm/workspace/workspace.h"

namespace swarm {

enum class Severity { notice, problem };
std::string_view to_string(Severity severity);

// What a finding is about: one kind per check, printed by to_string as the
// `check` of the text and JSON reports (scripts match on those names).
enum class FindingKind {
  config,
  hub,
  unsafe_path,
  embedded_server,
  embedded_store_full,
  unfinished_removal,
  nats,
  bucket,
  nats_server_version,
  bucket_config,
  lease_bucket,
  journal,
  corrupt_record,
  other_workspace,
  stale_session,
  dead_session,
  missing_folder,
  missing_worktree,
  late_session,
  stray_entry,
  orphan_folder,
  unpushed_branch,
  corrupt_lease,
  expired_lease,
  orphan_task_lease,
  orphan_port_block,
  orphan_hold,
  dead_holder,
  task_bucket,
  corrupt_task,
  lapsed_claim,
  bus,
  inbox_gap,
  inbox_cursor,
  bus_full,
  blob_orphan,
  blob_missing,
  blob_leftover,
};
std::string_view to_string(FindingKind kind);

struct Finding {
  Severity severity = Severity::problem;
  FindingKind kind = FindingKind::config;  // printed as the report's `check`
  std::string subject;  // the slot, or a path, or a URL
  std::string message;  // one plain sentence
  std::string fix;      // the exact command that fixes it
  bool fixed = false;   // --fix repaired it
  std::string fix_note; // what --fix did, or why it left it alone
};

// What a crash of the server's machine can take back, and what guards the
// tokens then (adr/0033).
struct Durability {
  // synced: every acknowledged write is on disk first (the workspace's own
  // nats-server, 2.10 or later); watermark: the server may lose its last
  // writes (2.9), swarm's token watermark keeps tokens from being handed
  // out twice; unknown: another's server, whose settings swarm cannot see.
  std::string level;
  std::string server_version;
  std::string message;  // one sentence for people
  std::vector<ServerLack> lacks;  // what the server cannot give (durability among them), adr/0052
};

struct DoctorReport {
  std::string workspace;
  std::string nats_url;
  bool nats_reachable = false;
  std::optional<Durability> durability;  // once NATS answered
  std::vector<Finding> findings;

  int problems_remaining() const;
  int notices() const;  // those that remain (a notice --fix mended counts as fixed)
  int fixed() const;
};

class Doctor {
 public:
  // `connection` carries timeouts and auth; its URLs come from the config
  // unless already set (--nats-url).
  Doctor(Workspace workspace, HostIdentity me, kv::ConnectionOptions connection, std::string bucket_override = {},
         Clock clock = system_clock());

  // Read-only unless `fix`.
  DoctorReport run(bool fix);

 private:
  Workspace workspace_;
  HostIdentity me_;
  kv::ConnectionOptions connection_;
  std::string bucket_override_;
  Clock clock_;
};

}  // namespace swarm
