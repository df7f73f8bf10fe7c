// Where each inbox has read to: the workspace's cursor bucket, a key per inbox
// (`<bucket>.<name>`), moved by CAS and never backwards. A message is
// delivered until its inbox's cursor passes it ("ack after processing").
// A cursor names the bus it was written for (the stream's creation time):
// a bus deleted and made again starts its sequences over, and a cursor of
// the old one reads as 0 (and is written over by the next ack).
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <optional>
#include <string>

#include "kv/bucket.h"
#include "kv/connection.h"
#include "kv/stream.h"
#include "swarm/base/workspace_names.h"

namespace swarm {

inline constexpr const char* kCursorSchema = "swarm.cursor.v1";

class Cursors {
 public:
  // Makes the bucket (what `up` does), or checks it.
  static void ensure(const kv::Connection& connection, const WorkspaceNames& names, int replicas);
  // The cursors of the workspace `names` names, its inboxes those of its
  // session bucket (no round trip).
  Cursors(const kv::Connection& connection, const WorkspaceNames& names);

  struct Cursor {
    std::uint64_t seq = 0;       // 0: nothing acked yet (on this bus)
    std::uint64_t revision = 0;  // 0: no record
    bool of_old_bus = false;     // the record was of a bus made before this one
    // The record says a sequence past the bus's last (no ack writes one: a
    // planted record): read as 0, so that nothing is skipped, and written
    // over by the next ack; `stored` is what it said.
    bool beyond = false;
    std::uint64_t stored = 0;
    // When the message at `seq` was stored (ms since the epoch; -1 not
    // known): every later message was stored at or after it.
    std::int64_t at_ms = -1;
  };
  // The cursor of `name` on `bus` (its state: its creation time and last sequence).
  Cursor get(const std::string& name, const kv::StreamStatus& bus) const;

  struct Acked {
    std::uint64_t was = 0;
    std::uint64_t now = 0;
    bool moved = false;  // false: the cursor was at `seq` or past it already
  };
  // Moves the cursor of `name` to `seq` unless it is there or past it: a
  // CAS write, read again and retried (a bounded number of times) when
  // another ack moved it meanwhile. `seq` past the bus's last sequence is
  // bad_input (nothing moves).
  Acked ack(const std::string& name, std::uint64_t seq, const kv::StreamStatus& bus) const;

  // A record whose sequence is past `bus`'s last (see Cursor::beyond) put
  // back to nothing acked (doctor --fix), at the revision it was read at.
  void forget(const std::string& name, std::uint64_t revision) const;

  // Every inbox of the workspace with a cursor on bus `bus`: its sequence
  // and when that message was stored (Cursor's seq and at_ms).
  std::map<std::string, Cursor> all(std::int64_t bus) const;

  // Whether the bus's age limit may have dropped messages after a cursor
  // whose message was stored at `at_ms`: only a message older than the
  // limit is dropped (the bus refuses when full, and acks remove only what
  // their own inbox acked), and every message after the cursor is younger
  // than the cursor's own. Unknown (-1): maybe.
  static bool age_may_have_dropped(std::int64_t at_ms, const kv::StreamStatus& bus);

  // What a cursor record says: its sequence, and the bus it is of.
  static std::pair<std::uint64_t, std::int64_t> parse(const std::string& value);
  static std::int64_t at_of(const std::string& value);

 private:
  std::string key_of(const std::string& name) const { return bucket_ + "." + name; }
  kv::Bucket keys_;
  kv::Stream bus_;  // read again when a cursor looks past the last message a caller saw
  std::string bus_subjects_;
  std::string bucket_;
  std::string cursor_bucket_;
};

}  // namespace swarm
