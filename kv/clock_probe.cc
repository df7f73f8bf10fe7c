// Reading the server's clock: from the creation time it reports for a
// consumer of ours (ephemeral, matching a key no one writes, dropped by the
// server a second after its last use), the way every reader does.
#include "kv/bucket.h"

#include <cJSON.h>

#include <algorithm>
#include <memory>
#include <string>

#include "kv/bucket_state.h"
#include "kv/c_handle.h"
#include "kv/retry.h"
#include "kv/rfc3339.h"

namespace kv {

namespace {

// The probe's consumer: a key no one writes (not a valid slot or lease
// name), removed by the server after this long without interest.
constexpr const char* kClockProbeKey = "_swarm_clock_probe";
constexpr std::int64_t kClockProbeLifetimeNanos = 1000LL * 1000 * 1000;

}  // namespace

std::chrono::nanoseconds Bucket::server_clock_offset(const LocalClock& local_clock,
                                                     std::chrono::nanoseconds* uncertainty) const {
  const std::string subject = state_->prefix + kClockProbeKey;
  jsConsumerConfig config;
  detail::check(jsConsumerConfig_Init(&config), "clock probe of " + where(name_));
  config.AckPolicy = js_AckNone;
  config.DeliverPolicy = js_DeliverNew;
  config.FilterSubject = subject.c_str();
  config.MemoryStorage = true;
  config.InactiveThreshold = kClockProbeLifetimeNanos;
  return detail::with_retries(*state_->connection, budget_, [&](std::chrono::milliseconds wait) {
    jsConsumerInfo* raw = nullptr;
    jsErrCode code = jsErrCode(0);
    jsOptions options = detail::waiting(wait);
    auto sent = local_clock();
    natsStatus status = js_AddConsumer(&raw, state_->js(), state_->stream.c_str(), &config, &options, &code);
    auto answered = local_clock();
    detail::check(status, "read the server's clock through " + where(name_), code);
    detail::ConsumerInfoPtr info(raw);
    // The server stamped it between our send and its answer: call it the middle.
    auto local = sent + (answered - sent) / 2;
    if (uncertainty != nullptr) *uncertainty = std::chrono::duration_cast<std::chrono::nanoseconds>(answered - sent) / 2;
    return std::chrono::nanoseconds(info->Created) -
           std::chrono::duration_cast<std::chrono::nanoseconds>(local.time_since_epoch());
  });
}

// The same consumer as server_clock_offset asks nats.c for, in the API's own
// words, on an inbox of its own that takes one answer.
struct Bucket::ClockProbe::Impl {
  std::shared_ptr<detail::ConnectionState> connection;
  detail::SubscriptionPtr sub;
  std::chrono::steady_clock::time_point sent;

  ~Impl() {
    if (!sub) return;
    if (natsSubscription_IsValid(sub.get())) natsSubscription_Unsubscribe(sub.get());  // never answered
    detail::retire(*connection, std::move(sub));
  }
};

Bucket::ClockProbe::ClockProbe(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Bucket::ClockProbe::ClockProbe(ClockProbe&&) noexcept = default;
Bucket::ClockProbe& Bucket::ClockProbe::operator=(ClockProbe&&) noexcept = default;
Bucket::ClockProbe::~ClockProbe() = default;

Bucket::ClockProbe Bucket::send_clock_probe() const {
  auto impl = std::make_unique<ClockProbe::Impl>();
  impl->connection = state_->connection;
  natsConnection* nc = state_->connection->connection.get();
  char* inbox = nullptr;
  if (natsInbox_Create(&inbox) != NATS_OK) return ClockProbe(std::move(impl));
  const std::string reply = inbox;
  natsInbox_Destroy(inbox);
  natsSubscription* raw = nullptr;
  if (natsConnection_SubscribeSync(&raw, nc, reply.c_str()) != NATS_OK) return ClockProbe(std::move(impl));
  detail::SubscriptionPtr sub(raw);
  if (natsSubscription_AutoUnsubscribe(raw, 1) != NATS_OK) return ClockProbe(std::move(impl));
  const std::string api = "$JS.API.CONSUMER.CREATE." + state_->stream;
  const std::string body = "{\"stream_name\":\"" + state_->stream +
                           "\",\"config\":{\"deliver_policy\":\"new\",\"ack_policy\":\"none\",\"filter_subject\":\"" +
                           state_->prefix + kClockProbeKey + "\",\"mem_storage\":true,\"inactive_threshold\":" +
                           std::to_string(kClockProbeLifetimeNanos) + "}}";
  impl->sent = std::chrono::steady_clock::now();
  if (natsConnection_PublishRequest(nc, api.c_str(), reply.c_str(), body.data(), static_cast<int>(body.size())) ==
      NATS_OK)
    impl->sub = std::move(sub);
  return ClockProbe(std::move(impl));
}

std::optional<Bucket::ServerStamp> Bucket::ClockProbe::read(std::chrono::milliseconds wait) {
  if (!impl_ || !impl_->sub) return std::nullopt;
  natsSubscription* sub = impl_->sub.get();
  // Unless its answer is here, the request may still be in the write
  // buffer, where nats.c's flusher would leave it a while: flush it now.
  int queued = 0;
  if (natsSubscription_GetPending(sub, &queued, nullptr) != NATS_OK || queued == 0)
    natsConnection_FlushTimeout(impl_->connection->connection.get(), std::max<std::int64_t>(1, wait.count()));
  natsMsg* raw = nullptr;
  if (natsSubscription_NextMsg(&raw, sub, std::max<std::int64_t>(1, wait.count())) != NATS_OK) return std::nullopt;
  const auto answered = std::chrono::steady_clock::now();
  detail::MsgPtr answer(raw);
  const char* data = natsMsg_GetData(raw);
  std::unique_ptr<cJSON, CFree<cJSON_Delete>> doc(
      cJSON_ParseWithLength(data ? data : "", static_cast<std::size_t>(natsMsg_GetDataLength(raw))));
  const cJSON* created = cJSON_GetObjectItemCaseSensitive(doc.get(), "created");
  if (!cJSON_IsString(created) || cJSON_GetObjectItemCaseSensitive(doc.get(), "error") != nullptr)
    return std::nullopt;
  const auto stamped = parse_rfc3339(created->valuestring);
  if (!stamped) return std::nullopt;
  return ServerStamp{impl_->sent, answered, *stamped};
}

}  // namespace kv
