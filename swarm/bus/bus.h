// The workspace's message bus: sends to one inbox or to all, and the read
// of an inbox (its messages and everyone's, after a cursor, oldest first)
// as two ordered reads merged by sequence. What is read is what the stream
// held up to one sequence taken first, so a message to everyone stored
// while the read runs never jumps ahead of an older one to the inbox (an
// ack after it would lose that one).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kv/connection.h"
#include "kv/doorbell.h"
#include "kv/stream.h"
#include "swarm/base/workspace_names.h"
#include "swarm/bus/message.h"

namespace swarm {

// What one read of an inbox went through (the messages themselves went to
// the reader's visitor, oldest first, as they came).
struct InboxRead {
  // Bus messages retention dropped after the cursor (their sequences
  // cursor+1 .. first_kept-1): any of them to this inbox is lost.
  std::uint64_t dropped = 0;
  std::uint64_t first_kept = 0;
  // The last sequence read (shown or not); the cursor when none was.
  std::uint64_t last_seq = 0;
  // The stream's last sequence when the read began: what it read up to.
  std::uint64_t end = 0;
  // Whether every message read up to last_seq was shown.
  bool all_shown = true;
  // Whether the limit stopped the read before `end`.
  bool more = false;
};

// Which bus a cursor is of: the stream's creation time (unix ms). A bus
// deleted and made again has another, and its sequences start over.
std::int64_t generation_of(const kv::StreamStatus& bus);

class Bus {
 public:
  // The bus of the workspace `names` names (no round trip); its inboxes are
  // those of the session bucket names.sessions.
  Bus(const kv::Connection& connection, const WorkspaceNames& names);

  // Makes the stream (what `up` does) with `replicas`, or checks it; an
  // existing one takes `max_age`/`max_bytes` when they are given. Returns
  // what still differs from what was asked (replicas are never changed).
  // A new one keeps `default_bytes` (the store's share: store_shares.h).
  static std::vector<std::string> ensure(const kv::Connection& connection, const WorkspaceNames& names, int replicas,
                                         std::optional<std::chrono::milliseconds> max_age,
                                         std::optional<std::int64_t> max_bytes,
                                         std::int64_t default_bytes = kBusMaxBytes);

  struct Sent {
    std::uint64_t seq = 0;
    bool duplicate = false;  // a send of this id was stored before
  };
  // Stores the message on its inbox's subject (or everyone's), once per id.
  Sent send(const Message& message) const;
  // The same, as a client that lost the answer did (the fault tests).
  void send_unanswered(const Message& message) const;
  // Removes the messages to `name` up to `acked` (its cursor, just moved):
  // what was read to one inbox takes no room of the bus. Best effort.
  void forget_read(const std::string& name, std::uint64_t acked) const;

  // The messages to `name` and to all after `after`, up to the stream's
  // last sequence as `bus` (its state, read first) has it, oldest first,
  // each handed to `visit` with whether `match` shows it (a corrupt one is
  // always shown); stops after `limit` shown ones (0: no limit). Each
  // subject is read only when a count says it has messages after `after`,
  // and until its reader has caught up or passed the end.
  InboxRead read(const std::string& name, std::uint64_t after, std::size_t limit,
                 const std::function<bool(const Message&)>& match,
                 const std::function<void(const Delivered&, bool shown)>& visit,
                 const kv::StreamStatus& bus) const;

  // Every message the bus keeps, of every workspace whose messages it holds
  // (a read to the last sequence there is when it starts): one workspace
  // for a named one, every unnamed one of the server for the shared bus.
  void for_each_message(const std::function<void(const Delivered&)>& visit) const;

  // The names that have messages sent to them (of this bucket).
  std::vector<std::string> inboxes() const;
  // The stream's state; nullopt when it is missing.
  std::optional<kv::StreamStatus> state() const;
  // A bell that rings at every send to `name` or to all.
  kv::Doorbell doorbell(const std::string& name) const;
  // One that rings at every send of the workspace.
  kv::Doorbell doorbell_all() const;
  // An ordered read of the messages sent to `name` from now on (what `ask`
  // opens before it sends, so no answer comes before it listens).
  kv::StreamReader listen(const std::string& name) const;

  const std::string& bucket() const { return bucket_; }
  const std::string& stream_name() const { return stream_.name(); }
  // A message of this bus as it was stored, read (corrupt when it is not one of its own).
  Delivered delivered(const kv::StreamMessage& stored) const { return delivered_of(stored, root_, bucket_); }

 private:
  std::string inbox_subject_of(const std::string& name) const { return inbox_subject(root_, bucket_, name); }
  std::string all_subject_of() const { return all_subject(root_, bucket_); }
  kv::Connection connection_;
  kv::Stream stream_;
  std::string root_;
  std::string bucket_;
};

}  // namespace swarm
