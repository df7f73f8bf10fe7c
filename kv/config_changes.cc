// Bucket::ConfigChanges: the server's advisory that a bucket's stream was
// updated, heard on a subscription of its own and asked without blocking.
#include <nats/nats.h>

#include "kv/bucket.h"
#include "kv/bucket_state.h"
#include "kv/connection_state.h"
#include "kv/error.h"

namespace kv {

struct Bucket::ConfigChanges::Impl {
  std::shared_ptr<detail::ConnectionState> connection;
  detail::SubscriptionPtr sub;

  ~Impl() {
    if (!sub) return;
    if (natsSubscription_IsValid(sub.get())) natsSubscription_Unsubscribe(sub.get());
    detail::retire(*connection, std::move(sub));
  }
};

Bucket::ConfigChanges::ConfigChanges(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Bucket::ConfigChanges::ConfigChanges(ConfigChanges&&) noexcept = default;
Bucket::ConfigChanges::~ConfigChanges() = default;

bool Bucket::ConfigChanges::changed() {
  if (!impl_ || !impl_->sub) return false;
  bool heard = false;
  // Every advisory waiting is taken: one change or several, one answer.
  for (;;) {
    int pending = 0;
    if (natsSubscription_GetPending(impl_->sub.get(), &pending, nullptr) != NATS_OK || pending <= 0) break;
    natsMsg* msg = nullptr;
    if (natsSubscription_NextMsg(&msg, impl_->sub.get(), 1) != NATS_OK) break;
    natsMsg_Destroy(msg);
    heard = true;
  }
  return heard;
}

Bucket::ConfigChanges Bucket::config_changes() const {
  auto impl = std::make_unique<ConfigChanges::Impl>();
  impl->connection = state_->connection;
  natsConnection* nc = state_->connection->connection.get();
  const std::string subject = "$JS.EVENT.ADVISORY.STREAM.UPDATED." + state_->stream;
  natsSubscription* raw = nullptr;
  natsStatus status = natsConnection_SubscribeSync(&raw, nc, subject.c_str());
  detail::SubscriptionPtr sub(raw);
  if (status == NATS_OK)
    status = natsConnection_FlushTimeout(nc, std::max<std::int64_t>(1, state_->connection->request_timeout.count()));
  if (status != NATS_OK)
    throw Error(status == NATS_TIMEOUT ? Errc::timeout : Errc::unavailable,
                "cannot listen for changes of bucket " + name_ + ": " + natsStatus_GetText(status));
  impl->sub = std::move(sub);
  return ConfigChanges(std::move(impl));
}

}  // namespace kv
