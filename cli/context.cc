#include "cli/context.h"

#include <filesystem>

#include "kv/bucket.h"
#include "swarm/bootstrap.h"
#include "swarm/duration.h"
#include "swarm/error.h"
#include "swarm/host.h"
#include "swarm/names.h"

namespace cli {

namespace {
// Runs a check that throws (swarm::Error or kv::Error) and hands its message
// to CLI11 ("" means valid), so bad values stop the parse before any I/O.
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
}  // namespace

CLI::Validator slot_name_validator() { return validator_of(swarm::require_slot_name, "SLOT"); }
CLI::Validator task_id_validator() { return validator_of(swarm::require_task_id, "TASK"); }
CLI::Validator duration_validator() {
  return validator_of([](const std::string& text) { swarm::parse_duration(text); }, "DUR");
}

void add_global_options(CLI::App& app, Globals& g) {
  app.add_option("--workspace", g.workspace, "Workspace folder (default: the nearest folder up with a .swarm/)")
      ->envname("SWARM_WORKSPACE")
      ->option_text("DIR");
  app.add_option("--nats-url", g.nats_url, "NATS server URL(s), comma-separated (default: the workspace's)")
      ->envname("NATS_URL")
      ->option_text("URL[,URL...]")
      ->check(validator_of(kv::require_valid_urls, "URL"));
  app.add_option("--bucket", g.bucket, "Session bucket (default: the workspace's, else swarm-sessions)")
      ->check(validator_of(kv::require_valid_bucket_name, "NAME"));
  app.add_flag("--json", g.json, "Print one JSON document (schema swarm.<verb>.v1); errors as swarm.error.v1");
  app.add_option("--timeout", g.timeout, "How long a verb waits for NATS in all, e.g. 5s, 500ms")
      ->capture_default_str()
      ->option_text("DUR")
      ->check(duration_validator());
  app.add_option("--creds", g.creds, "NATS credentials file")->option_text("FILE");
  app.add_option("--user", g.user, "NATS user");
  app.add_option("--password", g.password, "NATS password");
  app.add_option("--nats-token", g.token, "NATS auth token (`--token` on the lease verbs is a fencing token)")
      ->envname("NATS_TOKEN");
  app.add_option("--tls-ca", g.tls_ca, "CA certificate file (turns TLS on)")->option_text("FILE");
  app.add_option("--tls-cert", g.tls_cert, "Client certificate file (with --tls-key)")->option_text("FILE");
  app.add_option("--tls-key", g.tls_key, "Client key file (with --tls-cert)")->option_text("FILE");
  app.add_option("--log-level", g.log_level, "trace, debug, info, warn, error or off")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
}

std::chrono::milliseconds Context::timeout() const {
  auto t = swarm::parse_duration(globals_.timeout);
  if (t.count() <= 0) throw swarm::Error(swarm::Errc::bad_input, "--timeout " + globals_.timeout + " is too short: it must be at least 1ms");
  return t;
}

swarm::Workspace Context::workspace() const {
  return swarm::Workspace::find(globals_.workspace, std::filesystem::current_path());
}

kv::ConnectionOptions Context::connection_options(const swarm::WorkspaceConfig* config) const {
  kv::ConnectionOptions o = auth_options();
  std::string urls = !globals_.nats_url.empty() ? globals_.nats_url : config ? config->nats_url : "";
  o.urls = kv::split_urls(urls);
  if (o.urls.empty())
    throw swarm::Error(swarm::Errc::bad_input, "no NATS URL: pass --nats-url or set NATS_URL");
  return o;
}

kv::ConnectionOptions Context::auth_options() const {
  kv::ConnectionOptions o;
  o.connect_timeout = timeout();
  o.request_timeout = timeout();
  // A verb waits on NATS for --timeout in all, however many requests it
  // makes and retries through a failover.
  o.total_wait = timeout();
  o.user = globals_.user;
  o.password = globals_.password;
  o.token = globals_.token;
  o.creds_file = globals_.creds;
  o.tls_ca = globals_.tls_ca;
  o.tls_cert = globals_.tls_cert;
  o.tls_key = globals_.tls_key;
  return o;
}

const swarm::HostIdentity& Context::me() const {
  if (!me_) me_ = swarm::HostIdentity::detect();
  return *me_;
}

swarm::LeaseStore Context::leases(bool lives_on) const {
  timeout();  // a bad --timeout is bad input before any I/O
  std::optional<swarm::WorkspaceConfig> config;
  try {
    config = workspace().load_config();
  } catch (const swarm::Error& e) {
    // Leases need no workspace when a server is named: a lock across hosts
    // that share nothing but NATS.
    if (e.kind() != swarm::Errc::not_bootstrapped || globals_.nats_url.empty()) throw;
  }
  kv::ConnectionOptions options = connection_options(config ? &*config : nullptr);
  if (lives_on) options.total_wait = std::chrono::milliseconds(0);
  connection_ = swarm::connect_nats(options);
  return swarm::LeaseStore::open(*connection_, config ? config->lease_bucket : swarm::kDefaultLeaseBucket);
}

swarm::SlotLifecycle Context::lifecycle() const {
  timeout();  // a bad --timeout is bad input before any I/O
  swarm::Workspace ws = workspace();
  // The hub is checked where it is used (join, commit, close): status and
  // evict work on NATS alone.
  swarm::WorkspaceConfig config = ws.load_config();
  if (!globals_.bucket.empty()) config.bucket = globals_.bucket;
  connection_ = swarm::connect_nats(connection_options(&config));
  swarm::SessionStore store = swarm::SessionStore::open(*connection_, config.bucket);
  // Bound with no round trip: status and evict may never touch a task lease.
  auto leases = swarm::LeaseStore::bind(*connection_, config.lease_bucket);
  return swarm::SlotLifecycle(ws, config, std::move(store), std::move(leases), me());
}

}  // namespace cli
