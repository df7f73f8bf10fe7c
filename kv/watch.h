// A live watch of keys in a bucket, and the entry type every read returns.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace kv {

struct Entry {
  std::string key;
  std::string value;
  std::uint64_t revision = 0;
  // When the server stored this revision (the server's clock, not the writer's).
  std::chrono::system_clock::time_point created{};
};

struct WatchOptions {
  bool ignore_deletes = false;  // do not report delete and purge events
  bool keys_only = false;       // values are left empty (headers only)
};

struct WatchEvent {
  enum class Kind { put, erase, caught_up };
  Kind kind = Kind::put;
  // An erase the server wrote itself: the key's message ended by its age
  // (see Bucket::announce_expiry); `entry.created` is when it did.
  bool expired = false;
  Entry entry;  // empty for caught_up; value empty for erase
};

class Watch {
 public:
  Watch(Watch&&) noexcept;
  Watch& operator=(Watch&&) noexcept;
  ~Watch();

  // The next event, or nullopt when none arrives within `timeout` (which must
  // be positive: nats.c refuses a zero wait). Throws when the watch breaks.
  std::optional<WatchEvent> next(std::chrono::milliseconds timeout);

  // Makes a blocked next() return; safe to call from another thread.
  void stop();

  struct Impl;
  explicit Watch(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kv
