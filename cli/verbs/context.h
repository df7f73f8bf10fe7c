// Where a verb acts and with what: the global options every verb takes
// (the workspace, the NATS server, credentials, --json, --timeout) and the
// Context each front end builds from them: the workspace, the NATS
// connection, the stores a verb reads and writes, this host's identity.
// No command line here: the command line, serve, MCP and the agent's socket
// each make a Context of their own.
#pragma once

#include <unistd.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/verbs/output.h"
#include "kv/connection.h"
#include "kv/nats_context.h"
#include "swarm/base/safe_dir.h"
#include "swarm/bus/blobs.h"
#include "swarm/bus/bus.h"
#include "swarm/bus/cursors.h"
#include "swarm/landing/landing.h"
#include "swarm/lease/lease.h"
#include "swarm/slots/lifecycle.h"
#include "swarm/workspace/workspace.h"

namespace cli {

struct Globals {
  std::string workspace;  // --workspace, $SWARM_WORKSPACE
  std::string nats_url;   // --nats-url, $NATS_URL
  std::string bucket;     // --bucket
  bool json = false;
  std::string timeout = "5s";
  std::string creds, user, password, token, nkey, tls_ca, tls_cert, tls_key;
  std::string context;  // --context, $NATS_CONTEXT: a nats CLI context
  std::string log_level = "warn";
};

// The token given, if any (checked where it was read).
swarm::ExpectedSession session_of(const std::string& session);

// For swarm mcp: every Context of this process from now on reuses one NATS
// connection per server and credentials (kept without a total wait: each
// request still has --timeout), instead of connecting for each verb run.
void share_connections();

class Context {
 public:
  explicit Context(const Globals& globals) : globals_(globals), out_(globals.json) {}

  const Globals& globals() const { return globals_; }
  const Output& out() const { return out_; }
  // Whether the caller asked for the document (--json; MCP always): a verb
  // whose text and document are both costly makes only the one asked for.
  bool wants_json() const { return globals_.json; }
  const Presentation& presentation() const { return presentation_; }
  void set_presentation(const Presentation& p) { presentation_ = p; }
  // The caller's standard input (send -): this process's, or what the
  // socket brought along.
  int standard_input() const { return input_; }
  void set_standard_input(int fd) { input_ = fd; }
  // Whether this process's stderr is the caller's, so a progress line may
  // be drawn there: the command line acting on its own, not the run that
  // answers an agent's socket nor the MCP server.
  bool draws_progress() const { return draws_progress_; }
  void set_draws_progress(bool on) { draws_progress_ = on; }
  // The process a verb acts for, as a session records its joiner: this
  // one, or the socket's peer (its SO_PEERCRED pid) for a call it answers.
  std::int64_t caller_pid() const { return caller_pid_ != 0 ? caller_pid_ : static_cast<std::int64_t>(::getpid()); }
  void set_caller_pid(std::int64_t pid) { caller_pid_ = pid; }
  std::chrono::milliseconds timeout() const;

  // The workspace from --workspace / $SWARM_WORKSPACE / the current folder up.
  swarm::Workspace workspace() const;
  // The slot a verb acts on: `given` (--slot, or $SWARM_SLOT), else the slot
  // whose worktree holds the current folder; else bad_input saying how to
  // name one.
  std::string slot_of(const std::string& given) const;
  // Connection options from the globals; `config` supplies the URL when
  // neither --nats-url nor $NATS_URL does.
  kv::ConnectionOptions connection_options(const swarm::WorkspaceConfig* config) const;
  // Timeouts, auth and TLS from the globals, without URLs.
  kv::ConnectionOptions auth_options() const;
  // Everything the slot verbs need: the workspace's config, a connection,
  // the session bucket bound (not created), this host's identity.
  swarm::SlotLifecycle lifecycle() const;
  // What status reads: the workspace's session bucket and its lease bucket
  // (bound with no round trip: only task leases are read from it).
  struct Sessions {
    swarm::SessionStore store;
    swarm::LeaseStore leases;
  };
  Sessions sessions() const;
  // The task queue (its bucket opened: missing is exit 6) and the journal.
  struct Tasks {
    swarm::TaskStore store;
    swarm::Journal journal;
  };
  Tasks tasks() const;
  // The task queue on the connection sessions() made (nullopt: a workspace
  // made before tasks, with no such bucket).
  std::optional<swarm::TaskStore> queue_if_exists() const;
  // The message bus of the workspace (its stream, inbox cursors and blob
  // store bound, no round trip), and the workspace's config.
  struct Messages {
    swarm::WorkspaceConfig config;
    swarm::Bus bus;
    swarm::Cursors cursors;
    swarm::Blobs blobs;
  };
  // `lives_on`: for a verb that waits (inbox --wait/--follow, ask): its
  // requests are not bounded by a total wait, each has --timeout.
  Messages messages(bool lives_on = false) const;
  // The name of the workspace's task bucket (no I/O but its config).
  std::string task_bucket() const;
  // Where the workspace's records live on its server (no I/O but its config).
  swarm::WorkspaceNames names() const;
  // The lease bucket: of the workspace (its NATS and lease_bucket), or with
  // no workspace, of --nats-url's server. `lives_on`: for a process that
  // holds or waits long (lock, elect): its requests are not bounded by a
  // total wait, each has --timeout.
  swarm::LeaseStore leases(bool lives_on = false) const;
  // What branches and land use: the workspace's hub, sessions, leases and
  // journal (`lives_on`: as for leases, for a land that waits in line).
  swarm::Landing landing(bool lives_on = false) const;
  const swarm::HostIdentity& me() const;
  // An error's message, with why the workspace's embedded server could not
  // be used when that is what stopped the verb (NATS unavailable, on the
  // workspace's own server): it names what to do.
  std::string explained(swarm::Errc kind, const std::string& message) const;
  // The --context (or $NATS_CONTEXT) named, read once; empty when none.
  const kv::NatsContext& nats_context() const;

 private:
  // The workspace's config, its session bucket replaced by --bucket.
  swarm::WorkspaceConfig config_of(const swarm::Workspace& ws) const;
  Sessions sessions_of(const swarm::WorkspaceConfig& config) const;
  // A connection made with `options` (or the shared one: share_connections).
  kv::Connection connect(kv::ConnectionOptions options) const;
  // The token watermark of the workspace, for stores on its own NATS (null
  // on another server, named by --nats-url).
  std::shared_ptr<const swarm::TokenWatermark> watermark_of(const swarm::WorkspaceConfig& config) const;
  Globals globals_;
  Output out_;
  Presentation presentation_;
  bool draws_progress_ = false;
  int input_ = 0;
  std::int64_t caller_pid_ = 0;
  // Kept here, not only in the lifecycle a verb drops, so that the process
  // can exit without the client's orderly close (see main.cc).
  mutable std::optional<kv::Connection> connection_;
  mutable std::optional<swarm::HostIdentity> me_;
  mutable std::optional<kv::NatsContext> nats_context_;
};

}  // namespace cli
