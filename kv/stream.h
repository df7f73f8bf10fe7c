// A handle on one JetStream stream used as an append-only log: publishes
// deduplicated by message id, direct gets of a subject's last message, and
// reads of a subject (or a pattern) from a sequence or a time, once or live.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kv/connection.h"
#include "kv/error.h"

namespace kv {

// The smallest a stream is made when it is made to fit (1 MiB).
inline constexpr std::int64_t kSmallestStream = std::int64_t(1) << 20;

// What a stream should look like. Messages older than max_age, or beyond
// max_bytes, are dropped oldest first.
struct StreamConfig {
  std::string name;
  std::vector<std::string> subjects;
  std::chrono::milliseconds max_age{0};  // 0: kept forever
  std::int64_t max_bytes = -1;           // -1: no limit
  int replicas = 1;
  // A publish repeated with the same message id within this window is
  // stored once (the server's deduplication).
  std::chrono::milliseconds duplicate_window{std::chrono::minutes(2)};
  // A new stream the server has no room for at max_bytes is made with half
  // as much, and half again, down to 1 MiB (a small disk): state() tells
  // what it got.
  bool shrink_to_fit = false;
  // At its limit, a new message is refused (no_room) rather than the oldest
  // dropped.
  bool discard_new = false;
  std::int32_t max_msg_size = -1;  // -1: the server's limit
};

// The ways `have` differs from `want` in its limits and replicas, one plain
// sentence each; empty when they match.
std::vector<std::string> differences(const StreamConfig& want, const StreamConfig& have);

struct StreamMessage {
  std::string subject;
  std::string data;
  std::uint64_t seq = 0;
  // When the server stored it (the server's clock).
  std::chrono::system_clock::time_point time{};
};

struct StreamStatus {
  StreamConfig config;
  std::uint64_t first_seq = 0;
  std::uint64_t last_seq = 0;
  std::uint64_t messages = 0;
  std::uint64_t bytes = 0;
  bool sealed = false;
  std::string leader;  // the server that leads it (empty when not clustered)
  // When it was made: a stream deleted and made again has another, and
  // sequences that start over.
  std::chrono::system_clock::time_point created{};
};

// Where a read starts: at a sequence, or only with what comes after it
// was made.
struct ReadFrom {
  std::uint64_t seq = 1;
  bool new_only = false;  // wins over seq
};

// An ordered read of the messages matching one subject or pattern. A read
// is caught up once a message it delivered had nothing pending after it;
// next() then waits for new messages (a follow) or the caller stops. (A
// read where nothing matches never catches up: look first, see next().)
class StreamReader {
 public:
  StreamReader(StreamReader&&) noexcept;
  StreamReader& operator=(StreamReader&&) noexcept;
  ~StreamReader();

  // The next message, or nullopt when none came within `timeout`.
  std::optional<StreamMessage> next(std::chrono::milliseconds timeout);
  // Whether everything the stream held at the start was delivered.
  bool caught_up() const;
  // Makes a blocked next() return; safe from another thread.
  void stop();

  struct Impl;
  explicit StreamReader(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

class Stream {
 public:
  // Binds the stream with no round trip, trusting that it exists.
  static Stream bind(const Connection& connection, const std::string& name);

  // Creates the stream (file storage, old messages dropped first, direct
  // gets allowed), or binds it when it exists. An existing stream whose
  // limits differ is updated to `want` when `update` says so, else left as
  // it is; `changed` gets the differences it found either way (replicas
  // are never changed: moving a stream's replicas is an operator's act).
  static Stream ensure(const Connection& connection, const StreamConfig& want, bool update,
                       std::vector<std::string>* changed = nullptr);

  // What `up` does for a log (the journal, the bus): a missing stream is
  // made with `defaults` (shrunk to fit unless `max_bytes` is given); an
  // existing one takes `max_age` and `max_bytes` when given (each on its
  // own), keeps its own otherwise, and gets its subjects back. Returns what
  // still differs: other replicas (never changed), less room than asked.
  // no_room when the server has no room for it.
  static std::vector<std::string> ensure_log(const Connection& connection, StreamConfig defaults,
                                             std::optional<std::chrono::milliseconds> max_age,
                                             std::optional<std::int64_t> max_bytes);

  const std::string& name() const { return name_; }

  // The stream's config and counts now; nullopt when it does not exist.
  std::optional<StreamStatus> state() const;

  struct Published {
    std::uint64_t seq = 0;
    bool duplicate = false;  // an earlier publish of this id was stored
  };
  // Stores `data` on `subject`; a publish that got no answer is sent again
  // with the same `msg_id`, so it is stored once.
  Published publish(std::string_view subject, std::string_view data, const std::string& msg_id) const;
  // Sends it and waits for nothing: what a client whose answer was lost
  // did (the fault tests' way to lose one). The send is flushed.
  void publish_unanswered(std::string_view subject, std::string_view data, const std::string& msg_id) const;

  // How many messages matching `filter` have a sequence of `seq` or more:
  // the count of a consumer made for it, which the server drops by itself
  // a few seconds later (one round trip, never a read of the messages).
  std::uint64_t count_from(std::string_view filter, std::uint64_t seq) const;

  // The last message on `subject` (a direct get, one round trip); nullopt
  // when it has none.
  std::optional<StreamMessage> last(std::string_view subject) const;
  // The first message at or after `seq` whose subject matches `filter`.
  std::optional<StreamMessage> next(std::string_view filter, std::uint64_t seq) const;

  // Removes every message on `subject` (one subject, or a pattern).
  void purge(std::string_view subject) const;
  // Removes the messages on `subject` whose sequence is below `below`.
  void purge_below(std::string_view subject, std::uint64_t below) const;

  // The subjects matching `filter` that hold messages, sorted.
  std::vector<std::string> subjects(std::string_view filter) const;

  // An ordered read of `filter` (a subject or pattern) from `from`.
  StreamReader read(std::string_view filter, const ReadFrom& from) const;

  // The same stream, whose requests (retries included) take at most `budget`.
  Stream with_budget(std::chrono::milliseconds budget) const;

  struct State;

 private:
  Stream(std::shared_ptr<State> state, std::string name) : state_(std::move(state)), name_(std::move(name)) {}
  std::shared_ptr<State> state_;
  std::string name_;
  std::chrono::milliseconds budget_{0};  // 0: the connection's
};

}  // namespace kv
