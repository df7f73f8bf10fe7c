#include "kv/watch.h"

#include <atomic>
#include <charconv>
#include <cstring>
#include <optional>
#include <string_view>

#include "kv/ack_subject.h"
#include "kv/bucket_state.h"

namespace kv {

using detail::check;
using namespace std::chrono_literals;

namespace {

constexpr const char* kOperationHeader = "KV-Operation";
// With replay expected but nothing arriving this long, ask the consumer
// whether anything is pending: the stream may have emptied meanwhile.
constexpr std::chrono::milliseconds kReplayCheck{200};

detail::Delivery delivery_of(natsMsg* msg, const std::string& bucket, const std::string& pattern) {
  const char* reply = natsMsg_GetReply(msg);
  if (reply != nullptr)
    if (auto d = detail::parse_ack_subject(reply)) return *d;
  jsMsgMetaData* raw = nullptr;  // an ack subject of another shape: let nats.c read it
  natsStatus status = natsMsg_GetMetaData(&raw, msg);
  if (status != NATS_OK) detail::raise(status, jsErrCode(0), "watch " + where(bucket, pattern));
  detail::MetaDataPtr meta(raw);
  return {meta->Sequence.Stream, meta->Sequence.Consumer, meta->Timestamp, meta->NumPending};
}

bool is_delete(natsMsg* msg) {
  const char* op = nullptr;
  return natsMsgHeader_Get(msg, kOperationHeader, &op) == NATS_OK && op != nullptr &&
         (std::strcmp(op, "DEL") == 0 || std::strcmp(op, "PURGE") == 0);
}

}  // namespace

// A watch is an ordered push consumer bound to the bucket's stream, delivering
// the last message of each matching key, then every new one. nats.c's own
// kvWatcher costs two more round trips per watch in 3.4.1 (a stream-name
// lookup and a consumer delete), which every `swarm status` would pay.
struct Watch::Impl {
  std::shared_ptr<Bucket::State> bucket;  // keeps the connection alive
  detail::SubscriptionPtr sub;
  std::string bucket_name;
  std::string pattern;
  bool ignore_deletes = false;
  bool caught_up = false;     // every initial value was delivered
  bool marker_due = false;    // the caught_up event is the next to report
  bool pending_checked = false;
  std::uint64_t last_consumer_seq = 0;  // of the last message read here
  std::atomic<bool> stopped{false};

  // Asks the server whether the consumer has anything left to replay: nothing
  // pending, and everything it delivered already read here (none in flight).
  bool nothing_pending() {
    jsConsumerInfo* raw = nullptr;
    jsErrCode code = jsErrCode(0);
    check(natsSubscription_GetConsumerInfo(&raw, sub.get(), nullptr, &code), "watch " + where(bucket_name, pattern),
          code);
    detail::ConsumerInfoPtr info(raw);
    return info->NumPending == 0 && info->Delivered.Consumer == last_consumer_seq;
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
    auto wait = w.caught_up || w.pending_checked ? left : std::min(left, kReplayCheck);
    natsMsg* raw = nullptr;
    natsStatus status = natsSubscription_NextMsg(&raw, w.sub.get(), wait.count());  // nats.c refuses 0
    if (w.stopped) break;
    if (status == NATS_TIMEOUT) {
      if (!w.caught_up && !w.pending_checked) {
        w.pending_checked = true;
        if (w.nothing_pending()) w.caught_up = w.marker_due = true;
      }
      continue;
    }
    // (The error text is built only on failure: this runs once per message.)
    if (status != NATS_OK) detail::raise(status, jsErrCode(0), "watch " + where(w.bucket_name, w.pattern));
    detail::MsgPtr msg(raw);

    detail::Delivery delivery = delivery_of(raw, w.bucket_name, w.pattern);
    w.last_consumer_seq = delivery.consumer_seq;
    if (!w.caught_up && delivery.pending == 0) w.caught_up = w.marker_due = true;

    bool erased = is_delete(raw);
    if (erased && w.ignore_deletes) continue;
    WatchEvent event;
    event.kind = erased ? WatchEvent::Kind::erase : WatchEvent::Kind::put;
    const char* subject = natsMsg_GetSubject(raw);
    event.entry.key = subject + w.bucket->prefix.size();
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
  // Wakes a NextMsg blocked in another thread; the consumer itself is left
  // for the server to drop once it has no interest (no round trip).
  natsSubscription_Unsubscribe(impl_->sub.get());
}

Watch Bucket::watch(std::string_view pattern, WatchOptions options) const {
  const std::string what = "watch " + where(name_, pattern);
  require_valid_pattern(name_, pattern);
  auto impl = std::make_unique<Watch::Impl>();
  impl->bucket = state_;
  impl->bucket_name = name_;
  impl->pattern = std::string(pattern);
  impl->ignore_deletes = options.ignore_deletes;

  jsSubOptions sub_options;
  check(jsSubOptions_Init(&sub_options), what);
  sub_options.Stream = state_->stream.c_str();  // bound: no stream lookup by subject
  sub_options.Ordered = true;
  sub_options.Config.DeliverPolicy = js_DeliverLastPerSubject;
  sub_options.Config.HeadersOnly = options.keys_only;
  const std::string subject = state_->prefix + impl->pattern;
  natsSubscription* sub = nullptr;
  jsErrCode code = jsErrCode(0);
  check(js_SubscribeSync(&sub, state_->js(), subject.c_str(), nullptr, &sub_options, &code), what, code);
  impl->sub.reset(sub);
  // Never drop messages of a large replay because the reader is slower.
  check(natsSubscription_SetPendingLimits(sub, -1, -1), what);
  return Watch(std::move(impl));
}

}  // namespace kv
