// An exclusive lock on a file (flock), for work on this host that must not
// run twice at once: the local work on one slot's folder, or `swarm up`.
// The kernel drops it when its holder dies, even by SIGKILL, so a crash never
// leaves it held; the lock file itself stays (it holds no state).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace swarm {

class FileLock {
 public:
  // Takes the lock now, or nullopt when another process holds it. `holder`
  // (e.g. "close of slot render") is written into the file for messages.
  static std::optional<FileLock> try_acquire(const std::filesystem::path& path, const std::string& holder);

  // Waits up to `wait` for the lock. `on_wait` is called once, with the
  // holder's description, when the lock is not free at once. Returns nullopt
  // when the wait ran out.
  static std::optional<FileLock> acquire(const std::filesystem::path& path, const std::string& holder,
                                         std::chrono::milliseconds wait,
                                         const std::function<void(const std::string&)>& on_wait = {});

  // Who holds the lock at `path`, as its holder wrote it ("" when unknown).
  static std::string holder_of(const std::filesystem::path& path);

  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace swarm
