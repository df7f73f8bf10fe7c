#include "swarm/workspace/bootstrap.h"

#include <unistd.h>


#include "kv/bucket.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/file_lock.h"
#include "swarm/base/log.h"
#include "swarm/base/secret.h"
#include "swarm/base/warnings.h"
#include "swarm/base/words.h"
#include "swarm/base/workspace_names.h"
#include "swarm/git/hub.h"
#include "swarm/workspace/bootstrap_store.h"
#include "swarm/workspace/embedded_server.h"
#include "swarm/workspace/store_shares.h"

namespace swarm {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr std::chrono::seconds kServerStartTimeout{15};
constexpr std::chrono::seconds kServerStopGrace{5};
// How long `up` waits for a running embedded server's JetStream to answer.
constexpr std::chrono::seconds kJetStreamProbe{3};
constexpr const char* kCorruptConfigAdvice =
    "This workspace ran no embedded nats-server, so `swarm up` cannot tell which NATS it used: run "
    "`swarm up --nats-url URL` (with --bucket, --replicas and --ttl as it had them)";
// Another `up` or `down` of this workspace runs at most about this long.
constexpr std::chrono::seconds kUpLockWait{60};

// Whether `up` ever started an embedded server here (its store or identity is there).
bool had_embedded_server(const Workspace& ws) {
  EmbeddedServer server(ws.nats_dir());
  std::error_code ec;
  return fs::exists(server.identity_file(), ec) || fs::exists(server.data_dir(), ec);
}

}  // namespace

namespace {

// `up` and `down` of one workspace run one at a time, so two of them never
// start two servers on one store, or stop a server the other just started.
FileLock lock_up(const Workspace& ws, const char* verb) {
  const SafeDir locks = ws.make_folder(kLocksFolder);
  auto lock = FileLock::acquire(locks, "up", std::string("swarm ") + verb, kUpLockWait, [&](const std::string& holder) {
    warn(log::format("waiting for another `swarm up` or `swarm down` of this workspace: {}", holder));
  });
  if (!lock)
    throw Error(Errc::conflict, "another `swarm up` or `swarm down` of this workspace is still running after " +
                                    std::to_string(kUpLockWait.count()) + "s (" + FileLock::holder_of(locks, "up") +
                                    "); try again when it is done");
  return std::move(*lock);
}

// Whether the JetStream of the workspace's embedded server at `url` answers,
// a write included: a server whose store filled up may still answer reads
// (nats-server 2.10 and later) and take no write even once space is back.
// The write is a key of the lease bucket that is no lease ("_probe..."),
// removed at once.
bool jetstream_answers(const Workspace& ws, const std::string& url, const std::string& lease_bucket) {
  kv::ConnectionOptions options;
  options.urls = kv::split_urls(url);
  options.connect_timeout = kJetStreamProbe;
  options.request_timeout = kJetStreamProbe;
  WorkspaceConfig embedded;
  embedded.nats_url = url;
  embedded.embedded = true;
  use_embedded_token(ws.nats_dir(), embedded, options);
  try {
    auto nats = kv::Connection::connect(options);
    if (!nats.jetstream_answers(kJetStreamProbe)) return false;
    auto bucket = kv::Bucket::open(nats, lease_bucket).with_budget(kJetStreamProbe);
    const std::string key = "_probe.up." + std::to_string(::getpid());
    bucket.erase(key, bucket.create(key, "{}"));
    return true;
  } catch (const kv::Error& e) {
    return e.kind() == kv::Errc::not_found;  // no bucket yet: JetStream answered that
  }
}

// Whether the embedded server that runs is kept, or started again (saying why).
bool keeps_running(const Workspace& ws, const ServerIdentity& running, const std::string& lease_bucket) {
  // A server started before workspaces had tokens lets anyone in: it is
  // started again, with the token.
  if (!running.token_auth) {
    warn(log::format("restarting the embedded nats-server (pid {}) so that it requires the workspace's token",
                     running.pid));
    return false;
  }
  // A server whose JetStream stopped (its store filled up) answers PINGs and
  // nothing else, and does not recover by itself once space is back.
  if (!running.url.empty() && !jetstream_answers(ws, running.url, lease_bucket)) {
    warn(log::format("restarting the embedded nats-server (pid {}): its JetStream did not answer (was its store full?)",
                     running.pid));
    return false;
  }
  return true;
}

// Reuses the embedded server that runs, else (re)starts it on its old port
// and data; stops any other server on the store (left by a killed or racing
// `up` of an older swarm).
void ensure_embedded_server(const Workspace& ws, UpResult& result) {
  WorkspaceConfig& config = result.config;
  EmbeddedServer server(ws.nats_dir());
  std::optional<ServerIdentity> running = server.running();
  if (running && !keeps_running(ws, *running, config.lease_bucket)) running.reset();
  if (running) {
    result.server_pid = running->pid;
    if (!running->url.empty()) config.nats_url = running->url;
    server.stop_others(running->pid, kServerStopGrace);
  } else {
    server.stop(kServerStopGrace);
    int port = config.nats_url.empty() ? 0 : port_of_url(config.nats_url);
    config.nats_url = server.start(port, kServerStartTimeout);
    swarm::log::debug("started the embedded nats-server at {}", config.nats_url);
    result.started_server = true;
    result.server_pid = server.recorded_pid();
  }
  config.embedded = true;
}

}  // namespace

namespace {

// The hub `up` makes ready: the one named by --hub, else the config's, else
// .swarm/hub.git. Moving a workspace to another hub is refused while this
// host has slot folders: their clones push to the old one.
void choose_hub(const Workspace& ws, const std::optional<HubLocation>& given, UpResult& result) {
  WorkspaceConfig& config = result.config;
  const std::string before = result.created_config ? "" : config.hub;
  if (!given) {
    if (config.hub.empty()) config.hub = ws.hub_dir().string();
    return;
  }
  config.hub = given->text;
  if (before.empty() || before == given->text) return;
  const std::string old_hub = parse_hub_location(before, "/").shown();
  auto slots = ws.folder_if_exists(kSlotsFolder);
  for (const auto& name : slots ? slots->list() : std::vector<std::string>{})
    throw Error(Errc::conflict,
                (old_hub == given->shown()
                     ? "the hub's URL changes only in its password, but"
                     : "this workspace's hub is " + old_hub + " and") +
                    std::string(" slot folders of this host clone it with the old URL (") +
                    name + " ...); close them before moving the workspace to " +
                    given->shown());
}

}  // namespace

std::string config_fix(const Workspace& ws, const Workspace::ConfigFile& file) {
  switch (file.state) {
    case Workspace::ConfigFile::State::unreadable: return "make " + ws.config_file().string() + " readable again";
    case Workspace::ConfigFile::State::corrupt:
      return had_embedded_server(ws) ? "swarm up   (keeps the corrupt file beside it, rebuilds it for the embedded "
                                       "nats-server)"
                                     : "swarm up --nats-url URL   (the workspace's NATS; with --bucket, --replicas, "
                                       "--ttl as it had them)";
    case Workspace::ConfigFile::State::missing:
    case Workspace::ConfigFile::State::good: break;
  }
  return "swarm up";
}

namespace {

// Bad options are refused before anything is made or started.
std::optional<HubLocation> require_valid(const UpOptions& options) {
  if (options.ttl && (*options.ttl < kMinSessionTtl || *options.ttl > kMaxSessionTtl))
    throw Error(Errc::bad_input, "--ttl " + format_duration(*options.ttl) + " is out of range: a session TTL is 1s to 1h");
  if (options.replicas && (*options.replicas < 1 || *options.replicas > 5))
    throw Error(Errc::bad_input, "--replicas " + std::to_string(*options.replicas) + " is out of range: use 1 to 5");
  if (options.nats_url) translating_kv([&] { kv::require_valid_urls(*options.nats_url); });
  if (options.check && !options.check->empty()) split_words(*options.check, "--check");
  if (options.bucket) translating_kv([&] { kv::require_valid_bucket_name(*options.bucket); });
  if (options.name) require_workspace_name(*options.name);
  std::optional<HubLocation> hub;
  if (options.hub) hub = parse_hub_location(*options.hub, fs::current_path());
  if (hub) hub->require_no_password_over_http();
  if (hub && !hub->remote()) Hub::require_can_be_at(hub->path());
  return hub;
}

// config.json as `up` starts from: the one there, a new one, or one rebuilt
// in place of a corrupt one (kept beside it); then the options given.
Workspace::ConfigFile read_config(const UpOptions& options, UpResult& result) {
  const Workspace& ws = result.workspace;
  WorkspaceConfig& config = result.config;
  auto file = ws.read_config();
  switch (file.state) {
    case Workspace::ConfigFile::State::good: config = file.config; break;
    case Workspace::ConfigFile::State::missing: result.created_config = true; break;
    case Workspace::ConfigFile::State::unreadable:
      throw Error(Errc::not_bootstrapped, file.problem + "; make it readable again");
    case Workspace::ConfigFile::State::corrupt:
      // Rebuilt when it is clear which NATS the workspace used: the one
      // named now, or its embedded server. The corrupt file is kept.
      if (!options.nats_url && !had_embedded_server(ws))
        throw Error(Errc::bad_input, file.problem + "; it is left as it is. " + kCorruptConfigAdvice);
      result.created_config = true;
      result.replaced_config = ws.config_file().string() + ".corrupt-" + format_compact_utc(std::chrono::system_clock::now());
      break;
  }
  // A workspace's name never changes: its records are where its name says.
  if (options.name && !result.created_config && *options.name != config.name)
    throw Error(Errc::bad_input,
                config.name.empty()
                    ? "--name " + *options.name + ": this workspace was made before workspaces had names and keeps the "
                          "shared names it was made with (swarm-sessions, swarm-events, ...); a name is given to a new "
                          "workspace only (see docs/operating.md, \"A workspace made before names\"); nothing was changed"
                    : "--name " + *options.name + ": this workspace is named " + config.name + ", and a workspace's "
                          "name never changes; nothing was changed");
  if (options.ttl) config.ttl = *options.ttl;
  if (options.replicas) config.replicas = *options.replicas;
  if (options.bucket) config.bucket = *options.bucket;
  if (options.ports) config.ports = *options.ports;
  if (options.check) config.check = *options.check;
  if (options.require_review) config.require_review = *options.require_review;
  if (options.blob_max_bytes) config.blob_max_bytes = *options.blob_max_bytes;
  if (options.holds) config.holds = *options.holds;
  return file;
}

}  // namespace

UpResult up(const UpOptions& options) {
  const std::optional<HubLocation> hub = require_valid(options);
  UpResult result{.workspace = Workspace::at(options.root), .config = {}};
  const Workspace& ws = result.workspace;
  fs::create_directories(ws.root());
  // .swarm/ is a real folder of this user, or up stops here (exit 2).
  SafeDir dot_swarm = SafeDir::make(ws.swarm_dir());
  // Keeps .swarm/ out of the workspace's own git status.
  dot_swarm.create_file(".gitignore", "*\n");
  FileLock lock = lock_up(ws, "up");
  // The secret `swarm serve` asks of every request, made once.
  ensure_secret(ws.make_folder(kServeFolder, 0700), kServeTokenName);

  WorkspaceConfig& config = result.config;
  const Workspace::ConfigFile file = read_config(options, result);
  // The workspace's own hub gone (deleted, or a workspace moved with a
  // config that named it by its old path): never replaced by a new, empty
  // one, which would hide every branch landed so far.
  if (file.state == Workspace::ConfigFile::State::good && !hub && !config.hub_location().remote() &&
      !Hub::exists_at(config.hub_location().path()))
    throw Error(Errc::not_bootstrapped,
                "the workspace's hub " + config.hub + " is missing: swarm never makes a new, empty hub in its place "
                "(the landed history would be lost from view). Restore it, or name the hub to use with `swarm up "
                "--hub PATH|URL`; nothing was changed");
  choose_hub(ws, hub, result);

  const bool embedded = !options.nats_url && (result.created_config || config.embedded);
  // Checked before a server is started: a refused `up` leaves nothing running.
  if (embedded && config.replicas != 1)
    throw Error(Errc::bad_input, "the embedded nats-server is a single node: --replicas must be 1 "
                                 "(use --nats-url with a cluster for more)");
  if (options.nats_url) {
    // The workspace moves to another server: its embedded one (if any) is no
    // longer what anyone talks to, and would be one that no `down` names.
    auto stopped = EmbeddedServer(ws.nats_dir()).stop(kServerStopGrace);
    if (!stopped.empty())
      warn(log::format("stopped this workspace's embedded nats-server (pid {}): the workspace now uses {}; its data "
                   "stays in {}", stopped.front(), kv::redact_urls(*options.nats_url), ws.nats_dir().string()));
    result.moved_nats = config.nats_url != *options.nats_url;
    config.nats_url = *options.nats_url;
    config.embedded = false;
  } else if (embedded) {
    ensure_embedded_server(ws, result);
  }
  try {
    finish_up(options, result);
  } catch (...) {
    // A server this call started and whose workspace it could not finish
    // would be one that no `swarm down` knows of.
    if (result.started_server) EmbeddedServer(ws.nats_dir()).stop(kServerStopGrace);
    throw;
  }
  return result;
}

DownResult down(const Workspace& workspace, std::chrono::milliseconds grace) {
  DownResult result;
  // Read, not required: a corrupt config.json does not keep a server running.
  auto file = workspace.read_config();
  result.embedded = file.state != Workspace::ConfigFile::State::good || file.config.embedded;
  FileLock lock = lock_up(workspace, "down");
  EmbeddedServer server(workspace.nats_dir());
  if (auto pid = server.running_pid()) result.pid = *pid;
  // Every server on this workspace's store: ours, and any an older race, or
  // a workspace since moved to another server, left running.
  auto stopped = server.stop(grace);
  result.stopped = !stopped.empty();
  if (result.stopped) result.embedded = true;
  if (!result.pid && !stopped.empty()) result.pid = stopped.front();
  return result;
}

}  // namespace swarm
