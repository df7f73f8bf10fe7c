#include "swarm/base/file_lock.h"

#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "swarm/base/error.h"

namespace swarm {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// Polling with a growing pause: flock has no timed wait, and a blocked
// flock in another thread could not be given up cleanly.
constexpr std::chrono::milliseconds kFirstPause{1};
constexpr std::chrono::milliseconds kLongestPause{25};
// A holder's description longer than this is not one swarm wrote.
constexpr std::size_t kMaxHolderBytes = 4096;

// Locks `fd` without blocking; false when someone else holds it.
bool lock_now(int fd, const fs::path& path) {
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
  if (errno == EWOULDBLOCK || errno == EINTR) return false;
  throw Error(Errc::internal, "cannot lock " + path.string() + ": " + std::strerror(errno));
}

void write_holder(int fd, const std::string& holder) {
  std::string text = holder + " (pid " + std::to_string(::getpid()) + ")\n";
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, text.data(), text.size(), 0);
}

}  // namespace

std::optional<FileLock> FileLock::try_acquire(const SafeDir& dir, const std::string& name, const std::string& holder) {
  UniqueFd fd = dir.open_file(name);
  if (!lock_now(fd.get(), dir.path() / name)) return std::nullopt;
  write_holder(fd.get(), holder);
  return FileLock(std::move(fd));
}

std::optional<FileLock> FileLock::acquire(const SafeDir& dir, const std::string& name, const std::string& holder,
                                          std::chrono::milliseconds wait,
                                          const std::function<void(const std::string&)>& on_wait) {
  UniqueFd fd = dir.open_file(name);
  auto deadline = std::chrono::steady_clock::now() + wait;
  auto pause = kFirstPause;
  bool told = false;
  while (!lock_now(fd.get(), dir.path() / name)) {
    if (!told && on_wait) on_wait(holder_of(dir, name));
    told = true;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, kLongestPause);
  }
  write_holder(fd.get(), holder);
  return FileLock(std::move(fd));
}

std::string FileLock::holder_of(const SafeDir& dir, const std::string& name) {
  // A plain, short file of ours: anything else (a link, a FIFO) is not read.
  std::string why;
  std::string text = dir.read_file(name, kMaxHolderBytes, &why).value_or("");
  return text.substr(0, text.find('\n'));
}

}  // namespace swarm
