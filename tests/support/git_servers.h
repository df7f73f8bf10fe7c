// Real git servers for tests playing several hosts: `git daemon` serving
// bare repositories over git:// with pushes enabled, and an `sshd` with a
// throwaway host key and client key, each on a free 127.0.0.1 port, with its
// repositories in a temporary folder. Stopped when they go (or the test dies).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "support/temp_dir.h"

namespace testing {

// Makes an empty bare repository at `path` whose HEAD names `initial_branch`.
void make_bare_repository(const std::filesystem::path& path, const std::string& initial_branch = "main");

class GitDaemon {
 public:
  // `pushes` false: a read-only daemon (no receive-pack).
  explicit GitDaemon(bool pushes = true);
  ~GitDaemon();
  GitDaemon(const GitDaemon&) = delete;
  GitDaemon& operator=(const GitDaemon&) = delete;

  // An empty bare repository served as `name` (e.g. "app.git").
  std::filesystem::path make_repository(const std::string& name, const std::string& initial_branch = "main");
  std::string url(const std::string& name) const { return "git://127.0.0.1:" + std::to_string(port_) + "/" + name; }
  std::filesystem::path path(const std::string& name) const { return dir_.path() / "srv" / name; }

  void start();  // again, on the same port
  void stop();

 private:
  TempDir dir_;
  int port_ = 0;
  bool pushes_;
  pid_t pid_ = -1;
};

class SshServer {
 public:
  SshServer();
  ~SshServer();
  SshServer(const SshServer&) = delete;
  SshServer& operator=(const SshServer&) = delete;

  // An empty bare repository at `name` in the server's folder.
  std::filesystem::path make_repository(const std::string& name, const std::string& initial_branch = "main");
  // ssh://<this user>@127.0.0.1:<port>/<absolute path of name>
  std::string url(const std::string& name) const;

  // Gives the user whose home is `home` what a real one would have: the
  // accepted key as ~/.ssh/id_ed25519 and the server's host key in
  // ~/.ssh/known_hosts. `with_key` false: the known host only.
  void install_client(const std::filesystem::path& home, bool with_key = true) const;
  // A key pair that the server does not accept, as ~/.ssh/id_ed25519.
  void install_stranger_key(const std::filesystem::path& home) const;

  void start();  // again, on the same port and keys
  void stop();

 private:
  TempDir dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace testing
