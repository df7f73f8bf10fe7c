#include "swarm/slots/session_store.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/base/record.h"

namespace swarm {

namespace {

// A key swarm keeps beside the sessions (the token watermark's _fence,
// kFenceKey): a slot's name starts with a letter or a digit.
bool is_own_key(const std::string& key) { return !key.empty() && key.front() == '_'; }

}  // namespace

SessionEntry session_entry_of(kv::Entry&& entry, bool keep_json) {
  SessionEntry out;
  out.slot = std::move(entry.key);
  out.revision = entry.revision;
  out.stored_at = entry.created;
  ParsedSession parsed = parse_session(entry.value);
  out.corrupt_reason = record::keyed_reason(out.slot, is_valid_slot_name(out.slot), "slot", parsed.corrupt_reason,
                                            "slot", parsed.session ? &parsed.session->slot : nullptr);
  if (!out.corrupt_reason.empty()) {
    out.raw = std::move(entry.value);
    return out;
  }
  out.session = std::move(parsed.session);
  if (keep_json && parsed.as_written) out.json_as_stored = std::move(entry.value);
  return out;
}

std::optional<SessionEvent> SessionWatch::next(std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  auto event = translating_kv([&] { return watch_.next(timeout); });
  // swarm's own keys of the bucket (the watermark's _fence) are no session.
  while (event && event->kind != kv::WatchEvent::Kind::caught_up && is_own_key(event->entry.key)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    event = translating_kv([&] { return watch_.next(std::max(left, std::chrono::milliseconds(0))); });
  }
  if (!event) return std::nullopt;
  SessionEvent out;
  switch (event->kind) {
    case kv::WatchEvent::Kind::caught_up: out.kind = SessionEvent::Kind::caught_up; break;
    case kv::WatchEvent::Kind::erase:
      out.kind = SessionEvent::Kind::erase;
      out.expired = event->expired;
      out.entry.slot = event->entry.key;
      out.entry.revision = event->entry.revision;
      out.entry.stored_at = event->entry.created;
      break;
    case kv::WatchEvent::Kind::put:
      out.kind = SessionEvent::Kind::put;
      out.entry = session_entry_of(std::move(event->entry));
      break;
  }
  return out;
}

SessionStore SessionStore::open(const kv::Connection& connection, const std::string& bucket) {
  try {
    return SessionStore(kv::Bucket::open(connection, bucket));
  } catch (const kv::Error& e) {
    throw bucket_open_error(e, "session", bucket, connection.connected_url());
  }
}

SessionStore SessionStore::ensure(const kv::Connection& connection, const std::string& bucket,
                                  std::chrono::milliseconds ttl, int replicas) {
  return translating_kv([&] {
    return SessionStore(kv::Bucket::ensure(connection, {.name = bucket, .ttl = ttl, .replicas = replicas}));
  });
}

std::chrono::milliseconds SessionStore::ttl() const {
  const std::int64_t read = ttl_ms_->load();
  return read >= 0 ? std::chrono::milliseconds(read) : bucket_config().ttl;
}

kv::Bucket::ConfigChanges SessionStore::config_changes() const {
  return translating_kv([&] { return bucket_.config_changes(); });
}

std::chrono::milliseconds SessionStore::current_ttl() const {
  const auto ttl =
      translating_kv([&] { return kv::Bucket::open(bucket_.connection(), bucket_.name()).config().ttl; });
  ttl_ms_->store(ttl.count());
  return ttl;
}

bool SessionStore::announces_expiry() const {
  return translating_kv([&] { return bucket_.announces_expiry(); });
}

kv::BucketConfig SessionStore::bucket_config() const {
  return translating_kv([&] { return bucket_.config(); });
}

std::optional<SessionEntry> SessionStore::get(const std::string& slot) const {
  require_slot_name(slot);
  auto entry = translating_kv([&] { return bucket_.get(slot); });
  if (!entry) return std::nullopt;
  return session_entry_of(std::move(*entry));
}

std::uint64_t SessionStore::create(const Session& session) const {
  require_slot_name(session.slot);
  return translating_kv([&] { return bucket_.create(session.slot, to_json(session)); });
}

std::uint64_t SessionStore::begin(const Session& session, std::optional<std::uint64_t> over) const {
  require_slot_name(session.slot);
  const std::string server = watermark_ ? watermark_->before_grant(bucket_) : std::string();
  const std::string value = to_json(session);
  const std::uint64_t token = translating_kv(
      [&] { return over ? bucket_.update(session.slot, value, *over) : bucket_.create(session.slot, value); });
  if (!watermark_) return token;
  try {
    watermark_->granted(bucket_, server, token);
  } catch (...) {
    // A token that may be another's is never used: the record goes (by CAS
    // on what this wrote), and the join is refused.
    try {
      bucket_.erase(session.slot, token);
    } catch (const std::exception&) {
    }
    throw;
  }
  return token;
}

std::uint64_t SessionStore::update(const Session& session, std::uint64_t revision) const {
  require_slot_name(session.slot);
  return translating_kv([&] { return bucket_.update(session.slot, to_json(session), revision); });
}

void SessionStore::erase(const std::string& slot, std::uint64_t revision) const {
  require_slot_name(slot);
  translating_kv([&] { bucket_.erase(slot, revision); });
}

void SessionStore::erase(const SessionEntry& entry) const {
  translating_kv([&] { bucket_.erase(entry.slot, entry.revision); });
}

namespace {

// Parses batches of stored records on one worker thread while the caller
// keeps draining the consumer: the stream is flow controlled, so a reader
// that stops to parse also stops the server from sending.
class BatchParser {
 public:
  static constexpr std::size_t kBatch = 512;
  static constexpr std::size_t kMaxQueued = 8;  // batches: bounds the memory held

  BatchParser(const std::function<void(SessionEntry&&)>& visit, bool keep_json)
      : visit_(visit), keep_json_(keep_json), worker_([this] { run(); }) {}
  // Leaving early (the listing threw): what is queued is not visited.
  ~BatchParser() { stop(true); }

  // Throws what a visit threw (on the worker), so the listing stops early.
  void add(kv::Entry&& entry) {
    batch_.push_back(std::move(entry));
    if (batch_.size() == kBatch) flush();
  }

  // Parses what is left, waits for the worker, and throws what a visit
  // threw; entries are visited in arrival order.
  void finish() {
    flush();
    stop();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void flush() {
    if (batch_.empty()) return;
    std::unique_lock lock(mu_);
    space_.wait(lock, [&] { return queue_.size() < kMaxQueued || error_; });
    if (error_) {
      batch_.clear();
      std::rethrow_exception(error_);
    }
    queue_.push_back(std::move(batch_));
    lock.unlock();
    ready_.notify_one();
    batch_ = {};
    batch_.reserve(kBatch);
  }

  // Lets the worker end once the queue is done (or at once, `cancel`), and
  // waits for it.
  void stop(bool cancel = false) {
    if (!worker_.joinable()) return;
    {
      std::lock_guard lock(mu_);
      done_ = true;
      if (cancel) queue_.clear();
    }
    ready_.notify_one();
    worker_.join();
  }

  void run() {
    while (true) {
      std::vector<kv::Entry> batch;
      {
        std::unique_lock lock(mu_);
        ready_.wait(lock, [&] { return done_ || !queue_.empty(); });
        if (queue_.empty()) return;
        batch = std::move(queue_.front());
        queue_.pop_front();
      }
      space_.notify_one();
      try {
        for (auto& entry : batch)
          if (!is_own_key(entry.key)) visit_(session_entry_of(std::move(entry), keep_json_));
      } catch (...) {
        // Kept for the caller's thread; nothing more is visited.
        std::lock_guard lock(mu_);
        error_ = std::current_exception();
        queue_.clear();
        space_.notify_all();
        return;
      }
    }
  }

  const std::function<void(SessionEntry&&)>& visit_;  // called by the worker only
  const bool keep_json_;
  std::vector<kv::Entry> batch_;
  std::deque<std::vector<kv::Entry>> queue_;
  std::mutex mu_;
  std::condition_variable ready_, space_;
  bool done_ = false;
  std::exception_ptr error_;  // what a visit threw (under mu_)
  std::thread worker_;
};

// Below this many records a thread costs more than it saves.
constexpr std::uint64_t kParallelParseFrom = 2000;

}  // namespace

void SessionStore::for_each(const std::function<void(SessionEntry&&)>& visit, bool keep_json) const {
  if (bucket_.size_hint() < kParallelParseFrom) {
    translating_kv(
        [&] { bucket_.for_each([&](kv::Entry&& e) {
          if (!is_own_key(e.key)) visit(session_entry_of(std::move(e), keep_json));
        }); });
    return;
  }
  BatchParser parser(visit, keep_json);
  translating_kv([&] { bucket_.for_each([&](kv::Entry&& e) { parser.add(std::move(e)); }); });
  parser.finish();
}

std::vector<SessionEntry> SessionStore::list() const {
  std::vector<SessionEntry> out;
  out.reserve(static_cast<std::size_t>(bucket_.size_hint()));
  for_each([&](SessionEntry&& e) { out.push_back(std::move(e)); });
  // A session renewed while the pass ran may have come twice.
  kv::drop_repeats(out, revision_at_open(), [](const SessionEntry& e) -> const std::string& { return e.slot; },
                   [](const SessionEntry& e) { return e.revision; });
  return out;
}

SessionWatch SessionStore::watch(const std::string& pattern) const {
  return SessionWatch(translating_kv([&] { return bucket_.watch(pattern); }));
}

}  // namespace swarm
