#include "support/git_servers.h"

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <stdexcept>

#include "support/nats_server.h"
#include "support/process.h"

namespace testing {

namespace fs = std::filesystem;

namespace {

void must_run(const std::vector<std::string>& args) {
  auto r = run(Command{args, {}, {}});
  if (r.exit != 0) throw std::runtime_error(args[0] + " " + (args.size() > 1 ? args[1] : "") + " failed: " + r.err);
}

std::string user_name() {
  const passwd* pw = ::getpwuid(::getuid());
  if (pw == nullptr) throw std::runtime_error("this process's user has no name");
  return pw->pw_name;
}

std::string first_two_fields(const std::string& line) {
  auto first = line.find(' ');
  auto second = line.find_first_of(" \n", first + 1);
  return line.substr(0, second);
}

}  // namespace

void make_bare_repository(const fs::path& path, const std::string& initial_branch) {
  must_run({"/usr/bin/git", "init", "-q", "--bare", "--initial-branch=" + initial_branch, path.string()});
}

GitDaemon::GitDaemon(bool pushes) : dir_("git-daemon"), pushes_(pushes) {
  fs::create_directories(dir_.path() / "srv");
  start_on_a_free_port(port_, [&] { start(); });
}

GitDaemon::~GitDaemon() { stop(); }

fs::path GitDaemon::make_repository(const std::string& name, const std::string& initial_branch) {
  make_bare_repository(path(name), initial_branch);
  return path(name);
}

void GitDaemon::start() {
  if (pid_ > 0) return;
  const std::string base = (dir_.path() / "srv").string();
  pid_ = start_server({"/usr/bin/git", "daemon", "--reuseaddr", "--export-all",
                       pushes_ ? "--enable=receive-pack" : "--disable=receive-pack", "--base-path=" + base,
                       "--listen=127.0.0.1", "--port=" + std::to_string(port_), base},
                      dir_.path() / "daemon.log", port_);
}

void GitDaemon::stop() { stop_server(pid_, SIGTERM); }

SshServer::SshServer() : dir_("sshd") {
  const fs::path d = dir_.path();
  must_run({"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "swarm-test-host", "-f", (d / "host_key").string()});
  must_run({"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "swarm-test-user", "-f", (d / "user_key").string()});
  fs::copy_file(d / "user_key.pub", d / "authorized_keys");
  fs::permissions(d / "authorized_keys", fs::perms::owner_read | fs::perms::owner_write);
  start_on_a_free_port(port_, [&] {
    write_file(d / "sshd_config",
               "Port " + std::to_string(port_) + "\nListenAddress 127.0.0.1\nHostKey " + (d / "host_key").string() +
                   "\nAuthorizedKeysFile " + (d / "authorized_keys").string() +
                   "\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                   "PermitRootLogin prohibit-password\nPidFile " + (d / "sshd.pid").string() + "\n");
    start();
  });
}

void SshServer::start() {
  if (pid_ > 0) return;
  // sshd refuses to start without its privilege separation folder (made by systemd at boot).
  std::error_code ec;
  fs::create_directories("/run/sshd", ec);
  const fs::path d = dir_.path();
  pid_ = start_server({"/usr/sbin/sshd", "-D", "-e", "-f", (d / "sshd_config").string()}, d / "sshd.log", port_);
}

SshServer::~SshServer() { stop(); }

void SshServer::stop() { stop_server(pid_, SIGTERM); }

fs::path SshServer::make_repository(const std::string& name, const std::string& initial_branch) {
  make_bare_repository(dir_.path() / "srv" / name, initial_branch);
  return dir_.path() / "srv" / name;
}

std::string SshServer::url(const std::string& name) const {
  return "ssh://" + user_name() + "@127.0.0.1:" + std::to_string(port_) + (dir_.path() / "srv" / name).string();
}

void SshServer::install_client(const fs::path& home, bool with_key) const {
  const fs::path ssh = home / ".ssh";
  fs::create_directories(ssh);
  write_file(ssh / "known_hosts", "[127.0.0.1]:" + std::to_string(port_) + " " +
                                      first_two_fields(read_file(dir_.path() / "host_key.pub")) + "\n");
  if (!with_key) return;
  fs::copy_file(dir_.path() / "user_key", ssh / "id_ed25519", fs::copy_options::overwrite_existing);
  fs::copy_file(dir_.path() / "user_key.pub", ssh / "id_ed25519.pub", fs::copy_options::overwrite_existing);
  fs::permissions(ssh / "id_ed25519", fs::perms::owner_read | fs::perms::owner_write);
}

void SshServer::install_stranger_key(const fs::path& home) const {
  const fs::path ssh = home / ".ssh";
  fs::create_directories(ssh);
  fs::remove(ssh / "id_ed25519");
  fs::remove(ssh / "id_ed25519.pub");
  must_run({"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "stranger", "-f", (ssh / "id_ed25519").string()});
}

}  // namespace testing
