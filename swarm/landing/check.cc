#include "swarm/landing/check.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/text.h"

namespace swarm {

namespace {

// Reads `fd` to its end, handing each line to `output` (a last line without
// a newline too, and a line longer than 64 KiB in pieces); closes `fd`.
// Once `ended` (the check was reaped), what is still coming (from a process
// the check left behind, out of its group, holding the pipe open) is read
// for at most a second more, then left: the land never waits on it.
void relay_lines(int fd, const std::function<void(std::string_view)>& output, const std::atomic<bool>& ended) {
  constexpr std::size_t kLongestLine = 64 * 1024;
  constexpr auto kAfterEnd = std::chrono::seconds(1);
  std::string pending;
  char buffer[4096];
  std::optional<std::chrono::steady_clock::time_point> stop_by;
  while (true) {
    if (ended && !stop_by) stop_by = std::chrono::steady_clock::now() + kAfterEnd;
    if (stop_by && std::chrono::steady_clock::now() >= *stop_by) break;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, 100);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      if (ended) break;  // quiet once the check ended: done
      continue;
    }
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buffer, static_cast<std::size_t>(n));
    for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
      output(std::string_view(pending).substr(0, nl));
      pending.erase(0, nl + 1);
    }
    if (pending.size() >= kLongestLine) {
      output(pending);
      pending.clear();
    }
  }
  if (!pending.empty()) output(pending);
  ::close(fd);
}

}  // namespace

SafeDir land_checkouts(const Workspace& ws) {
  auto absolute_env = [](const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr && value[0] == '/' ? std::filesystem::path(value) : std::filesystem::path();
  };
  std::filesystem::path cache = absolute_env("XDG_CACHE_HOME");
  if (cache.empty() && !absolute_env("HOME").empty()) cache = absolute_env("HOME") / ".cache";
  std::optional<SafeDir> base;
  try {
    if (!cache.empty()) base = SafeDir::make(cache, 0700).make_folder("swarm", 0700);
  } catch (const Error& e) {
    if (e.kind() == Errc::bad_input) throw;  // a link or a stranger's folder: never used, and said
    base.reset();                            // a home that cannot be written: the fallback
  }
  if (!base) base = SafeDir::make("/tmp/swarm-" + std::to_string(::geteuid()), 0700);
  const std::string root = ws.root().string();
  return base->make_folder("land", 0700)
      .make_folder(ws.root().filename().string() + "-" + stable_hash_hex(root), 0700);
}

bool withheld_from_checks(std::string_view variable) {
  std::string name(variable);
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (name.rfind("NATS_", 0) == 0 || name.rfind("SWARM_", 0) == 0 || name.rfind("AWS_", 0) == 0) return true;
  // The words that name a credential; a word, not a part of one
  // (GIT_AUTHOR_NAME is no AUTH, KEYBOARD no KEY).
  static constexpr std::string_view kCredentialWords[] = {
      "TOKEN", "TOKENS", "PASSWORD", "PASSWD", "PASS", "PASSPHRASE", "SECRET", "SECRETS", "KEY", "KEYS", "APIKEY",
      "AUTH", "CREDS", "CRED", "CREDENTIAL", "CREDENTIALS", "COOKIE", "SESSION", "PAT"};
  std::string_view rest = name;
  while (!rest.empty()) {
    const auto end = rest.find('_');
    const std::string_view word = rest.substr(0, end);
    for (auto credential : kCredentialWords)
      if (word == credential) return true;
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return false;
}

int CheckRun::run(const LandCheck& check, const std::vector<std::string>& command, const std::filesystem::path& dir,
                  const std::vector<std::pair<std::string, std::string>>& env) {
  int pipe_fds[2] = {-1, -1};
  if (check.output && ::pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw Error(Errc::internal, std::string("pipe: ") + std::strerror(errno));
  std::thread relay;
  std::atomic<bool> ended{false};
  ChildProcess* started = nullptr;
  try {
    std::lock_guard lock(mu_);
    running_ = ChildProcess::start(command, env,
                                   {.cwd = dir.string(),
                                    .output_fd = check.output ? pipe_fds[1] : 2,
                                    .withhold_env = withheld_from_checks});
    started = running_.get();
  } catch (const CannotRun& e) {
    if (check.output) {
      ::close(pipe_fds[0]);
      ::close(pipe_fds[1]);
    }
    // As a shell says it: 127 for a check the merged tree lacks, 126 for one it cannot execute.
    swarm::log::warn("{}", e.what());
    return e.shell_status();
  } catch (...) {
    if (check.output) {
      ::close(pipe_fds[0]);
      ::close(pipe_fds[1]);
    }
    throw;
  }
  if (check.output) {
    ::close(pipe_fds[1]);  // the check (and its guard) hold the write end now
    relay = std::thread([fd = pipe_fds[0], &check, &ended] {
      relay_lines(fd, [&check](std::string_view line) { check.output(check.who, line); }, ended);
    });
  }
  if (check.running) check.running(started);
  const int status = started->wait();
  if (check.running) check.running(nullptr);
  ended = true;
  if (relay.joinable()) relay.join();
  std::lock_guard lock(mu_);
  running_.reset();
  return status;
}

void CheckRun::kill() {
  std::lock_guard lock(mu_);
  if (running_) running_->signal(SIGKILL);
}

}  // namespace swarm
