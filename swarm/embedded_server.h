// The nats-server that `swarm up` starts when no --nats-url is given: from PATH,
// JetStream on, 127.0.0.1 only, data, log and pid under .swarm/nats/. It
// outlives the `swarm up` that started it; `swarm down` stops it by its pid.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace swarm {

class EmbeddedServer {
 public:
  explicit EmbeddedServer(std::filesystem::path dir) : dir_(std::move(dir)) {}

  std::filesystem::path pid_file() const { return dir_ / "nats.pid"; }
  std::filesystem::path log_file() const { return dir_ / "nats.log"; }
  std::filesystem::path data_dir() const { return dir_ / "data"; }

  // The pid in the pid file when that process is alive and is a nats-server.
  std::optional<pid_t> running_pid() const;
  // The pid named by the pid file, alive or not (nullopt when there is no file).
  std::optional<pid_t> recorded_pid() const;

  // Starts the server on `port` (0: pick a free one; a taken port is replaced
  // by a free one) and waits up to `timeout` until it answers. Returns its URL.
  // Throws unavailable when nats-server is missing, exits, or never answers.
  std::string start(int port, std::chrono::milliseconds timeout);

  // SIGTERM, then SIGKILL after `grace`. False when it was not running.
  bool stop(std::chrono::milliseconds grace);

 private:
  std::filesystem::path dir_;
};

// A TCP port on 127.0.0.1 that nobody listens on right now.
int free_loopback_port();
bool port_is_free(int port);
// The port of "nats://host:port" (0 when there is none).
int port_of_url(const std::string& url);

}  // namespace swarm
