// The nats-server that `swarm up` starts when no --nats-url is given (the one
// choose_nats_server picks: server_release.h),
// JetStream on, 127.0.0.1 only, data, log and pid under .swarm/nats/. It
// outlives the `swarm up` that started it; `swarm down` stops it.
//
// A pid alone does not name our server: after a reboot or a crash the pid in
// nats.pid may belong to anyone. Our server is the process that runs the
// recorded executable with this workspace's store (-sd) and started at the
// recorded time; only such a process is ever reused or signalled.
//
// The server is the workspace's alone: it requires a random token, kept in
// .swarm/nats/token (0600) and given to it in a config file (0600), never on
// its command line; every verb of the workspace sends it (adr/0018).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kv/connection.h"
#include "swarm/base/safe_dir.h"

namespace swarm {

struct WorkspaceConfig;

// What identifies the server `up` started (.swarm/nats/server.json).
struct ServerIdentity {
  pid_t pid = 0;
  unsigned long long start_ticks = 0;  // /proc/<pid>/stat starttime: a reused pid has another
  std::string exe;                     // the executable it runs
  std::string url;
  bool token_auth = false;             // started with the workspace's token
  std::string version;                 // what `nats-server --version` said ("" unknown)
  bool sync_always = false;            // started syncing every write (2.10+): a crash loses nothing acknowledged
};

class EmbeddedServer {
 public:
  explicit EmbeddedServer(std::filesystem::path dir) : dir_(std::move(dir)) {}

  std::filesystem::path pid_file() const { return dir_ / "nats.pid"; }
  std::filesystem::path identity_file() const { return dir_ / "server.json"; }
  std::filesystem::path log_file() const { return dir_ / "nats.log"; }
  std::filesystem::path data_dir() const { return dir_ / "data"; }
  std::filesystem::path token_file() const { return dir_ / "token"; }
  std::filesystem::path config_file() const { return dir_ / "server.conf"; }

  // Whether our server (running()) itself listens on `port`: the only server
  // the workspace's token may be sent to. Another local user could listen on
  // the port while ours is down.
  bool owns_port(int port) const;

  // The version of the nats-server that last ran the store, as server.json
  // recorded it ("" when none did, or it did not say).
  std::string recorded_version() const;

  // The workspace's token, nullopt when `up` has made none yet.
  std::optional<std::string> token() const;
  // The token, made (random, 0600) when there is none yet.
  std::string ensure_token() const;

  // Our server, when the process recorded is still it and alive.
  std::optional<ServerIdentity> running() const;
  std::optional<pid_t> running_pid() const;
  // The pid named by the pid file, alive or not (nullopt when there is no file).
  std::optional<pid_t> recorded_pid() const;
  // Every nats-server process whose store is this workspace's: ours, and
  // any left by an earlier `up` that was killed or raced another.
  std::vector<pid_t> all_on_store() const;

  // Starts the server with the token on `port` (0: pick a free one; a taken port is replaced
  // by a free one), records its identity, and waits up to `timeout` until it
  // answers. Returns its URL. Throws unavailable when nats-server is missing,
  // exits, or never answers.
  std::string start(int port, std::chrono::milliseconds timeout);

  // SIGTERM to every server on this store, then SIGKILL after `grace`.
  // Returns the pids it stopped (none: nothing was running).
  std::vector<pid_t> stop(std::chrono::milliseconds grace) const;
  // The same for every server on this store except `keep`.
  std::vector<pid_t> stop_others(pid_t keep, std::chrono::milliseconds grace) const;

 private:
  // Forks and execs `program` on `port` detached, and writes the pid file.
  pid_t launch(const std::string& program, int port) const;
  // The folder, made when missing (0700: it holds the token).
  SafeDir folder() const;

  std::filesystem::path dir_;
};

// A TCP port on 127.0.0.1 that nobody listens on right now.
int free_loopback_port();
bool port_is_free(int port);
// The port of "nats://host:port" (0 when there is none).
int port_of_url(const std::string& url);

// Why a verb could not use the workspace's embedded server, as one sentence
// with what to do ("" when the workspace runs none): not running, its store's
// filesystem full (JetStream stops when it cannot write, and does not come
// back by itself), or its JetStream not answering.
std::string embedded_trouble(const std::filesystem::path& nats_dir, const WorkspaceConfig& config);
// Where the workspace's embedded server keeps the store that refused a
// write as full, and what gives it room ("" when the workspace runs none).
std::string embedded_store_full(const std::filesystem::path& nats_dir, const WorkspaceConfig& config);
// The free bytes of the store's filesystem when it is full (under 1 MiB, or
// under 1% free); nullopt when it has room (or cannot be read).
std::optional<std::uint64_t> store_full(const std::filesystem::path& nats_dir);

// The workspace's token in `options` (in place of any other credential) when
// they reach its embedded server (`config.embedded` and its URL): how every
// verb and doctor connect to it.
void use_embedded_token(const std::filesystem::path& nats_dir, const WorkspaceConfig& config,
                        kv::ConnectionOptions& options);

}  // namespace swarm
