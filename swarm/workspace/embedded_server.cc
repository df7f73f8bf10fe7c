#include "swarm/workspace/embedded_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "swarm/base/error.h"
#include "swarm/base/json.h"
#include "swarm/base/log.h"
#include "swarm/base/process_info.h"
#include "swarm/base/secret.h"
#include "swarm/base/text.h"
#include "swarm/workspace/server_release.h"
#include "swarm/workspace/workspace.h"

namespace swarm {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

sockaddr_in loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

bool answers(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  auto addr = loopback(port);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  if (ok) {
    // A NATS server greets with INFO; anything else on the port is not ours.
    timeval tv{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buffer[5] = {0};
    ok = recv(fd, buffer, 4, MSG_WAITALL) == 4 && std::string(buffer) == "INFO";
  }
  close(fd);
  return ok;
}

std::string exe_of(pid_t pid) {
  std::error_code ec;
  std::string exe = fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string();
  // An executable replaced on disk since (a package upgrade) still runs.
  const std::string deleted = " (deleted)";
  if (exe.size() > deleted.size() && exe.compare(exe.size() - deleted.size(), deleted.size(), deleted) == 0)
    exe.resize(exe.size() - deleted.size());
  return exe;
}

// Whether `pid` runs nats-server with `store` as its store directory.
bool serves_store(pid_t pid, const fs::path& store) {
  auto args = process_arguments(pid);
  if (args.empty() || fs::path(args[0]).filename().string().find("nats-server") == std::string::npos) return false;
  for (std::size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "-sd" && args[i + 1] == store.string()) return true;
  return false;
}


// The size of the plain file `name` in `dir` (0 when it is none), not through a link.
std::uint64_t size_of(const SafeDir& dir, const char* name) {
  struct stat st {};
  if (::fstatat(dir.fd(), name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) return 0;
  return static_cast<std::uint64_t>(st.st_size);
}

// The last `max_chars` of what the log holds after its first `from` bytes,
// read from the folder's descriptor, never through a link.
std::string log_tail(const SafeDir& dir, std::size_t max_chars, std::uint64_t from) {
  int fd = ::openat(dir.fd(), "nats.log", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {};
  UniqueFd log(fd);
  const std::uint64_t size = size_of(dir, "nats.log");
  const std::uint64_t start = std::max(from, size > max_chars ? size - max_chars : 0);
  std::string text(static_cast<std::size_t>(size > start ? size - start : 0), '\0');
  ssize_t n = ::pread(fd, text.data(), text.size(), static_cast<off_t>(start));
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return text;
}

// The files nats-server opens by path are ours, never links someone planted
// (it would append its log to, or keep its store in, whatever they name).
void require_no_planted_links(const SafeDir& dir) {
  for (const char* name : {"nats.log", "nats.pid", "data"})
    if (dir.kind(name) == EntryKind::link) dir.folder(name);  // throws, naming it
  if (auto data = dir.folder_if_exists("data")) data->folder_if_exists("jetstream");  // refuses a link
}

}  // namespace

int free_loopback_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  auto addr = loopback(0);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    throw Error(Errc::internal, "cannot find a free port on 127.0.0.1");
  }
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

bool port_is_free(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int yes = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  auto addr = loopback(port);
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

int port_of_url(const std::string& url) {
  auto colon = url.rfind(':');
  if (colon == std::string::npos) return 0;
  return std::atoi(url.c_str() + colon + 1);
}

SafeDir EmbeddedServer::folder() const { return SafeDir::make(dir_, 0700); }

std::optional<std::string> EmbeddedServer::token() const {
  auto dir = SafeDir::open_if_exists(dir_);
  return dir ? read_secret(*dir, "token") : std::nullopt;
}

std::string EmbeddedServer::ensure_token() const { return ensure_secret(folder(), "token"); }

std::optional<pid_t> EmbeddedServer::recorded_pid() const {
  std::string why;
  auto dir = SafeDir::open_if_exists(dir_);
  auto text = dir ? dir->read_file("nats.pid", 64, &why) : std::nullopt;
  long pid = text ? std::atol(text->c_str()) : 0;
  if (pid <= 0) return std::nullopt;
  return static_cast<pid_t>(pid);
}

std::string EmbeddedServer::recorded_version() const {
  std::string why;
  auto dir = SafeDir::open_if_exists(dir_);
  Json json = Json::parse(dir ? dir->read_file("server.json", 4096, &why).value_or("") : std::string());
  if (!json || !cJSON_IsObject(json.get())) return {};
  const cJSON* item = cJSON_GetObjectItemCaseSensitive(json.get(), "version");
  return cJSON_IsString(item) ? std::string(item->valuestring) : std::string();
}

std::optional<ServerIdentity> EmbeddedServer::running() const {
  std::string why;
  auto dir = SafeDir::open_if_exists(dir_);
  Json json = Json::parse(dir ? dir->read_file("server.json", 4096, &why).value_or("") : std::string());
  if (!json || !cJSON_IsObject(json.get())) return std::nullopt;
  auto number = [&](const char* name) {
    const cJSON* item = cJSON_GetObjectItemCaseSensitive(json.get(), name);
    return cJSON_IsNumber(item) ? item->valuedouble : -1.0;
  };
  auto string = [&](const char* name) {
    const cJSON* item = cJSON_GetObjectItemCaseSensitive(json.get(), name);
    return cJSON_IsString(item) ? std::string(item->valuestring) : std::string();
  };
  ServerIdentity id;
  if (number("pid") <= 0 || number("start_ticks") < 0) return std::nullopt;
  id.pid = static_cast<pid_t>(number("pid"));
  id.start_ticks = static_cast<unsigned long long>(number("start_ticks"));
  id.exe = string("exe");
  id.url = string("url");
  id.token_auth = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(json.get(), "token_auth"));
  id.version = string("version");
  id.sync_always = string("sync") == "always";
  // All three: the same process (start time), the same program, our store.
  if (!process_alive(id.pid) || process_uid(id.pid) != ::geteuid() || process_start_ticks(id.pid) != id.start_ticks ||
      !serves_store(id.pid, data_dir()))
    return std::nullopt;
  if (!id.exe.empty() && exe_of(id.pid) != id.exe) return std::nullopt;
  return id;
}

std::optional<pid_t> EmbeddedServer::running_pid() const {
  auto id = running();
  if (!id) return std::nullopt;
  return id->pid;
}

std::vector<pid_t> EmbeddedServer::all_on_store() const {
  std::vector<pid_t> out;
  // Only processes of this user: anyone can run a program called nats-server
  // with our store in its arguments, and swarm signals what this lists.
  for (pid_t pid : all_processes())
    if (process_uid(pid) == ::geteuid() && serves_store(pid, data_dir())) out.push_back(pid);
  return out;
}

namespace {

// A store a newer nats-server wrote is never handed to an older one (it may
// not read it, or read it wrong): the build tree removed, the Debian
// package's swarm on a workspace the current release ran.
void require_not_older(const ServerProgram& chosen, const std::string& last) {
  if (!release_older(chosen.version, last)) return;
  throw Error(Errc::unavailable,
              "the workspace's store was last run by nats-server " + last + ", and the nats-server up would start (" +
                  printable(chosen.path) + ", " + (chosen.version.empty() ? "version unknown" : chosen.version) +
                  ") is older: it is not started on it. Set $SWARM_NATS_SERVER to a nats-server " + last +
                  " or later (scripts/setup.sh builds the current release); nothing was changed");
}

std::string server_conf(const std::string& token, bool sync_always) {
  return "# written by swarm up: clients must send the workspace's token\n"
         "authorization {\n  token: \"" + token + "\"\n}\n" +
         (sync_always ? "# every acknowledged write is on disk first\njetstream {\n  sync_interval: always\n}\n" : "");
}

}  // namespace

std::string EmbeddedServer::start(int port, std::chrono::milliseconds timeout) {
  const std::optional<ServerProgram> chosen = choose_nats_server();
  if (!chosen)
    throw Error(Errc::unavailable,
                "no nats-server to start: none beside swarm and none on PATH; scripts/setup.sh builds the current "
                "release (or apt-get install nats-server, or set $SWARM_NATS_SERVER), or pass --nats-url");
  const std::string& program = chosen->path;
  SafeDir dir = folder();
  require_no_planted_links(dir);
  require_not_older(*chosen, recorded_version());
  dir.make_folder("data", 0700);
  // 2.10 and later sync every write before acknowledging it; 2.9 cannot
  // (it syncs about once a minute, and refuses the setting): there the
  // token watermark guards tokens (adr/0033).
  const std::string& version = chosen->version;
  const bool sync_always = !version.empty() && !kv::version_before(version, 2, 10);
  // The token reaches the server in a file only this user reads, never on
  // its command line (any user can read that in /proc).
  dir.write_file("server.conf", server_conf(ensure_token(), sync_always), 0600);
  if (port <= 0 || !port_is_free(port)) port = free_loopback_port();
  // A free port may be taken by anyone before our server binds it (another
  // workspace's `up` that chose it too): that server exits, and the port then
  // answers for someone else. Ours is the one whose own socket listens there;
  // a port taken meanwhile is replaced by another free one, a few times.
  constexpr int kPortTries = 4;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int attempt = 1;; ++attempt) {
    // nats-server appends to its log: only what this start wrote tells why it stopped.
    const std::uint64_t log_start = size_of(dir, "nats.log");
    pid_t pid = launch(program, port);
    const std::string url = "nats://127.0.0.1:" + std::to_string(port);
    const auto start_ticks = process_start_ticks(pid).value_or(0);
    // The executable is recorded once the server answers, from /proc: what PATH
    // named may be a wrapper (asdf, mise, nix) that exec'd the real one.
    auto record_identity = [&](const std::string& exe) {
      Json identity = Json::object();
      identity.set("pid", static_cast<std::int64_t>(pid))
          .set("start_ticks", static_cast<std::int64_t>(start_ticks))
          .set("exe", exe)
          .set("url", url)
          .set("store", data_dir().string())
          .set("token_auth", true)
          .set("version", version)
          .set("sync", sync_always ? "always" : "interval");
      dir.write_file("server.json", identity.dump_pretty() + "\n");
    };
    // The identity is written at once: an `up` killed from here on leaves a
    // server that the next `up` reuses and `down` stops.
    record_identity("");
    bool taken = false;
    // Where /proc cannot tell whose socket it is, a NATS greeting on the port will do.
    while (!(listens_on(pid, port).value_or(true) && answers(port))) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        const std::string log = log_tail(dir, 1500, log_start);
        if (attempt < kPortTries && log.find("address already in use") != std::string::npos) {
          taken = true;
          break;
        }
        throw Error(Errc::unavailable, "nats-server exited at start (see " + log_file().string() + "):\n" + log);
      }
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        throw Error(Errc::unavailable, "nats-server did not answer on 127.0.0.1:" + std::to_string(port) +
                                           " within the timeout (see " + log_file().string() + ")");
      }
      std::this_thread::sleep_for(20ms);
    }
    if (taken) {
      swarm::log::debug("port {} was taken before nats-server could listen on it; trying another", port);
      port = free_loopback_port();
      continue;
    }
    record_identity(exe_of(pid));
    return url;
  }
}

pid_t EmbeddedServer::launch(const std::string& program, int port) const {
  std::vector<std::string> args = {"nats-server", "-c", config_file().string(), "-js", "-a", "127.0.0.1", "-p", std::to_string(port),
                                   "-sd", data_dir().string(), "-l", log_file().string(),
                                   "-P", pid_file().string(), "--server_name", "swarm-embedded"};
  // Built before fork: the child of a threaded process must not allocate.
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw Error(Errc::internal, "fork failed while starting nats-server");
  if (pid == 0) {
    // Detach: the server must outlive this process and its terminal.
    setsid();
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, 0);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execv(program.c_str(), argv.data());
    _exit(127);
  }
  // The pid file is nats-server's own (-P); write it too, so a server that dies
  // before writing it still leaves a pid for doctor to name.
  folder().write_file("nats.pid", std::to_string(pid) + "\n");
  return pid;
}

std::vector<pid_t> EmbeddedServer::stop(std::chrono::milliseconds grace) const { return stop_others(0, grace); }

std::vector<pid_t> EmbeddedServer::stop_others(pid_t keep, std::chrono::milliseconds grace) const {
  std::vector<pid_t> pids;
  for (pid_t pid : all_on_store())
    if (pid != keep) pids.push_back(pid);
  // Each is checked again right before each signal: a pid that stopped
  // serving our store meanwhile is no longer ours to signal.
  auto still_ours = [&](pid_t pid) {
    return process_alive(pid) && process_uid(pid) == ::geteuid() && serves_store(pid, data_dir());
  };
  for (pid_t pid : pids)
    if (still_ours(pid)) kill(pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  auto any_left = [&] {
    bool left = false;
    for (pid_t pid : pids) {
      waitpid(pid, nullptr, WNOHANG);  // reaps it when we are its parent (tests)
      left = left || still_ours(pid);
    }
    return left;
  };
  while (any_left() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  for (pid_t pid : pids)
    if (still_ours(pid)) kill(pid, SIGKILL);
  for (int i = 0; i < 100 && any_left(); ++i) std::this_thread::sleep_for(10ms);
  return pids;
}

bool EmbeddedServer::owns_port(int port) const {
  auto id = running();
  // Where /proc cannot tell whose socket it is, our own live server is enough.
  return id && listens_on(id->pid, port).value_or(true);
}

std::optional<std::uint64_t> store_full(const fs::path& nats_dir) {
  struct statvfs fs_stat {};
  if (::statvfs(EmbeddedServer(nats_dir).data_dir().c_str(), &fs_stat) != 0) return std::nullopt;
  const auto free_bytes = static_cast<std::uint64_t>(fs_stat.f_bavail) * fs_stat.f_frsize;
  const auto total = static_cast<std::uint64_t>(fs_stat.f_blocks) * fs_stat.f_frsize;
  if (free_bytes >= (1 << 20) && free_bytes >= total / 100) return std::nullopt;
  return free_bytes;
}

std::string embedded_trouble(const fs::path& nats_dir, const WorkspaceConfig& config) {
  if (!config.embedded) return {};
  EmbeddedServer server(nats_dir);
  if (!server.running())
    return "the workspace's embedded nats-server is not running: `swarm up` starts it again on its data";
  if (auto free_bytes = store_full(nats_dir))
    return "the embedded nats-server's store " + server.data_dir().string() + " is on a full filesystem (" +
           std::to_string(*free_bytes / 1024) + " KiB free): its JetStream stops when it cannot write, and stays "
           "stopped; free space there, then `swarm up` restarts the server on its data";
  return "the embedded nats-server runs but its JetStream did not answer (a full store stops it for good): "
         "`swarm up` restarts it on its data";
}

std::string embedded_store_full(const fs::path& nats_dir, const WorkspaceConfig& config) {
  if (!config.embedded) return {};
  const std::string data = EmbeddedServer(nats_dir).data_dir().string();
  if (auto free_bytes = store_full(nats_dir))
    return "the embedded nats-server's store " + data + " is on a full filesystem (" +
           std::to_string(*free_bytes / 1024) + " KiB free): free space there, then `swarm down` and `swarm up` "
           "restart the server on its data";
  // No limit is configured: the server takes at most 3/4 of what its
  // filesystem had free when it started.
  return "the embedded nats-server keeps it in " + data + " and takes at most 3/4 of the room free there when it "
         "started: free space, then `swarm down` and `swarm up` restart it with the room there is";
}

void use_embedded_token(const fs::path& nats_dir, const WorkspaceConfig& config, kv::ConnectionOptions& options) {
  // Only to the server the config names: a --nats-url elsewhere never gets it.
  if (!config.embedded || options.urls != kv::split_urls(config.nats_url)) return;
  // The server knows the workspace's token and nothing else: credentials
  // meant for other servers ($NATS_USER, a context) are not sent to it.
  options.user.clear();
  options.password.clear();
  options.creds_file.clear();
  options.nkey_file.clear();
  options.token.clear();
  auto token = EmbeddedServer(nats_dir).token();
  if (!token) return;  // a workspace made before tokens: its next `up` makes one
  options.token = *token;
  // And only while our own server listens there, at every (re)connect: with
  // ours down, anyone may take the port.
  const int port = port_of_url(config.nats_url);
  options.token_guard = [nats_dir, port] { return EmbeddedServer(nats_dir).owns_port(port); };
}

}  // namespace swarm
