#include "swarm/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "swarm/error.h"

namespace swarm {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// Polling with a growing pause: flock has no timed wait, and a blocked
// flock in another thread could not be given up cleanly.
constexpr std::chrono::milliseconds kFirstPause{1};
constexpr std::chrono::milliseconds kLongestPause{25};

int open_lock_file(const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(Errc::internal, "cannot open the lock file " + path.string() + ": " + std::strerror(errno));
  return fd;
}

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

std::optional<FileLock> FileLock::try_acquire(const fs::path& path, const std::string& holder) {
  int fd = open_lock_file(path);
  if (!lock_now(fd, path)) {
    ::close(fd);
    return std::nullopt;
  }
  write_holder(fd, holder);
  return FileLock(fd);
}

std::optional<FileLock> FileLock::acquire(const fs::path& path, const std::string& holder,
                                          std::chrono::milliseconds wait,
                                          const std::function<void(const std::string&)>& on_wait) {
  int fd = open_lock_file(path);
  auto deadline = std::chrono::steady_clock::now() + wait;
  auto pause = kFirstPause;
  bool told = false;
  while (!lock_now(fd, path)) {
    if (!told && on_wait) on_wait(holder_of(path));
    told = true;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::close(fd);
      return std::nullopt;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, kLongestPause);
  }
  write_holder(fd, holder);
  return FileLock(fd);
}

std::string FileLock::holder_of(const fs::path& path) {
  // A plain, short file of ours: anything else is not read (a FIFO would block).
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) > 4096) return {};
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

FileLock::~FileLock() {
  // Closing the descriptor releases the lock.
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace swarm
