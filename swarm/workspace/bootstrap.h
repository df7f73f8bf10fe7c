// `swarm up` and `swarm down`: make a workspace ready (its .swarm/ folder,
// config, hub, buckets and, by default, its own nats-server), and stop that
// server again. Both are idempotent.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kv/connection.h"
#include "kv/nats_context.h"
#include "kv/stream.h"
#include "swarm/workspace/server_release.h"
#include "swarm/workspace/workspace.h"

namespace swarm {

struct UpOptions {
  std::filesystem::path root;                      // the workspace folder
  std::optional<std::string> nats_url;             // external NATS (comma-separated); empty: embedded
  std::optional<std::chrono::milliseconds> ttl;    // default: the config's, else 5m
  std::optional<int> replicas;                     // default: the config's, else 1
  std::optional<std::string> bucket;               // default: the config's, else the workspace's own
  // The workspace's name on its server (a new workspace: this, else the
  // one its hub is marked with, else a new one; an existing one keeps its
  // own, and one made before names keeps having none).
  std::optional<std::string> name;
  std::optional<std::string> hub;                  // a path or URL; default: the config's, else .swarm/hub.git
  // The journal's limits (stream swarm-events): given, they are applied to
  // an existing stream too; else a new one keeps 30 days and 1 GiB.
  std::optional<std::chrono::milliseconds> events_max_age;
  std::optional<std::int64_t> events_max_bytes;
  kv::ConnectionOptions connection;                // auth, TLS, timeouts (urls are filled in here)
  // Replicas on servers older than 2.10 are refused (they lose acknowledged
  // writes under partitions) unless this says to run on them all the same.
  bool accept_unsafe_server = false;
  std::optional<PortRange> ports;                  // default: the config's, else none
  // The check every land runs (`up --check 'CMD ...'`): given, it replaces
  // the config's ("" removes it); else the config's is kept.
  std::optional<std::string> check;
  // Whether a task closed `success` waits for a review before it lands
  // (`up --require-review` / `--no-require-review`); else the config's.
  std::optional<bool> require_review;
  // The message bus's limits (stream swarm-bus): given, applied to an
  // existing stream too; else a new one keeps 7 days and 256 MiB.
  std::optional<std::chrono::milliseconds> bus_max_age;
  std::optional<std::int64_t> bus_max_bytes;
  // What one blob may weigh; else the config's, else 1 GiB.
  std::optional<std::uint64_t> blob_max_bytes;
  // What the blob store may hold in all; else the config's, else a share of
  // the server's store (store_shares.h), kept in the config.
  std::optional<std::uint64_t> blob_store_max_bytes;
  std::optional<HoldPolicy> holds;  // up --holds warn|refuse
};

struct UpResult {
  Workspace workspace;
  WorkspaceConfig config;
  bool created_config = false;
  std::string replaced_config;  // where a corrupt config.json was kept, when up rebuilt it
  bool created_hub = false;     // made, or an empty one seeded
  bool found_buckets = false;   // a new config took the buckets' TTL and replicas (made by another host)
  // Where the workspace's name came from: "kept" (its config's), "given"
  // (--name), "hub" (the hub's mark: another host's workspace joined),
  // "new", or "unnamed" (one made before names, joined or kept as it is).
  std::string name_from;
  bool moved_nats = false;      // --nats-url named another NATS than the config's
  // When the session bucket's TTL was not the config's: the bucket's before
  // it was changed in place to --ttl (ttl_changed), or without --ttl the
  // config's before it took the bucket's.
  std::optional<std::chrono::milliseconds> ttl_was;
  bool ttl_changed = false;
  bool added_remote = false;    // remote `swarm` for the hub added to the workspace's git checkout
  bool started_server = false;  // an embedded server was (re)started by this call
  std::optional<int> server_pid;
  std::optional<kv::StreamStatus> journal;     // the journal's stream as up left it
  std::vector<std::string> journal_differs;    // how it differs from what was asked (replicas are kept)
  std::optional<kv::StreamStatus> bus;         // the message bus's stream as up left it
  std::vector<std::string> bus_differs;
  std::optional<std::uint64_t> store_room;     // the room the server's store has, when it could be told
  // "nats-server 2.9.10 at nats://…": servers too old for the replicas, taken
  // only with accept_unsafe_server.
  std::vector<std::string> unsafe_servers;
  WorkspaceServer server;  // the server the workspace runs on, and what it lacks
};

UpResult up(const UpOptions& options);

// The command that repairs the workspace's config.json, given what read_config found.
std::string config_fix(const Workspace& ws, const Workspace::ConfigFile& file);

struct DownResult {
  bool embedded = false;  // false: the workspace uses an external NATS; nothing to stop
  bool stopped = false;   // false: the embedded server was not running
  std::optional<int> pid;
};

DownResult down(const Workspace& workspace, std::chrono::milliseconds grace);

// Connects with swarm's error kinds: unavailable (exit 7) or bad_input.
kv::Connection connect_nats(const kv::ConnectionOptions& options);
// A comma-separated list of NATS URLs, checked before any I/O: bad_input naming the bad one.
void require_nats_urls(const std::string& comma_separated);
// The nats CLI's context `name` (--context): bad_input or not_found naming it.
kv::NatsContext read_nats_context(const std::string& name);

}  // namespace swarm
