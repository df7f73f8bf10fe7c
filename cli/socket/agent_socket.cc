#include "cli/socket/agent_socket.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fcntl.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "cli/verbs/remote.h"
#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/safe_dir.h"

namespace cli {

namespace {

// Calls answered at once; the next waits in the listen queue.
constexpr int kMaxCalls = 8;
// A caller that sends nothing for this long is dropped (its request unread).
constexpr int kRequestWaitMs = 10000;
constexpr const char* kSocketName = "agent.sock";

// The frames of one call, written as the verb says them; once the caller
// is gone nothing more is written, and items say so (nothing more is acked).
class SocketReporter : public Reporter {
 public:
  explicit SocketReporter(int fd) : fd_(fd) {}
  void warn(const std::string& message) override { write(warn_frame(message)); }
  void note(const std::string& message) override { write(note_frame(message)); }
  bool item(const swarm::Json& doc, const std::string& line) override { return write(item_frame(doc, line)); }
  bool write(const std::string& text) {
    for (std::size_t at = 0; ok_ && at < text.size();) {
      const ssize_t n = ::send(fd_, text.data() + at, text.size() - at, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ok_ = false;
      else at += static_cast<std::size_t>(n);
    }
    return ok_;
  }

 private:
  int fd_;
  bool ok_ = true;
};

// The request line, up to its newline or the caller's end of writing.
std::optional<std::string> read_line(int fd) {
  std::string line;
  char buf[65536];
  for (;;) {
    pollfd in{fd, POLLIN, 0};
    if (::poll(&in, 1, kRequestWaitMs) <= 0) return std::nullopt;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    const char* end = static_cast<const char*>(std::memchr(buf, '\n', static_cast<std::size_t>(std::max<ssize_t>(n, 0))));
    line.append(buf, end != nullptr ? static_cast<std::size_t>(end - buf) : static_cast<std::size_t>(n));
    if (line.size() > kMaxRequestLine)
      throw swarm::Error(swarm::Errc::bad_input, "the request is longer than the socket takes");
    if (n == 0 || end != nullptr) return line;
  }
}

// Whether the peer is a process of this user (the folder's mode is the
// first guard; this the second, for a socket passed on).
// `pid` gets the peer's pid, as the kernel says it.
bool same_user(int fd, std::int64_t& pid) {
  ucred cred{};
  socklen_t size = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &size) != 0 || cred.uid != ::geteuid()) return false;
  pid = cred.pid;
  return true;
}

// One call: the request read, the verb run with the run's globals, its
// frames and result written; an error is the error frame.
// `peer`: the caller's pid, for what records it (a join's session).
void answer(int fd, const Globals& run_globals, std::int64_t peer) {
  SocketReporter report(fd);
  try {
    const auto line = read_line(fd);
    if (!line) return;
    RemoteRequest r = read_request_line(*line);
    Globals globals = run_globals;
    globals.json = r.json;
    Context ctx(globals);
    ctx.set_presentation(r.presentation);
    ctx.set_caller_pid(peer);
    swarm::UniqueFd input;
    ctx.set_standard_input(-1);
    if (r.verb->reads_input(r.request.get())) {
      input = swarm::UniqueFd(::memfd_create("swarm-input", MFD_CLOEXEC));
      if (!input || ::write(input.get(), r.input.data(), r.input.size()) != static_cast<ssize_t>(r.input.size()))
        throw swarm::Error(swarm::Errc::internal, "cannot keep the request's input");
      ::lseek(input.get(), 0, SEEK_SET);
      ctx.set_standard_input(input.get());
    }
    report.write(result_frame(run_verb(*r.verb, r.request.get(), ctx, report)));
  } catch (const std::exception& thrown) {
    const swarm::Error e = swarm::Error::from(thrown);
    report.write(error_frame(e.kind(), e.what()));
  }
}

// What the calls share with the socket: they may outlive it (a call that
// waits when the run ends), so it is theirs as much as its.
struct Calls {
  Globals globals;
  std::mutex mu;
  std::condition_variable done;
  int running = 0;
};

class AgentSocket : public AgentDoor {
 public:
  explicit AgentSocket(const Globals& globals) : calls_(std::make_shared<Calls>()) {
    calls_->globals = globals;
    share_connections();  // every call on the run's connection, not one of its own
    const char* runtime = std::getenv("XDG_RUNTIME_DIR");
    std::string base = runtime != nullptr && *runtime == '/' && ::access(runtime, W_OK) == 0 ? runtime : "/tmp";
    std::string folder = base + "/swarm-run-XXXXXX";
    if (::mkdtemp(folder.data()) == nullptr)
      throw swarm::Error(swarm::Errc::filesystem, "cannot make the agent's socket folder in " + base + ": " + std::strerror(errno));
    folder_ = folder;  // mkdtemp makes it 0700
    path_ = folder_ + "/" + kSocketName;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path_.size() >= sizeof addr.sun_path) {
      ::rmdir(folder_.c_str());
      throw swarm::Error(swarm::Errc::filesystem, "the agent's socket path " + path_ + " is too long for a socket");
    }
    std::memcpy(addr.sun_path, path_.data(), path_.size());
    listener_ = swarm::UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!listener_ || ::bind(listener_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener_.get(), 64) != 0) {
      const int saved = errno;
      ::rmdir(folder_.c_str());
      throw swarm::Error(swarm::Errc::filesystem, "cannot listen on " + path_ + ": " + std::strerror(saved));
    }
    if (::pipe2(stop_, O_CLOEXEC) != 0) {
      cleanup();
      throw swarm::Error(swarm::Errc::internal, "cannot make the agent socket's stop pipe");
    }
    accepter_ = std::thread([this] { accept_loop(); });
  }

  ~AgentSocket() override {
    stopping_ = true;
    if (stop_[1] >= 0) (void)!::write(stop_[1], "x", 1);
    if (accepter_.joinable()) accepter_.join();
    // A call still running ends with the process (the run is ending):
    // a short wait lets a quick one answer.
    {
      std::unique_lock lock(calls_->mu);
      calls_->done.wait_for(lock, std::chrono::seconds(2), [&] { return calls_->running == 0; });
    }
    cleanup();
    for (int fd : stop_)
      if (fd >= 0) ::close(fd);
  }

  const std::string& path() const override { return path_; }

 private:
  void cleanup() {
    ::unlink(path_.c_str());
    ::rmdir(folder_.c_str());
  }

  void accept_loop() {
    for (;;) {
      pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {stop_[0], POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
      if (stopping_ || (fds[1].revents & POLLIN)) return;
      if (!(fds[0].revents & POLLIN)) continue;
      {
        std::unique_lock lock(calls_->mu);
        calls_->done.wait_for(lock, std::chrono::milliseconds(200), [&] { return calls_->running < kMaxCalls; });
        if (calls_->running >= kMaxCalls) continue;
      }
      swarm::UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!fd) continue;
      std::int64_t peer = 0;
      if (!same_user(fd.get(), peer)) continue;  // closed unanswered
      {
        std::lock_guard lock(calls_->mu);
        ++calls_->running;
      }
      std::thread([calls = calls_, fd = std::make_shared<swarm::UniqueFd>(std::move(fd)), peer] {
        answer(fd->get(), calls->globals, peer);
        *fd = swarm::UniqueFd();
        std::lock_guard lock(calls->mu);
        --calls->running;
        calls->done.notify_all();
      }).detach();
    }
  }

  std::shared_ptr<Calls> calls_;
  std::string folder_, path_;
  swarm::UniqueFd listener_;
  int stop_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::thread accepter_;
};

}  // namespace

std::unique_ptr<AgentDoor> open_agent_socket(const Globals& globals) { return std::make_unique<AgentSocket>(globals); }

}  // namespace cli
