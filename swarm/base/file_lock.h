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

#include "swarm/base/safe_dir.h"

namespace swarm {

class FileLock {
 public:
  // The lock file is `name` in `dir` (a folder swarm keeps): opened without
  // following a link (a link there is refused, bad_input).
  //
  // Takes the lock now, or nullopt when another process holds it. `holder`
  // (e.g. "close of slot render") is written into the file for messages.
  static std::optional<FileLock> try_acquire(const SafeDir& dir, const std::string& name, const std::string& holder);

  // Waits up to `wait` for the lock. `on_wait` is called once, with the
  // holder's description, when the lock is not free at once. Returns nullopt
  // when the wait ran out.
  static std::optional<FileLock> acquire(const SafeDir& dir, const std::string& name, const std::string& holder,
                                         std::chrono::milliseconds wait,
                                         const std::function<void(const std::string&)>& on_wait = {});

  // Who holds the lock file `name`, as its holder wrote it ("" when unknown).
  static std::string holder_of(const SafeDir& dir, const std::string& name);

  FileLock(FileLock&& other) noexcept = default;
  FileLock& operator=(FileLock&& other) noexcept = default;
  // Closing the descriptor releases the lock.

 private:
  explicit FileLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace swarm
