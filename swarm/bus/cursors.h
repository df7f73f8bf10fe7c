// Where each inbox has read to: KV `swarm-cursors`, a key per inbox
// (`<bucket>.<name>`), moved by CAS and never backwards. A message is
// delivered until its inbox's cursor passes it ("ack after processing").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "kv/bucket.h"
#include "kv/connection.h"

namespace swarm {

inline constexpr const char* kCursorBucket = "swarm-cursors";
inline constexpr const char* kCursorSchema = "swarm.cursor.v1";

class Cursors {
 public:
  // Makes the bucket (what `up` does), or checks it.
  static void ensure(const kv::Connection& connection, int replicas);
  // The cursors of the workspace whose session bucket is `bucket` (no round trip).
  Cursors(const kv::Connection& connection, std::string bucket);

  struct Cursor {
    std::uint64_t seq = 0;       // 0: nothing acked yet
    std::uint64_t revision = 0;  // 0: no record
  };
  Cursor get(const std::string& name) const;

  struct Acked {
    std::uint64_t was = 0;
    std::uint64_t now = 0;
    bool moved = false;  // false: the cursor was at `seq` or past it already
  };
  // Moves the cursor of `name` to `seq` unless it is there or past it: a
  // CAS write, read again and retried (a bounded number of times) when
  // another ack moved it meanwhile.
  Acked ack(const std::string& name, std::uint64_t seq) const;

  // Every inbox of the workspace with a cursor, and its sequence.
  std::map<std::string, std::uint64_t> all() const;

 private:
  std::string key_of(const std::string& name) const { return bucket_ + "." + name; }
  kv::Bucket keys_;
  std::string bucket_;
};

}  // namespace swarm
