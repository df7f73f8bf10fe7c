// A message between agents (`swarm.message.v1`) and where it travels: the
// workspace's bus stream, a subject per inbox (`<root><bucket>.to.<name>`,
// root "swarm.<workspace>.bus.") and one for everyone (`<root><bucket>.all`). Its id is its
// Nats-Msg-Id, so a send repeated after a lost answer is stored once; its
// time and sequence are the server's.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kv/stream.h"
#include "swarm/base/clock.h"
#include "swarm/base/json.h"

namespace swarm {

inline constexpr const char* kMessageSchema = "swarm.message.v1";
inline constexpr std::chrono::milliseconds kBusMaxAge = std::chrono::hours(24 * 7);
inline constexpr std::int64_t kBusMaxBytes = std::int64_t(256) << 20;
// What one stored message may weigh: a body up to kInlineBodyMax, escaped
// as JSON (each byte at most 6), and its envelope. A bigger one is no
// message swarm sends (its body goes to a blob): the bus refuses it.
inline constexpr std::int32_t kBusMaxMessageBytes = 512 * 1024;
// A body longer than this goes to the blob store; the message names it.
inline constexpr std::size_t kInlineBodyMax = 64 * 1024;
// The `to` of a message to everyone.
inline constexpr const char* kToAll = "*";

// What a message says of a blob it carries.
struct BlobRef {
  std::string sha256;  // 64 lowercase hex digits
  std::uint64_t size = 0;
  std::string name;    // the file's name as sent ("" for a long body)
};

struct Message {
  std::string id;
  std::string from;
  std::string to;  // a name, or kToAll
  std::string type;
  std::string corr;
  std::string reply_to;
  std::string body;
  std::optional<BlobRef> blob;

  std::string to_json() const;
};

// One message as the stream holds it: parsed, or corrupt with a reason
// (not JSON, another schema, a field of the wrong type, a `to` its subject
// does not match). Never an exception: a reader shows what it cannot read.
struct Delivered {
  std::uint64_t seq = 0;
  TimePoint time{};
  std::optional<Message> message;
  std::string corrupt_reason;
  bool corrupt() const { return !message.has_value(); }

  // The message with its `seq` and `time`, or {seq, time, state: corrupt, error}.
  Json to_json() const;
};
// `root` and `bucket`: of the workspace whose bus holds it.
Delivered delivered_of(const kv::StreamMessage& stored, std::string_view root, std::string_view bucket);

std::string inbox_subject(std::string_view root, std::string_view bucket, std::string_view name);
std::string all_subject(std::string_view root, std::string_view bucket);

// A message's type, corr, id or reply_to: at most 255 bytes of text with no
// control character (the task id rule); exit 2 naming `what` otherwise.
void require_message_word(std::string_view value, const char* what);
// A fresh message id (a random UUID, version 4).
std::string fresh_message_id();
// The Nats-Msg-Id a message is sent with: its id within its workspace and
// inbox (`<bucket>/<to>/<id>`), so one id sent to two inboxes, or by two
// workspaces of one server, is two messages; a retry of one is stored once.
std::string dedup_id(std::string_view bucket, const Message& message);

// 64 lowercase hex digits.
bool is_sha256_hex(std::string_view text);

}  // namespace swarm
