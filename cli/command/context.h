// The global options of every verb, and what verbs build from them: the
// workspace, the NATS connection, the session store, the slot lifecycle.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/command/output.h"
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

// Runs a check that throws and hands its message to CLI11 ("" means
// valid), so bad values stop the parse before any I/O (exit 2).
template <typename Require>
CLI::Validator validator_of(Require require, const char* name) {
  return CLI::Validator(
      [require](std::string& value) -> std::string {
        try {
          require(value);
        } catch (const std::exception& e) {
          return e.what();
        }
        return {};
      },
      "", name);
}

// A whole number from `min` to `max`, written in decimal digits (a '-'
// only where `min` is negative; leading zeros dropped, since CLI11 would
// read 010 as octal): exit 2 naming the value otherwise.
CLI::Validator decimal_in(std::int64_t min, std::int64_t max);

// A fencing token: decimal digits, not 0 (exit 2 naming the value otherwise).
CLI::Validator fencing_token_validator();

// Option validators that refuse bad names at parse time, before any I/O (exit 2).
CLI::Validator slot_name_validator();
CLI::Validator task_id_validator();
CLI::Validator duration_validator();

// --slot SLOT (or $SWARM_SLOT) on the verbs that act on one slot: not
// required, since inside a slot's worktree the slot is the worktree's (see
// Context::slot_of). `help` says what it is. Returns the option.
CLI::Option* add_slot_option(CLI::App& cmd, std::string& slot, const std::string& help = "Slot name");

// --session TOKEN (or $SWARM_SESSION) on the verbs that act on a slot: the
// session token join gave the agent. Returns the option.
CLI::Option* add_session_option(CLI::App& cmd, std::string& session);
// The token given, if any (checked by the option's validator).
swarm::ExpectedSession session_of(const std::string& session);

// For swarm mcp: every Context of this process from now on reuses one NATS
// connection per server and credentials (kept without a total wait: each
// request still has --timeout), instead of connecting for each verb run.
void share_connections();

// Registers the global options on the top-level app; with fallthrough they
// are accepted before or after the verb.
void add_global_options(CLI::App& app, Globals& globals);

class Context {
 public:
  explicit Context(const Globals& globals) : globals_(globals), out_(globals.json) {}

  const Globals& globals() const { return globals_; }
  const Output& out() const { return out_; }
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
  // Kept here, not only in the lifecycle a verb drops, so that the process
  // can exit without the client's orderly close (see main.cc).
  mutable std::optional<kv::Connection> connection_;
  mutable std::optional<swarm::HostIdentity> me_;
  mutable std::optional<kv::NatsContext> nats_context_;
};

// A verb: its subcommand and what runs when it was the one parsed.
struct Verb {
  CLI::App* command = nullptr;
  std::function<int(Context&)> run;
};

// What join and run take to join a slot.
struct JoinOptions {
  std::string slot;
  std::string task;
  bool force = false;
  std::string base;
  unsigned ports = 0;
  bool next = false;                // --next: the queue's most urgent ready task
  std::vector<std::string> labels;  // --label, with --next
  std::string wait;                 // --wait DUR, with --next
};
void add_join_options(CLI::App& cmd, JoinOptions& flags);
// Exit 2 unless --task or --next was given (before any I/O).
void require_task_or_next(const JoinOptions& flags);
// join --task, or join --next with its labels and wait.
swarm::JoinResult join_by(swarm::SlotLifecycle& lifecycle, const JoinOptions& flags, swarm::Takeover takeover,
                          std::int64_t leaf_pid, swarm::Joiner joiner);

Verb add_up(CLI::App& app);
Verb add_down(CLI::App& app);
Verb add_version(CLI::App& app);
Verb add_join(CLI::App& app);
Verb add_commit(CLI::App& app);
Verb add_renew(CLI::App& app);
Verb add_close(CLI::App& app);
Verb add_evict(CLI::App& app);
Verb add_status(CLI::App& app);
Verb add_cwd(CLI::App& app);
Verb add_doctor(CLI::App& app);
Verb add_lease(CLI::App& app);
Verb add_lock(CLI::App& app);
Verb add_elect(CLI::App& app);
Verb add_log(CLI::App& app);
Verb add_branches(CLI::App& app);
Verb add_land(CLI::App& app);
Verb add_sync(CLI::App& app);
// swarm: hands over to swarm-serve; swarm-serve: the server (cli/serve.h).
Verb add_serve(CLI::App& app);
// Hidden: what `commit` starts in the background when the hub has too many packs.
Verb add_repack_hub(CLI::App& app);
Verb add_complete(CLI::App& app);
Verb add_completion(CLI::App& app);
Verb add_recovery(CLI::App& app);
Verb add_help(CLI::App& app);
Verb add_run(CLI::App& app);
Verb add_task(CLI::App& app);
Verb add_review(CLI::App& app);
// `swarm review show` (review_show.cc), a sub-verb of `review`.
Verb add_review_show(CLI::App& review);
// A regular file opened for reading (`shown` names it in errors, exit 2):
// without waiting (a FIFO would block the open until a writer came), and
// nothing but a regular file is taken. `size` gets its size.
swarm::UniqueFd open_regular_file(const std::string& path, const std::string& shown, std::uint64_t* size);

Verb add_send(CLI::App& app);
Verb add_inbox(CLI::App& app);
Verb add_ack(CLI::App& app);
Verb add_ask(CLI::App& app);
Verb add_blob(CLI::App& app);
Verb add_hold(CLI::App& app);
Verb add_mcp(CLI::App& app);
Verb add_holds(CLI::App& app);
// The help topics (the pages of docs/), by name, comma-separated.
std::string topic_list();
// What `swarm help WORDS...` prints: the verb's --help, or a topic's page;
// nullopt when the words name neither.
std::optional<std::string> help_text(const CLI::App& root, const std::vector<std::string>& words);
// The values an option takes when it takes one of a set (its validator's
// "{a,b,c}"); empty otherwise.
std::vector<std::string> enumerated_values(const CLI::Option* option);
// The verbs (or sub-verbs) of `app` a user sees: hidden ones left out.
std::vector<const CLI::App*> verbs_of(const CLI::App& app);

}  // namespace cli
