// The part of `up` that needs the server: the buckets and streams made or
// adopted, the workspace named and recorded, the hub seeded and marked,
// and config.json written last.
#include "swarm/workspace/bootstrap_store.h"

#include <unistd.h>

#include <set>

#include "kv/bucket.h"
#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/secret.h"
#include "swarm/base/text.h"
#include "swarm/base/warnings.h"
#include "swarm/base/workspace_names.h"
#include "swarm/git/hub.h"
#include "swarm/journal/journal.h"
#include "swarm/bus/blobs.h"
#include "swarm/bus/bus.h"
#include "swarm/bus/cursors.h"
#include "swarm/tasks/task_store.h"
#include "swarm/workspace/embedded_server.h"
#include "swarm/workspace/store_shares.h"

namespace swarm {

namespace fs = std::filesystem;

namespace {

// Lease records carry their own TTLs (at most 1h); the bucket's MaxAge only
// drops records abandoned for a day (the contract): a released lease's
// marker, which keeps its count of transitions, lives that long.
constexpr std::chrono::hours kLeaseBucketTtl{24};
// What swarm versions before 0.2 made it with.
constexpr std::chrono::hours kOldLeaseBucketTtl{1};
// How long the server's marker of an expiry stays (2.11+): long enough for
// every watcher to hear it; a key's create over it costs one more read.
constexpr std::chrono::minutes kExpiryMarkerTtl{1};

// "hub-seed.<pid>": the scratch folder an `up` seeds an empty hub in.
bool is_seed_scratch(const std::string& name) {
  const std::string prefix = "hub-seed.";
  return name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
         name.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
}

}  // namespace

void require_nats_urls(const std::string& comma_separated) {
  translating_kv([&] { kv::require_valid_urls(comma_separated); });
}

kv::NatsContext read_nats_context(const std::string& name) {
  return translating_kv([&] { return kv::read_nats_context(name); });
}

kv::Connection connect_nats(const kv::ConnectionOptions& options) {
  try {
    auto connection = kv::Connection::connect(options);
    swarm::log::phase("connected to NATS at " + connection.connected_url());
    return connection;
  } catch (const kv::Error& e) {
    if (e.kind() != kv::Errc::unavailable) throw from_kv(e);
    throw Error(Errc::unavailable, std::string(e.what()) +
                                       "; is the server running? (a workspace's own server: `swarm up` starts it)");
  }
}

namespace {

// A host joining a workspace that another host set up: the buckets are
// there, and their TTL and replicas are the workspace's (unless given).
void adopt_existing_buckets(const UpOptions& options, const kv::Connection& nats, UpResult& result) {
  WorkspaceConfig& config = result.config;
  std::optional<kv::BucketConfig> have;
  try {
    have = kv::Bucket::open(nats, config.bucket).config();
  } catch (const kv::Error& e) {
    if (e.kind() != kv::Errc::not_found) throw from_kv(e);
    return;
  }
  result.found_buckets = true;
  if (!options.ttl) config.ttl = have->ttl;
  if (!options.replicas) config.replicas = have->replicas;
}

// The session bucket, made or checked. One that differs from what is asked
// in its TTL alone has it changed in place when --ttl was given (its live
// sessions are judged by the new TTL from then on), and otherwise gives the
// workspace its TTL (another host changed it): its records are never lost.
void ensure_session_bucket(const UpOptions& options, const kv::Connection& nats, UpResult& result) {
  WorkspaceConfig& config = result.config;
  const kv::BucketConfig want{.name = config.bucket, .ttl = config.ttl, .replicas = config.replicas};
  try {
    kv::Bucket::ensure(nats, want);
    return;
  } catch (const kv::Error& e) {
    if (e.kind() != kv::Errc::conflict) throw;
    const kv::BucketConfig have = kv::Bucket::open(nats, config.bucket).config();
    kv::BucketConfig same_but_ttl = want;
    same_but_ttl.ttl = have.ttl;
    if (!kv::differences(same_but_ttl, have).empty()) throw;
    if (!options.ttl) {
      result.ttl_was = config.ttl;  // what this host's config said
      config.ttl = have.ttl;        // the workspace's, as another host set it
      return;
    }
    result.ttl_was = have.ttl;
    kv::Bucket::set_ttl(nats, config.bucket, config.ttl);
    result.ttl_changed = true;
  }
}

// Servers of a replicated workspace must be 2.10 or later: 2.9 lost
// acknowledged writes and let fencing tokens go backwards under partitions
// (adr/0023). Every URL given is asked (its greeting names its version), and
// the server connected to; nothing is made on a refused server.
void require_safe_servers(const UpOptions& options, const kv::ConnectionOptions& connection, const kv::Connection& nats,
                          UpResult& result) {
  if (result.config.replicas <= 1) return;
  std::vector<std::pair<std::string, std::string>> versions;  // url, version
  versions.emplace_back(nats.connected_url(), nats.server_version());
  for (const auto& url : connection.urls)
    versions.emplace_back(url, kv::server_version_at(url, std::chrono::milliseconds(2000)));
  std::set<std::string> seen;
  for (const auto& [url, version] : versions) {
    const std::string shown = kv::redact_urls(url);
    if (version.empty() || !kv::version_before(version, 2, 10) || !seen.insert(shown).second) continue;
    result.unsafe_servers.push_back("nats-server " + version + " at " + shown);
  }
  if (result.unsafe_servers.empty() || options.accept_unsafe_server) return;
  std::string named;
  for (const auto& s : result.unsafe_servers) named += (named.empty() ? "" : ", ") + s;
  throw Error(Errc::bad_input,
              "--replicas " + std::to_string(result.config.replicas) + " needs nats-server 2.10 or later on every node, "
              "but this cluster runs " + named + ": under partitions 2.9 loses acknowledged writes and lets fencing "
              "tokens go backwards. Upgrade the servers (2.15.2 is tested), or pass --accept-unsafe-server to run on "
              "them anyway; nothing was made");
}

// Whether the server has the bucket `name`.
bool has_bucket(const kv::Connection& nats, const std::string& name) {
  try {
    kv::Bucket::open(nats, name);
    return true;
  } catch (const kv::Error& e) {
    if (e.kind() == kv::Errc::not_found) return false;
    throw from_kv(e);
  }
}

// A new workspace's id: what tells two workspaces that took one name apart.
std::string fresh_workspace_id() { return random_secret().substr(0, 32); }

// The key of a named workspace's task bucket that says which workspace
// made it (its hub's mark's id): a workspace of another hub that took the
// same name is refused before it touches anything of it.
constexpr const char* kWorkspaceKey = "_workspace";

// The id the server's buckets of `config`'s name were made for; nullopt
// when none is recorded (new buckets, or none yet).
std::optional<std::string> recorded_workspace(const kv::Connection& nats, const WorkspaceConfig& config) {
  try {
    auto entry = kv::Bucket::open(nats, config.task_bucket).get(kWorkspaceKey);
    if (!entry) return std::nullopt;
    return entry->value;
  } catch (const kv::Error& e) {
    if (e.kind() == kv::Errc::not_found) return std::nullopt;
    throw from_kv(e);
  }
}

// Throws conflict when the server's buckets of the name belong to another
// workspace (another hub's mark).
void require_own_buckets(const kv::Connection& nats, const WorkspaceConfig& config, const Hub::WorkspaceMark& mark) {
  const auto recorded = recorded_workspace(nats, config);
  if (!recorded || *recorded == mark.id) return;
  throw Error(Errc::conflict, "the NATS server holds another workspace named " + config.name + " (made with another "
                                  "hub than " + config.hub_location().shown() + "): two workspaces cannot share a "
                                  "name on one server; give this one another with `swarm up --name NAME`; nothing "
                                  "was changed");
}

// Records the mark's id in the task bucket (made by now), unless one is there.
void record_workspace(const kv::Connection& nats, const WorkspaceConfig& config, const Hub::WorkspaceMark& mark) {
  try {
    kv::Bucket::open(nats, config.task_bucket).create(kWorkspaceKey, mark.id);
  } catch (const kv::Error& e) {
    if (e.kind() != kv::Errc::conflict) throw from_kv(e);
    require_own_buckets(nats, config, mark);
  }
}

// A new config's name (adr/0049): --name, else the one its hub is marked
// with (another host's workspace), else none when the hub is one that a
// workspace made before names works on (its slot branches there, its
// session bucket on the server), else a new one. A hub that is there is
// marked at once, so two hosts racing to make one workspace agree; a name
// whose buckets on the server another hub's workspace made is refused.
void choose_name(const UpOptions& options, const kv::Connection& nats, UpResult& result) {
  WorkspaceConfig& config = result.config;
  const HubLocation hub = config.hub_location();
  const bool hub_there = hub.remote() || Hub::exists_at(hub.path());
  const auto mark = hub_there ? Hub::workspace_mark(hub) : std::nullopt;
  if (mark && !is_valid_workspace_name(mark->name))
    throw Error(Errc::corrupt, "the hub " + hub.shown() + " is marked as a workspace with no valid name (its ref "
                                   "refs/swarm/workspace was not written by swarm); nothing was made");
  Hub::WorkspaceMark chosen{"", fresh_workspace_id()};
  if (options.name) {
    if (mark && mark->name != *options.name)
      throw Error(Errc::bad_input, "--name " + *options.name + ": the hub " + hub.shown() + " is workspace " +
                                       mark->name + "'s; give `--name " + mark->name + "` (or none) to join it, or "
                                       "another hub for a new workspace; nothing was made");
    chosen.name = *options.name;
    result.name_from = mark ? "hub" : "given";
  } else if (mark) {
    chosen.name = mark->name;
    result.name_from = "hub";
  } else if (hub_there && Hub::has_slot_branches(hub) && has_bucket(nats, config.bucket)) {
    result.name_from = "unnamed";
    return;
  } else {
    chosen.name = new_workspace_name(result.workspace.root().filename().string());
    result.name_from = "new";
  }
  if (mark) chosen = *mark;
  config.take_name(chosen.name);
  require_own_buckets(nats, config, chosen);
  // An empty hub is seeded first (Hub::ensure, below), then marked.
  if (hub_there && !mark && Hub::has_branches(hub)) {
    const auto won = Hub::mark_workspace(hub, chosen);
    if (won.name != chosen.name || won.id != chosen.id) {
      if (options.name && won.name != *options.name)
        throw Error(Errc::conflict, "another host marked the hub " + hub.shown() + " as workspace " + won.name +
                                        " meanwhile; nothing was made, run `swarm up` again without --name to join it");
      config.take_name(won.name);
      require_own_buckets(nats, config, won);
      chosen = won;
      result.name_from = "hub";
    }
  }
  config.workspace_id = chosen.id;
  if (options.bucket) config.bucket = *options.bucket;
}

// The lease bucket; an older swarm's is raised to a day, its data kept.
kv::Bucket ensure_lease_bucket(const kv::Connection& nats, const WorkspaceConfig& config) {
  const kv::BucketConfig want{.name = config.lease_bucket, .ttl = kLeaseBucketTtl, .replicas = config.replicas};
  try {
    return kv::Bucket::ensure(nats, want);
  } catch (const kv::Error& e) {
    if (e.kind() != kv::Errc::conflict) throw;
    auto have = kv::Bucket::open(nats, config.lease_bucket).config();
    kv::BucketConfig old = want;
    old.ttl = kOldLeaseBucketTtl;
    if (!kv::differences(old, have).empty()) throw;
    kv::Bucket::set_ttl(nats, config.lease_bucket, kLeaseBucketTtl);
    return kv::Bucket::open(nats, config.lease_bucket);
  }
}

// The streams and buckets of the workspace, each a share of the store.
void ensure_stores(const UpOptions& options, const kv::Connection& nats, const StoreShares& shares, UpResult& result) {
  const Workspace& ws = result.workspace;
  WorkspaceConfig& config = result.config;
  // The journal first: the server reserves its whole size, so it is the one
  // a small store refuses, and then nothing else is made (exit 9).
  try {
    result.journal_differs = Journal::ensure(nats, config.names(), config.replicas, options.events_max_age,
                                             options.events_max_bytes, shares.journal);
  } catch (const Error& e) {
    if (e.kind() != Errc::filesystem || !config.embedded) throw;
    throw Error(Errc::filesystem, std::string(e.what()) + "; the embedded server keeps its store in " +
                                      ws.nats_dir().string());
  }
  try {
    // The session bucket is made here as a plain bucket: the sessions in it are slots/' (a layer above).
    translating_kv([&] { ensure_session_bucket(options, nats, result); });
    translating_kv([&] { ensure_lease_bucket(nats, config); });
    // Sessions, leases and holds that end by their TTL are announced by the
    // server (2.11+; on 2.9 each host's clock judges them, as before).
    translating_kv([&] {
      kv::Bucket::announce_expiry(nats, config.bucket, kExpiryMarkerTtl);
      kv::Bucket::announce_expiry(nats, config.lease_bucket, kExpiryMarkerTtl);
    });
    // The task queue (swarm task): a workspace made before it gets it now.
    TaskStore::ensure(nats, config.task_bucket, config.replicas);
    // A task's record and its index hints commit together (2.12+, adr/0055).
    translating_kv([&] { kv::Bucket::allow_atomic(nats, config.task_bucket); });
    // Messages between agents: the bus, its cursors and its blobs (the same).
    result.bus_differs =
        Bus::ensure(nats, config.names(), config.replicas, options.bus_max_age, options.bus_max_bytes, shares.bus);
    Cursors::ensure(nats, config.names(), config.replicas);
    Blobs::ensure(nats, config.names(), config.replicas, static_cast<std::int64_t>(config.blob_store_max_bytes));
  } catch (const Error& e) {
    if (e.kind() != Errc::conflict) throw;
    throw Error(Errc::conflict, std::string(e.what()) +
                                    "; run `swarm up` with the bucket's settings (--ttl, --replicas), or delete "
                                    "the bucket when no session is live");
  }
}

// Seeding an empty hub builds its first commits in .swarm/hub-seed.<pid>,
// removed after. `up` runs alone (the up-lock): any other such folder is
// what a killed `up` left, and goes now.
void ensure_hub(const kv::Connection& nats, UpResult& result) {
  const Workspace& ws = result.workspace;
  WorkspaceConfig& config = result.config;
  const SafeDir dot_swarm = ws.swarm_folder();
  for (const auto& name : dot_swarm.list())
    if (is_seed_scratch(name)) dot_swarm.remove_tree(name);
  const fs::path scratch = ws.swarm_dir() / ("hub-seed." + std::to_string(::getpid()));
  Hub::ensure(config.hub_location(), ws.root(), scratch, &result.created_hub);
  // A hub made just now is marked now; one marked before keeps its mark,
  // and the buckets say which workspace's they are.
  if (!config.name.empty()) {
    if (config.workspace_id.empty()) config.workspace_id = fresh_workspace_id();
    const auto mark = Hub::mark_workspace(config.hub_location(), {config.name, config.workspace_id});
    if (mark.name != config.name || mark.id != config.workspace_id)
      throw Error(Errc::conflict, "the hub " + config.hub_location().shown() + " is marked as another workspace (" +
                                      printable(mark.name) + ") than this one (" + config.name + "): one hub is "
                                      "one workspace; give this workspace its own hub (`swarm up --hub`)");
    record_workspace(nats, config, mark);
  }
  try {
    result.added_remote = Hub::add_remote_to(ws.root(), config.hub_location());
  } catch (const Error& e) {
    warn(std::string("could not add remote `swarm` for the hub to this checkout: ") + e.what());
  }
}

}  // namespace

void finish_up(const UpOptions& options, UpResult& result) {
  const Workspace& ws = result.workspace;
  WorkspaceConfig& config = result.config;
  kv::ConnectionOptions connection = options.connection;
  connection.urls = kv::split_urls(config.nats_url);
  use_embedded_token(ws.nats_dir(), config, connection);
  kv::Connection nats = connect_nats(connection);
  if (result.created_config) choose_name(options, nats, result);
  else result.name_from = config.name.empty() ? "unnamed" : "kept";
  // A new config, or a workspace moving to another NATS: the buckets there say how they run.
  if (result.created_config || result.moved_nats) adopt_existing_buckets(options, nats, result);
  require_safe_servers(options, connection, nats, result);
  result.server = workspace_server(nats, config.embedded ? ws.nats_dir() : fs::path());
  // Each stream's default a share of the store, so that none takes the room
  // of the others (adr/0051).
  const StoreShares shares = store_shares(nats, config.embedded ? EmbeddedServer(ws.nats_dir()).data_dir() : fs::path());
  result.store_room = shares.room;
  if (options.blob_store_max_bytes) config.blob_store_max_bytes = *options.blob_store_max_bytes;
  else if (config.blob_store_max_bytes == 0) config.blob_store_max_bytes = static_cast<std::uint64_t>(shares.blobs);
  ensure_stores(options, nats, shares, result);
  result.journal = Journal(nats, config.names()).state();
  result.bus = Bus(nats, config.names()).state();
  ensure_hub(nats, result);
  if (!result.replaced_config.empty()) {
    std::string why;
    const SafeDir dot_swarm = ws.swarm_folder();
    auto corrupt = dot_swarm.read_file(kConfigName, 1 << 20, &why);
    if (!corrupt)
      throw Error(Errc::filesystem, "cannot keep the corrupt " + ws.config_file().string() + " as " +
                                        result.replaced_config + ": " + why);
    dot_swarm.write_file(fs::path(result.replaced_config).filename().string(), *corrupt, 0600);
  }
  ws.save_config(config);
}

}  // namespace swarm
