#include "kv/watch.h"

#include <atomic>

#include "kv/bucket_state.h"

namespace kv {

using detail::check;

struct Watch::Impl {
  std::shared_ptr<Bucket::State> bucket;  // keeps the store and connection alive
  detail::WatcherPtr watcher;
  std::string bucket_name;
  std::string pattern;
  std::atomic<bool> stopped{false};
};

Watch::Watch(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Watch::Watch(Watch&&) noexcept = default;
Watch& Watch::operator=(Watch&&) noexcept = default;
Watch::~Watch() = default;

std::optional<WatchEvent> Watch::next(std::chrono::milliseconds timeout) {
  if (impl_->stopped) return std::nullopt;
  // nats.c rejects a zero wait; a non-positive one means "poll".
  auto wait = timeout.count() > 0 ? timeout.count() : 1;
  kvEntry* raw = nullptr;
  natsStatus status = kvWatcher_Next(&raw, impl_->watcher.get(), wait);
  if (status == NATS_TIMEOUT) return std::nullopt;
  if (impl_->stopped) return std::nullopt;
  check(status, "watch " + where(impl_->bucket_name, impl_->pattern));
  WatchEvent event;
  if (raw == nullptr) {
    // nats.c's "initial values done" marker.
    event.kind = WatchEvent::Kind::caught_up;
    return event;
  }
  detail::EntryPtr entry(raw);
  kvOperation op = kvEntry_Operation(raw);
  event.kind = op == kvOp_Put ? WatchEvent::Kind::put : WatchEvent::Kind::erase;
  event.entry = detail::entry_of(raw);
  return event;
}

void Watch::stop() {
  if (impl_->stopped.exchange(true)) return;
  kvWatcher_Stop(impl_->watcher.get());
}

Watch Bucket::watch(std::string_view pattern, WatchOptions options) const {
  kvWatchOptions raw_options;
  check(kvWatchOptions_Init(&raw_options), "watch options");
  raw_options.IgnoreDeletes = options.ignore_deletes;
  raw_options.MetaOnly = options.keys_only;
  auto impl = std::make_unique<Watch::Impl>();
  impl->bucket = state_;
  impl->bucket_name = name_;
  impl->pattern = std::string(pattern);
  kvWatcher* watcher = nullptr;
  check(kvStore_Watch(&watcher, state_->store.get(), impl->pattern.c_str(), &raw_options),
        "watch " + where(name_, pattern));
  impl->watcher.reset(watcher);
  return Watch(std::move(impl));
}

}  // namespace kv
