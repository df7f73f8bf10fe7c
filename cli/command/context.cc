#include "cli/command/context.h"

#include <mutex>

#include <map>

#include <filesystem>

#include "kv/bucket.h"
#include "kv/nats_context.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/host.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/workspace/bootstrap.h"
#include "swarm/workspace/embedded_server.h"

namespace cli {


CLI::Validator fencing_token_validator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        // Digits only: strtoull would take "-1", "+7" or "0x47" and wrap or guess.
        bool digits = !value.empty() && value.size() <= 19 && value.find_first_not_of("0123456789") == std::string::npos;
        if (!digits || std::strtoull(value.c_str(), nullptr, 10) == 0)
          return "--token " + value + " is not a fencing token: give the number `swarm lease acquire` printed";
        return {};
      },
      "N");
}

CLI::Validator decimal_in(std::int64_t min, std::int64_t max) {
  return CLI::Validator(
      [min, max](std::string& value) -> std::string {
        const std::size_t sign = min < 0 && !value.empty() && value.front() == '-' ? 1 : 0;
        if (value.size() <= sign || value.size() > 19 + sign ||
            value.find_first_not_of("0123456789", sign) != std::string::npos)
          return "'" + swarm::printable(value.substr(0, 40)) + "' is not a whole number in decimal digits (no " +
                 (min < 0 ? "spaces" : "sign, spaces") + ", 0x or other bases)";
        const auto first = value.find_first_not_of('0', sign);
        value.erase(sign, (first == std::string::npos ? value.size() - 1 : first) - sign);
        const std::int64_t n = std::stoll(value);
        if (n < min || n > max)
          return "'" + value + "' is out of range: " + std::to_string(min) + " to " + std::to_string(max);
        return {};
      },
      "", "DECIMAL");
}

CLI::Validator slot_name_validator() { return validator_of(swarm::require_slot_name, "SLOT"); }
CLI::Validator task_id_validator() { return validator_of(swarm::require_task_id, "TASK"); }
CLI::Validator duration_validator() {
  return validator_of([](const std::string& text) { swarm::parse_duration(text); }, "DUR");
}

CLI::Option* add_slot_option(CLI::App& cmd, std::string& slot, const std::string& help) {
  return cmd
      .add_option("--slot", slot,
                  help + " (default: $SWARM_SLOT, else the slot whose worktree holds the current folder)")
      ->envname("SWARM_SLOT")
      ->option_text("SLOT")
      ->check(slot_name_validator());
}

CLI::Option* add_session_option(CLI::App& cmd, std::string& session) {
  return cmd
      .add_option("--session", session,
                  "Act only while the slot's session is this one (the session_token join printed); a replaced "
                  "agent gets exit 3 and changes nothing")
      ->envname("SWARM_SESSION")
      ->option_text("TOKEN")
      ->check(validator_of(
          [](const std::string& text) {
            if (text.empty() || text.size() > 16 || text.find_first_not_of("0123456789") != std::string::npos ||
                std::stoull(text) == 0)
              throw swarm::Error(swarm::Errc::bad_input, "bad session token '" + swarm::printable(text) +
                                                             "': a session token is a positive whole number, as "
                                                             "`swarm join --json` prints it");
          },
          "TOKEN"));
}

swarm::ExpectedSession session_of(const std::string& session) {
  if (session.empty()) return std::nullopt;
  return std::stoull(session);
}

void add_global_options(CLI::App& app, Globals& g) {
  app.add_option("--workspace", g.workspace, "Workspace folder (default: the nearest folder up with a .swarm/)")
      ->envname("SWARM_WORKSPACE")
      ->option_text("DIR");
  app.add_option("--nats-url", g.nats_url, "NATS server URL(s), comma-separated (default: the workspace's)")
      ->envname("NATS_URL")
      ->option_text("URL[,URL...]")
      ->check(validator_of(swarm::require_nats_urls, "URL"));
  app.add_option("--bucket", g.bucket, "Session bucket (default: the workspace's, else swarm-sessions)")
      ->check(validator_of(kv::require_valid_bucket_name, "NAME"));
  app.add_flag("--json", g.json, "Print one JSON document (schema swarm.<verb>.v1); errors as swarm.error.v1");
  app.add_option("--timeout", g.timeout, "How long a verb waits for NATS in all, e.g. 5s, 500ms")
      ->capture_default_str()
      ->option_text("DUR")
      ->check(duration_validator());
  // Credentials are read as the nats CLI reads them: a flag, else its
  // environment variable, else the --context's field. None needs to be on a
  // command line, where any user of the host could read it.
  app.add_option("--context", g.context, "A nats CLI context to take the server, credentials and TLS files from")
      ->envname("NATS_CONTEXT")
      ->option_text("NAME");
  app.add_option("--creds", g.creds, "NATS credentials file")->envname("NATS_CREDS")->option_text("FILE");
  app.add_option("--nkey", g.nkey, "NATS user nkey seed file")->envname("NATS_NKEY")->option_text("FILE");
  app.add_option("--user", g.user, "NATS user")->envname("NATS_USER");
  app.add_option("--password", g.password, "NATS password (better: $NATS_PASSWORD, or a --context)")
      ->envname("NATS_PASSWORD");
  app.add_option("--nats-token", g.token, "NATS auth token (`--token` on the lease verbs is a fencing token)")
      ->envname("NATS_TOKEN");
  app.add_option("--tls-ca", g.tls_ca, "CA certificate file (turns TLS on)")->envname("NATS_CA")->option_text("FILE");
  app.add_option("--tls-cert", g.tls_cert, "Client certificate file (with --tls-key)")
      ->envname("NATS_CERT")
      ->option_text("FILE");
  app.add_option("--tls-key", g.tls_key, "Client key file (with --tls-cert)")->envname("NATS_KEY")->option_text("FILE");
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
  return swarm::Workspace::find(globals_.workspace, swarm::current_folder());
}

std::string Context::slot_of(const std::string& given) const {
  if (!given.empty()) return given;
  // .swarm/slots/<slot>/wt, or a folder below it, of the workspace found.
  try {
    std::error_code ec;
    const auto slots = std::filesystem::weakly_canonical(workspace().slots_dir(), ec);
    const auto cwd = swarm::current_folder();
    const auto here = cwd ? cwd->lexically_relative(slots) : std::filesystem::path();
    auto part = here.begin();
    if (!ec && part != here.end() && *part != ".." && *part != "." && std::next(part) != here.end() &&
        *std::next(part) == swarm::kWorktreeName && swarm::is_valid_slot_name(part->string()))
      return part->string();
  } catch (const swarm::Error&) {
    // No workspace here: then no slot either, which is what to say.
  }
  throw swarm::Error(swarm::Errc::bad_input,
                     "no slot: give --slot SLOT, set $SWARM_SLOT, or run this inside a slot's worktree "
                     "(.swarm/slots/<slot>/wt)");
}

kv::ConnectionOptions Context::connection_options(const swarm::WorkspaceConfig* config) const {
  kv::ConnectionOptions o = auth_options();
  // The workspace's server unless one is named; a context's URL only where
  // there is no workspace (a lock between hosts that share only NATS).
  std::string urls = !globals_.nats_url.empty() ? globals_.nats_url
                     : config                   ? config->nats_url
                                                : nats_context().url;
  o.urls = kv::split_urls(urls);
  if (o.urls.empty())
    throw swarm::Error(swarm::Errc::bad_input, "no NATS URL: pass --nats-url, set NATS_URL, or name a --context");
  swarm::require_nats_urls(urls);
  if (config) swarm::use_embedded_token(workspace().nats_dir(), *config, o);
  return o;
}

std::string Context::explained(swarm::Errc kind, const std::string& message) const {
  // A store that refused a write as full (exit 9) says where it is.
  const bool store_full =
      kind == swarm::Errc::filesystem && message.find(swarm::kStoreFullNote) != std::string::npos;
  if ((kind != swarm::Errc::unavailable && !store_full) || !globals_.nats_url.empty()) return message;
  try {
    const swarm::Workspace ws = workspace();
    const auto file = ws.read_config();
    if (file.state != swarm::Workspace::ConfigFile::State::good) return message;
    const std::string trouble = store_full ? swarm::embedded_store_full(ws.nats_dir(), file.config)
                                           : swarm::embedded_trouble(ws.nats_dir(), file.config);
    return trouble.empty() ? message : message + "; " + trouble;
  } catch (const std::exception&) {
    return message;  // no workspace to say more of
  }
}

const kv::NatsContext& Context::nats_context() const {
  if (!nats_context_) {
    nats_context_.emplace();
    if (!globals_.context.empty()) nats_context_ = swarm::read_nats_context(globals_.context);
  }
  return *nats_context_;
}

kv::ConnectionOptions Context::auth_options() const {
  kv::ConnectionOptions o;
  o.connect_timeout = timeout();
  o.request_timeout = timeout();
  // A verb waits on NATS for --timeout in all, however many requests it
  // makes and retries through a failover.
  o.total_wait = timeout();
  const kv::NatsContext& c = nats_context();
  auto pick = [](const std::string& given, const std::string& from_context) { return given.empty() ? from_context : given; };
  // A credential given by flag or environment replaces the context's
  // credentials as a whole (a user from one and a password from the other
  // would be nobody's).
  const bool given = !globals_.user.empty() || !globals_.password.empty() || !globals_.token.empty() ||
                     !globals_.creds.empty() || !globals_.nkey.empty();
  o.user = given ? globals_.user : c.user;
  o.password = given ? globals_.password : c.password;
  o.token = given ? globals_.token : c.token;
  o.creds_file = given ? globals_.creds : c.creds;
  o.nkey_file = given ? globals_.nkey : c.nkey;
  o.tls_ca = pick(globals_.tls_ca, c.ca);
  o.tls_cert = pick(globals_.tls_cert, c.cert);
  o.tls_key = pick(globals_.tls_key, c.key);
  return o;
}

const swarm::HostIdentity& Context::me() const {
  if (!me_) me_ = swarm::HostIdentity::detect();
  return *me_;
}

namespace {

// swarm mcp: one connection per server and credentials, for every Context.
std::mutex g_shared_mu;
std::map<std::string, kv::Connection>* g_shared = nullptr;

std::string connection_key(const kv::ConnectionOptions& o) {
  std::string key;
  for (const auto& u : o.urls) key += u + ",";
  for (const std::string* part : {&o.user, &o.password, &o.token, &o.creds_file, &o.nkey_file, &o.tls_ca, &o.tls_cert,
                                  &o.tls_key})
    key += "\n" + *part;
  return key;
}

}  // namespace

void share_connections() {
  std::lock_guard lock(g_shared_mu);
  if (g_shared == nullptr) g_shared = new std::map<std::string, kv::Connection>();  // lives as long as the process
}

kv::Connection Context::connect(kv::ConnectionOptions options) const {
  {
    std::lock_guard lock(g_shared_mu);
    if (g_shared == nullptr) return swarm::connect_nats(options);
  }
  // Kept for later calls: no total wait (each request still has --timeout).
  options.total_wait = std::chrono::milliseconds(0);
  const std::string key = connection_key(options);
  std::lock_guard lock(g_shared_mu);
  // One that is down (closed after its reconnects ran out, or reconnecting)
  // is replaced: a server that came back may be on another port.
  if (auto it = g_shared->find(key); it != g_shared->end()) {
    if (it->second.connected()) return it->second;
    g_shared->erase(it);
  }
  kv::Connection made = swarm::connect_nats(options);
  g_shared->emplace(key, made);
  return made;
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
  connection_ = connect(options);
  auto store = swarm::LeaseStore::open(*connection_, config ? config->names() : swarm::WorkspaceNames::unnamed());
  return config ? store.with_watermark(watermark_of(*config)) : store;
}

swarm::SlotLifecycle Context::lifecycle() const {
  timeout();  // a bad --timeout is bad input before any I/O
  swarm::Workspace ws = workspace();
  // The hub is checked where it is used (join, commit, close): evict works
  // on NATS alone.
  const swarm::WorkspaceConfig config = config_of(ws);
  auto [store, leases] = sessions_of(config);
  return swarm::SlotLifecycle(ws, config, std::move(store), std::move(leases), me());
}

swarm::Landing Context::landing(bool lives_on) const {
  timeout();  // a bad --timeout is bad input before any I/O
  swarm::Workspace ws = workspace();
  const swarm::WorkspaceConfig config = config_of(ws);
  kv::ConnectionOptions options = connection_options(&config);
  if (lives_on) options.total_wait = std::chrono::milliseconds(0);
  connection_ = connect(options);
  const auto watermark = watermark_of(config);
  swarm::Landing landing(ws, config.hub_location(),
                         swarm::SessionStore::open(*connection_, config.bucket).with_watermark(watermark),
                         swarm::LeaseStore::open(*connection_, config.names()).with_watermark(watermark), me());
  landing.use_tasks(config.task_bucket, config.require_review);
  return landing;
}

Context::Sessions Context::sessions_of(const swarm::WorkspaceConfig& config) const {
  connection_ = connect(connection_options(&config));
  const auto watermark = watermark_of(config);
  // Bound with no round trip: evict and status may never touch a task lease.
  swarm::LeaseStore leases = swarm::LeaseStore::bind(*connection_, config.names()).with_watermark(watermark);
  swarm::SessionStore store = swarm::SessionStore::open(*connection_, config.bucket).with_watermark(watermark);
  return {std::move(store), std::move(leases)};
}

Context::Tasks Context::tasks() const {
  timeout();  // a bad --timeout is bad input before any I/O
  const swarm::WorkspaceConfig config = config_of(workspace());
  connection_ = connect(connection_options(&config));
  return {swarm::TaskStore::open(*connection_, config.task_bucket), swarm::Journal(*connection_, config.names())};
}

Context::Messages Context::messages(bool lives_on) const {
  timeout();  // a bad --timeout is bad input before any I/O
  swarm::WorkspaceConfig config = config_of(workspace());
  kv::ConnectionOptions options = connection_options(&config);
  if (lives_on) options.total_wait = std::chrono::milliseconds(0);
  connection_ = connect(options);
  const swarm::WorkspaceNames names = config.names();
  return {std::move(config), swarm::Bus(*connection_, names), swarm::Cursors(*connection_, names),
          swarm::Blobs(*connection_, names)};
}

std::string Context::task_bucket() const { return config_of(workspace()).task_bucket; }

swarm::WorkspaceNames Context::names() const { return config_of(workspace()).names(); }

std::optional<swarm::TaskStore> Context::queue_if_exists() const {
  const swarm::WorkspaceConfig config = config_of(workspace());
  if (!connection_) connection_ = connect(connection_options(&config));
  return swarm::TaskStore::open_if_exists(*connection_, config.task_bucket);
}

Context::Sessions Context::sessions() const {
  timeout();  // a bad --timeout is bad input before any I/O
  return sessions_of(config_of(workspace()));
}

std::shared_ptr<const swarm::TokenWatermark> Context::watermark_of(const swarm::WorkspaceConfig& config) const {
  // The workspace's own NATS only: another server's buckets are not the
  // ones its tokens came from.
  if (!globals_.nats_url.empty() && kv::split_urls(globals_.nats_url) != kv::split_urls(config.nats_url)) return nullptr;
  return workspace().token_watermark();
}

swarm::WorkspaceConfig Context::config_of(const swarm::Workspace& ws) const {
  swarm::WorkspaceConfig config = ws.load_config();
  if (!globals_.bucket.empty()) config.bucket = globals_.bucket;  // --bucket
  return config;
}

}  // namespace cli
