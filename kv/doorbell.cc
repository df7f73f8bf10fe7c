#include "kv/doorbell.h"

#include <condition_variable>
#include <mutex>

#include "kv/connection_state.h"

namespace kv {

struct Doorbell::Impl {
  std::shared_ptr<detail::ConnectionState> connection;  // outlives the subscriptions
  std::mutex mu;
  std::condition_variable rung_cv;
  bool rung = false;
  std::vector<detail::SubscriptionPtr> subscriptions;

  static void on_message(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
    natsMsg_Destroy(msg);
    auto* self = static_cast<Impl*>(closure);
    {
      std::lock_guard<std::mutex> lock(self->mu);
      self->rung = true;
    }
    self->rung_cv.notify_all();
  }

  ~Impl() {
    // Unsubscribed first: no callback can run on this object after.
    for (auto& sub : subscriptions) natsSubscription_Unsubscribe(sub.get());
    subscriptions.clear();
  }
};

Doorbell::Doorbell(const Connection& connection, const std::vector<std::string>& subjects)
    : impl_(std::make_unique<Impl>()) {
  impl_->connection = connection.state();
  natsConnection* nc = impl_->connection->connection.get();
  for (const auto& subject : subjects) {
    natsSubscription* sub = nullptr;
    detail::check(natsConnection_Subscribe(&sub, nc, subject.c_str(), &Impl::on_message, impl_.get()),
                  "subscribe to " + subject);
    impl_->subscriptions.emplace_back(sub);
  }
  detail::check(natsConnection_FlushTimeout(nc, impl_->connection->request_timeout.count()),
                "subscribe to " + (subjects.empty() ? std::string() : subjects.front()));
}

Doorbell::Doorbell(Doorbell&&) noexcept = default;
Doorbell& Doorbell::operator=(Doorbell&&) noexcept = default;
Doorbell::~Doorbell() = default;

bool Doorbell::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->rung_cv.wait_for(lock, timeout, [&] { return impl_->rung; });
  const bool rung = impl_->rung;
  impl_->rung = false;
  return rung;
}

}  // namespace kv
