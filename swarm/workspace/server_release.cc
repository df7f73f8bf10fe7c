#include "swarm/workspace/server_release.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "swarm/base/error.h"
#include "swarm/base/private_files.h"
#include "swarm/base/safe_dir.h"
#include "swarm/base/text.h"
#include "kv/connection.h"
#include "swarm/workspace/embedded_server.h"

namespace swarm {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct Release {
  int major = 0, minor = 0, patch = 0;
  bool read = false;
};

Release parse_release(const std::string& version) {
  Release r;
  const int n = std::sscanf(version.c_str(), "%d.%d.%d", &r.major, &r.minor, &r.patch);
  r.read = n >= 2;
  if (n == 2) r.patch = 0;
  return r;
}

bool older(const Release& a, const Release& b) {
  if (a.major != b.major) return a.major < b.major;
  if (a.minor != b.minor) return a.minor < b.minor;
  return a.patch < b.patch;
}

// The program's real path, found on PATH ("" when it is not there).
std::string find_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    fs::path candidate = fs::path(dir) / program;
    std::error_code ec;
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0 && fs::is_regular_file(candidate, ec))
      return fs::canonical(candidate, ec).string();
  }
  return {};
}

}  // namespace

std::string_view current_nats_release() { return SWARM_CURRENT_NATS_RELEASE; }

bool release_before(const std::string& version, int major, int minor, int patch) {
  const Release have = parse_release(version);
  return have.read && older(have, Release{major, minor, patch, true});
}

bool release_older(const std::string& a, const std::string& b) {
  const Release ra = parse_release(a), rb = parse_release(b);
  return ra.read && rb.read && older(ra, rb);
}

std::vector<ServerLack> server_lacks(const std::string& version, ServerSync sync) {
  std::vector<ServerLack> out;
  const std::string shown = version.empty() ? "of an unknown version" : version;
  if (sync == ServerSync::interval || (sync == ServerSync::unknown && release_before(version, 2, 10)))
    out.push_back({"durability",
                   "nats-server " + shown + " syncs its store to disk about once a minute and cannot be told to sync "
                   "every write: a crash of its machine (a power cut, an OS crash) may lose the claims, tasks, holds, "
                   "messages, cursors, blobs and journal events acknowledged since its last sync (fencing and "
                   "session tokens are guarded and never handed out twice)"});
  // A server the user runs on 2.10 or later can sync every write: whether it
  // does is its configuration's, which swarm cannot read (`sync` says
  // "unknown", and doctor's durability line says what to set); no lack.
  if (release_before(version, 2, 9, 21))
    out.push_back({"replicated_cas", "in a cluster, nats-server " + shown + " can accept one conditional write twice "
                                     "(fixed in 2.9.21): replicated workspaces need 2.10 or later"});
  if (release_before(version, 2, 11))
    out.push_back({"expiry_markers", "nats-server " + shown + " announces no expiry (2.11 does): a session, lease or "
                                     "hold that ends by its TTL is seen when each host's clock says so (within a "
                                     "third of the TTL), and no session.expired or lease.expired is journaled"});
  if (release_before(version, 2, 10, 27) || (!release_before(version, 2, 11, 0) && release_before(version, 2, 11, 1)))
    out.push_back({"advisory", "on nats-server " + shown + " any user allowed `$JS.>` can purge the streams of other "
                               "accounts (fixed in 2.10.27 and 2.11.1): do not share it with accounts you do not trust"});
  return out;
}

std::string nats_server_version(const std::string& program) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return {};
  std::string arg0 = "nats-server", flag = "--version";
  char* argv[] = {arg0.data(), flag.data(), nullptr};
  const pid_t pid = fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    execv(program.c_str(), argv);
    _exit(127);
  }
  ::close(out[1]);
  UniqueFd reader(out[0]);
  if (pid < 0) return {};
  std::string text;
  // A Go program answers in milliseconds; a loaded machine may take seconds.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  char buffer[256];
  while (text.size() < 4096 && std::chrono::steady_clock::now() < deadline) {
    pollfd p{reader.get(), POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::read(reader.get(), buffer, sizeof buffer);
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  const auto v = text.find(" v");
  if (v == std::string::npos) return {};
  std::string version = text.substr(v + 2);
  version.resize(std::min(version.size(), version.find_first_not_of("0123456789.")));
  return version;
}

void require_valid_nats_server_variable() {
  const char* given = std::getenv("SWARM_NATS_SERVER");
  if (given == nullptr || *given == '\0') return;
  std::error_code ec;
  if (access(given, X_OK) != 0 || !fs::is_regular_file(given, ec))
    throw Error(Errc::bad_input, "bad $SWARM_NATS_SERVER '" + printable(given) +
                                     "': no such program (it names the nats-server `swarm up` starts; unset it to "
                                     "let up choose)");
}

std::optional<ServerProgram> choose_nats_server() {
  require_valid_nats_server_variable();
  if (const char* given = std::getenv("SWARM_NATS_SERVER"); given != nullptr && *given != '\0') {
    std::error_code ec;
    const std::string path = fs::canonical(given, ec).string();
    return ServerProgram{path, nats_server_version(path), "$SWARM_NATS_SERVER"};
  }
  std::vector<ServerProgram> found;
  // Beside swarm: its private folder when installed, the build tree's link
  // (scripts/current-nats-server.sh) when run from there.
  for (const auto& candidate : private_file_candidates("nats-server", nullptr)) {
    std::error_code ec;
    if (access(candidate.c_str(), X_OK) != 0 || !fs::is_regular_file(candidate, ec)) continue;
    const std::string path = fs::canonical(candidate, ec).string();
    if (ec) continue;
    found.push_back({path, nats_server_version(path), "beside swarm"});
    break;
  }
  if (std::string path = find_on_path("nats-server"); !path.empty())
    if (found.empty() || found.front().path != path) found.push_back({path, nats_server_version(path), "PATH"});
  if (found.empty()) return std::nullopt;
  // The newest; on a tie (or versions unread), the one beside swarm.
  const ServerProgram* best = &found.front();
  for (const auto& p : found)
    if (older(parse_release(best->version), parse_release(p.version))) best = &p;
  return *best;
}

WorkspaceServer workspace_server(const kv::Connection& nats, const fs::path& embedded_dir) {
  WorkspaceServer out;
  out.version = nats.server_version();
  if (!embedded_dir.empty())
    if (auto id = EmbeddedServer(embedded_dir).running()) {
      out.program = id->exe;
      out.sync = id->sync_always ? ServerSync::always : ServerSync::interval;
    }
  out.lacks = server_lacks(out.version, out.sync);
  return out;
}

}  // namespace swarm
