#include "kv/watch.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "kv/ack_subject.h"
#include "kv/bucket_state.h"
#include "kv/retry.h"

namespace kv {

using detail::check;
using namespace std::chrono_literals;

namespace {

// With replay expected but nothing arriving this long, ask the consumer
// whether anything is pending: the stream may have emptied meanwhile.
constexpr std::chrono::milliseconds kReplayCheck{200};
// The same for a watch of some keys only, whose replay may hold nothing at
// all (no waiter in a line, no task lease): asked almost at once, since no
// message may ever come to say so. A question too early costs one round
// trip; waiting cost every `swarm lease list` 200 ms.
constexpr std::chrono::milliseconds kFilteredReplayCheck{2};
// How long a replay past its end waits for the keys it skipped (see Impl).
constexpr std::chrono::milliseconds kSettle{250};

bool is_delete(natsMsg* msg) { return detail::is_absence(msg); }

}  // namespace

namespace detail {
Delivery delivery_of(natsMsg* msg, std::string_view what) {
  const char* reply = natsMsg_GetReply(msg);
  if (reply != nullptr)
    if (auto d = parse_ack_subject(reply)) return *d;
  jsMsgMetaData* raw = nullptr;  // an ack subject of another shape: let nats.c read it
  natsStatus status = natsMsg_GetMetaData(&raw, msg);
  if (status != NATS_OK) raise(status, jsErrCode(0), what);
  MetaDataPtr meta(raw);
  return {meta->Sequence.Stream, meta->Sequence.Consumer, meta->Timestamp, meta->NumPending};
}
}  // namespace detail

// A watch is an ordered push consumer bound to the bucket's stream, delivering
// every message it holds, then every new one. swarm's buckets keep one
// revision per key, so that replay is the current value of each key; the
// last-per-subject policy would say the same, but nats-server 2.9 then
// delivers a message twice and miscounts what is pending when a write lands
// as the consumer is made (adr/0010). nats.c's own kvWatcher costs two more
// round trips per watch in 3.4.1 (a stream-name lookup and a consumer
// delete), which every `swarm status` would pay.
struct Watch::Impl {
  std::shared_ptr<Bucket::State> bucket;  // keeps the connection alive
  // The watch's own JetStream context: its requests (the consumer's
  // creation, and its deletion below) wait one attempt's slice, not the
  // connection's whole request timeout. Declared before `sub`, which uses it.
  detail::JsPtr js;
  detail::SubscriptionPtr sub;
  std::string bucket_name;
  std::string pattern;
  std::string what;  // "watch bucket B key P", for errors (built once, not per message)
  bool ignore_deletes = false;
  bool caught_up = false;     // every initial value was delivered
  bool marker_due = false;    // the caught_up event is the next to report
  bool pending_checked = false;
  // The replay is over at the first message with nothing pending after it.
  // While writers keep writing that may never come, so for a watch of every
  // key it is also over at `replay_end` (the stream's last sequence when the
  // watch began), once every key that was there then has come: the stream
  // held `initial_messages`, one per key; a key rewritten (or deleted, or
  // expired) before the replay reached it was skipped, and its newer message
  // comes after that end. So past it the replay settles: it goes on until
  // as many keys not seen before have come as were skipped ("owed"), or
  // nothing more is pending, or kSettle passes (an expired key comes never).
  std::uint64_t replay_end = 0;  // 0: unknown (a watch of some keys only)
  std::uint64_t initial_messages = 0;
  std::uint64_t originals = 0;        // messages delivered at or before replay_end
  std::vector<std::uint64_t> seen;    // hashes of their keys, sorted once settling
  std::unordered_set<std::uint64_t> paid;  // keys not among them that came after
  std::uint64_t owed = 0;
  bool settling = false;
  std::chrono::steady_clock::time_point settle_until{};
  std::uint64_t last_consumer_seq = 0;  // of the last message read here
  std::chrono::milliseconds info_wait{0};  // for the consumer-info request: one attempt's slice
  std::atomic<bool> stopped{false};

  std::string consumer;  // the consumer's name, from the last message's ack subject

  // Ends the subscription, without a round trip once a message came: then
  // nats.c counts one delivered, and AutoUnsubscribe(1) removes it at once
  // and, unlike Unsubscribe, does not wait for the consumer's deletion
  // (nats.c 3.4.1 deletes it only for a max of 0). The deletion is sent with
  // no reply instead, and goes out with the connection's next write (or the
  // server drops the idle consumer by itself within seconds). nats.c 3.4.1's
  // reader thread uses a subscription without holding a reference, so the
  // subscription is retired, not freed (see detail::retire). Before any
  // message, Unsubscribe deletes the consumer and waits: the reader thread
  // handles that answer after every message it took before.
  ~Impl() {
    if (!sub || stopped) return;
    if (!consumer.empty() && natsSubscription_AutoUnsubscribe(sub.get(), 1) == NATS_OK &&
        !natsSubscription_IsValid(sub.get())) {
      natsConnection* nc = bucket->connection->connection.get();
      const std::string api = "$JS.API.CONSUMER.DELETE." + bucket->stream + "." + consumer;
      natsConnection_Publish(nc, api.c_str(), nullptr, 0);
      detail::retire(*bucket->connection, std::move(sub));
      return;
    }
    natsSubscription_Unsubscribe(sub.get());
  }

  // Asks the server whether the consumer has anything left to replay: nothing
  // pending, and everything it delivered already read here (none in flight).
  bool nothing_pending() {
    jsConsumerInfo* raw = nullptr;
    jsErrCode code = jsErrCode(0);
    jsOptions options;
    jsOptions_Init(&options);
    options.Wait = info_wait.count();
    check(natsSubscription_GetConsumerInfo(&raw, sub.get(), &options, &code), "watch " + where(bucket_name, pattern),
          code);
    detail::ConsumerInfoPtr info(raw);
    return info->NumPending == 0 && info->Delivered.Consumer == last_consumer_seq;
  }

  // Whether the message just delivered (of `key`) ends the replay.
  bool ends_replay(const detail::Delivery& delivery, std::string_view key) {
    if (replay_end == 0) return delivery.pending == 0;
    const std::uint64_t h = std::hash<std::string_view>{}(key);
    if (!settling) {
      const bool original = delivery.stream_seq <= replay_end;
      if (original) {
        ++originals;
        seen.push_back(h);
      }
      // The end, or nothing pending (a count the server may give before a
      // rewritten key's newer message is counted): settle from here.
      if (delivery.stream_seq < replay_end && delivery.pending != 0) return false;
      settling = true;
      owed = initial_messages > originals ? initial_messages - originals : 0;
      std::sort(seen.begin(), seen.end());
      settle_until = std::chrono::steady_clock::now() + kSettle;
      if (original) return owed == 0;
    }
    if (!std::binary_search(seen.begin(), seen.end(), h)) paid.insert(h);
    return paid.size() >= owed;
  }
};

Watch::Watch(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Watch::Watch(Watch&&) noexcept = default;
Watch& Watch::operator=(Watch&&) noexcept = default;
Watch::~Watch() = default;

std::optional<WatchEvent> Watch::next(std::chrono::milliseconds timeout) {
  Impl& w = *impl_;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!w.stopped) {
    if (w.marker_due) {
      w.marker_due = false;
      return WatchEvent{WatchEvent::Kind::caught_up, {}};
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left <= 0ms) return std::nullopt;
    // Until it has caught up, a replay asks the server what is pending
    // whenever nothing came for a while: a message's own pending count can
    // be one the server miscounted under writes (adr/0010), and a replay
    // that waited for it would stall.
    auto wait = w.caught_up ? left
                            : std::min(left, w.replay_end == 0 && !w.pending_checked ? kFilteredReplayCheck
                                                                                     : kReplayCheck);
    if (w.settling && !w.caught_up) {
      // Settling waits for owed keys no longer than kSettle in all.
      const auto settle_left = std::chrono::duration_cast<std::chrono::milliseconds>(
          w.settle_until - std::chrono::steady_clock::now());
      if (settle_left <= 0ms) {
        w.caught_up = true;
        return WatchEvent{WatchEvent::Kind::caught_up, {}};
      }
      wait = std::min(wait, settle_left);
    }
    natsMsg* raw = nullptr;
    natsStatus status = natsSubscription_NextMsg(&raw, w.sub.get(), std::max<long>(1, wait.count()));  // nats.c refuses 0
    if (w.stopped) break;
    if (status == NATS_TIMEOUT) {
      if (!w.caught_up) {
        w.pending_checked = true;
        if (w.nothing_pending()) w.caught_up = w.marker_due = true;
      }
      continue;
    }
    // (The error text is built only on failure: this runs once per message.)
    if (status != NATS_OK) detail::raise(status, jsErrCode(0), "watch " + where(w.bucket_name, w.pattern));
    detail::MsgPtr msg(raw);

    detail::Delivery delivery = detail::delivery_of(raw, w.what);
    w.last_consumer_seq = delivery.consumer_seq;
    if (delivery.consumer != w.consumer) w.consumer.assign(delivery.consumer);
    const char* subject = natsMsg_GetSubject(raw);
    const std::string_view key = subject + w.bucket->prefix.size();
    if (!w.caught_up && w.ends_replay(delivery, key)) w.caught_up = w.marker_due = true;

    bool erased = is_delete(raw);
    if (erased && w.ignore_deletes) continue;
    WatchEvent event;
    event.kind = erased ? WatchEvent::Kind::erase : WatchEvent::Kind::put;
    event.expired = erased && detail::is_expiry_marker(raw);
    event.entry.key = key;
    const char* data = natsMsg_GetData(raw);
    event.entry.value.assign(data ? data : "", static_cast<std::size_t>(natsMsg_GetDataLength(raw)));
    event.entry.revision = delivery.stream_seq;
    event.entry.created = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(delivery.timestamp)));
    return event;
  }
  return std::nullopt;
}

void Watch::stop() {
  if (impl_->stopped.exchange(true)) return;
  // Wakes a NextMsg blocked in another thread, and deletes the consumer
  // (one round trip: see ~Impl).
  natsSubscription_Unsubscribe(impl_->sub.get());
}

Watch Bucket::watch(std::string_view pattern, WatchOptions options) const {
  // Creating the consumer is retried through a failover: a consumer the
  // cluster never made is only a little garbage it drops by itself.
  return detail::with_retries(*state_->connection, budget_, [&](std::chrono::milliseconds wait) {
    detail::StreamState at_start = pattern == ">" ? detail::stream_state(*state_, name_, wait) : detail::StreamState{};
    return watch_once(pattern, options, wait, at_start.last_seq, at_start.messages);
  });
}

Watch Bucket::watch_once(std::string_view pattern, const WatchOptions& options, std::chrono::milliseconds wait,
                         std::uint64_t replay_end, std::uint64_t initial_messages) const {
  const std::string what = "watch " + where(name_, pattern);
  require_valid_pattern(name_, pattern);
  auto impl = std::make_unique<Watch::Impl>();
  impl->bucket = state_;
  impl->bucket_name = name_;
  impl->pattern = std::string(pattern);
  impl->what = what;
  impl->ignore_deletes = options.ignore_deletes;
  impl->info_wait = wait;
  impl->replay_end = replay_end;
  impl->initial_messages = initial_messages;

  jsSubOptions sub_options;
  check(jsSubOptions_Init(&sub_options), what);
  sub_options.Stream = state_->stream.c_str();  // bound: no stream lookup by subject
  sub_options.Ordered = true;
  sub_options.Config.DeliverPolicy = js_DeliverAll;
  sub_options.Config.HeadersOnly = options.keys_only;
  const std::string subject = state_->prefix + impl->pattern;
  jsOptions js_options;
  jsOptions_Init(&js_options);
  js_options.Wait = wait.count();
  jsCtx* js = nullptr;
  check(natsConnection_JetStream(&js, state_->connection->connection.get(), &js_options), what);
  impl->js.reset(js);
  natsSubscription* sub = nullptr;
  jsErrCode code = jsErrCode(0);
  check(js_SubscribeSync(&sub, js, subject.c_str(), nullptr, &sub_options, &code), what, code);
  impl->sub.reset(sub);
  // Never drop messages of a large replay because the reader is slower.
  check(natsSubscription_SetPendingLimits(sub, -1, -1), what);
  return Watch(std::move(impl));
}

}  // namespace kv
