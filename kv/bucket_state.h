// What a Bucket and its watches share. Private to kv/.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "kv/ack_subject.h"
#include "kv/bucket.h"
#include "kv/connection_state.h"

namespace kv {

struct Bucket::State {
  std::shared_ptr<detail::ConnectionState> connection;
  std::string stream;      // "KV_<bucket>"
  std::string prefix;      // "$KV.<bucket>."
  BucketConfig config;     // as read at open
  std::uint64_t messages;  // messages in the stream at open (0: nothing to replay)
  std::uint64_t last_seq = 0;  // the stream's last sequence at open
  std::chrono::steady_clock::time_point opened_at;
  // Whether the stream is replicated by a cluster (1), not (0), or not known
  // yet (-1, a bucket bound without a round trip): CAS writes on a clustered
  // stream carry a guard (see Bucket::publish).
  std::atomic<int> clustered{-1};
  // Whether the stream answers direct gets (allow_direct): 1, 0, or -1 not
  // known (a bucket bound without a round trip). See get_together.
  std::atomic<int> direct{-1};
  // Whether the stream refused a message TTL (JetStream error 10166: one
  // made without allow_msg_ttl): writes go without one from then on.
  std::atomic<bool> ttl_refused{false};
  // Whether the stream commits a batch of writes atomically (2.12+,
  // allow_atomic): 1, 0, or -1 not asked yet (see commit_together).
  std::atomic<int> atomic{-1};
  // The Nats-TTL header's value for `ttl`, or empty when none is to be sent
  // (none asked, the server before 2.11, or the stream refused one).
  std::string ttl_header(std::chrono::milliseconds ttl) const;

  jsCtx* js() const { return connection->js.get(); }
};

namespace detail {
// The header a KV delete marker carries ("DEL"; "PURGE" for a purge).
inline constexpr const char* kOperationHeader = "KV-Operation";
// The header of a marker the server itself writes (2.11+, a stream with
// subject delete markers): the key's last message expired by its TTL or the
// stream's age ("MaxAge"). nats.c 3.4.1 reads such a marker as a put with
// an empty value; swarm reads it as the key gone.
inline constexpr const char* kMarkerReasonHeader = "Nats-Marker-Reason";
// Whether a stored message of a KV key says the key is gone: a delete or
// purge marker, or the server's own marker.
bool is_absence(natsMsg* msg);
// Whether it is the server's own marker (never a client's delete): an
// expiry, or an operator's purge or removal of the key's message.
bool is_server_marker(natsMsg* msg);
// Whether it is the server's marker of an end by age ("MaxAge": the
// bucket's TTL or the value's own), not of a purge or a removal.
bool is_expiry_marker(natsMsg* msg);
// The same for a message's headers as text ("NATS/1.0\r\nName: value\r\n...").
bool is_absence(std::string_view headers);
// Reads a stream (`shown`: how errors name it, "bucket B"), waiting `wait`
// for the answer; nullptr when it does not exist.
StreamInfoPtr stream_info_once(jsCtx* js, const std::string& stream, std::string_view shown,
                               std::chrono::milliseconds wait);
// The last sequence of the bucket's stream now (one stream-info request that
// waits `wait`); throws not_found when the bucket is gone.
std::uint64_t last_sequence(const Bucket::State& bucket, const std::string& name, std::chrono::milliseconds wait);
// The same request's last sequence and its count of messages (one per key:
// the buckets keep one revision per key, delete markers included).
struct StreamState {
  std::uint64_t last_seq = 0;
  std::uint64_t messages = 0;
};
// Where a message a consumer delivered sits (its ack subject, else nats.c's
// reading of its metadata); `what` names the read in an error.
Delivery delivery_of(natsMsg* msg, std::string_view what);
// The connection's inbox for answers of requests sent together (pipelined
// writes and reads), made on first use: one subscription for the
// connection's life, never destroyed while answers may still reach it
// (nats.c 3.4.1's reader thread uses a subscription without a reference).
// Answers carry "<reply_prefix><n>", n from next_reply; a batch reads only
// its own numbers. Called with reply_mu held.
void subscribe_replies(ConnectionState& connection);
// Reads the answers numbered from `first` to a batch of `sent` requests on
// that inbox, handing each number's first answer to `take(i, reply)`, until
// each has come or `deadline` passed (answers already there are taken even
// after it). A no-responders answer (nats.c drops it, number and all) counts
// as one of the batch's, unheard; any other failed read (a timeout) ends it.
// What has no answer is the caller's to send alone. Returns how many
// no-responders answers came. Called with reply_mu held.
std::size_t read_replies(ConnectionState& connection, std::uint64_t first, std::size_t sent,
                         std::chrono::steady_clock::time_point deadline,
                         const std::function<void(std::size_t i, natsMsg* reply)>& take);
StreamState stream_state(const Bucket::State& bucket, const std::string& name, std::chrono::milliseconds wait);
// A publish's answer read as JSON: the new revision, or the failure (a
// conflict carries the key's revision when the server said it; `js_code`
// gets JetStream's err_code).
Bucket::WriteResult read_pub_ack(natsMsg* reply, const std::string& what, int* js_code = nullptr);
}  // namespace detail

}  // namespace kv
