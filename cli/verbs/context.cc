#include "cli/verbs/context.h"

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

swarm::ExpectedSession session_of(const std::string& session) {
  if (session.empty()) return std::nullopt;
  return std::stoull(session);
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
