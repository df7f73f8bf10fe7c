// The session records of a workspace, typed, over one KV bucket (key = slot).
// Every write is CAS-gated; reads report corrupt records instead of failing.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kv/bucket.h"
#include "swarm/base/server_clock.h"
#include "swarm/base/token_watermark.h"
#include "swarm/lease/rules.h"
#include "swarm/slots/session.h"
#include "swarm/workspace/workspace.h"

namespace swarm {


// One key of the bucket as read: a session, or a corrupt value and why.
struct SessionEntry {
  std::string slot;                // the key
  std::uint64_t revision = 0;
  TimePoint stored_at{};           // the server's timestamp of this revision
  std::optional<Session> session;  // empty when corrupt
  std::string corrupt_reason;
  std::string raw;                 // the stored bytes of a corrupt record (empty otherwise)
  // When asked for (status --json shows them without writing them again):
  // the stored bytes of a record that are exactly to_json(*session), a
  // record swarm wrote. Empty otherwise.
  std::string json_as_stored;

  bool corrupt() const { return !session.has_value(); }
  // The session token: the revision that made the session, which its
  // renewals keep in the record; this revision while none has renewed it.
  std::uint64_t token() const {
    return token_of(session ? session->session_token : 0, revision);
  }
};

// Parses a stored value; a record whose `slot` is not its key is corrupt too.
// With `keep_json`, keeps its bytes when they are to_json's (json_as_stored).
SessionEntry session_entry_of(kv::Entry&& entry, bool keep_json = false);

struct SessionEvent {
  enum class Kind { put, erase, caught_up };
  Kind kind = Kind::put;
  // An erase the server wrote itself: the session ended by its TTL, at
  // `entry.stored_at` by the server's clock (2.11+, expiry announced).
  bool expired = false;
  SessionEntry entry;  // for erase only slot, revision and stored_at are set
};

class SessionWatch {
 public:
  explicit SessionWatch(kv::Watch watch) : watch_(std::move(watch)) {}
  // The next event, or nullopt when none arrives within `timeout`.
  std::optional<SessionEvent> next(std::chrono::milliseconds timeout);
  void stop() { watch_.stop(); }

 private:
  kv::Watch watch_;
};


class SessionStore {
 public:
  // Binds an existing bucket (no create on the hot path). A missing bucket is
  // not_bootstrapped; NATS errors are unavailable.
  static SessionStore open(const kv::Connection& connection, const std::string& bucket = kDefaultSessionBucket);

  // Creates the bucket or checks it (swarm up); a different TTL or replica
  // count is a conflict that names the difference.
  static SessionStore ensure(const kv::Connection& connection, const std::string& bucket,
                             std::chrono::milliseconds ttl, int replicas);

  const std::string& bucket_name() const { return bucket_.name(); }
  // The connection it is on (for the journal beside it).
  kv::Connection connection() const { return bucket_.connection(); }
  // The bucket's TTL as the server had it when the bucket was opened, or
  // as current_ttl() last read it (no round trip).
  std::chrono::milliseconds ttl() const;
  // The TTL the server has now (a round trip; `up --ttl` changes it in
  // place), which ttl() then says too, in every copy of this store.
  std::chrono::milliseconds current_ttl() const;
  // Hears the bucket's config change (a TTL changed in place).
  kv::Bucket::ConfigChanges config_changes() const;
  kv::BucketConfig bucket_config() const;

  std::optional<SessionEntry> get(const std::string& slot) const;
  // Only if the slot has no record. Conflict when it has one.
  std::uint64_t create(const Session& session) const;
  // The write that starts a session (its revision is the session token):
  // create(), or over the record at `over` (a session it replaces), under
  // the token watermark when one is set (never a token handed out before).
  std::uint64_t begin(const Session& session, std::optional<std::uint64_t> over) const;
  // Only if the record is still at `revision`. Conflict otherwise.
  std::uint64_t update(const Session& session, std::uint64_t revision) const;
  // Only if the record is still at `revision`. Conflict otherwise.
  void erase(const std::string& slot, std::uint64_t revision) const;
  // An entry as read, at its revision, whatever its key: a key that is no
  // slot name (written by another client) can only be removed this way.
  void erase(const SessionEntry& entry) const;
  // Every record, corrupt ones included, from one streamed snapshot; each is
  // parsed as it arrives, while the rest is still on the wire.
  std::vector<SessionEntry> list() const;
  // The same pass without the vector: each record is handed to `visit` as it
  // is parsed (on one worker thread, in arrival order, for a big bucket). A
  // record renewed during the pass may come twice, the newer revision last;
  // only revisions above revision_at_open() can (see kv::drop_repeats).
  // With `keep_json`, entries keep their stored bytes as json_as_stored.
  void for_each(const std::function<void(SessionEntry&&)>& visit, bool keep_json = false) const;
  std::uint64_t revision_at_open() const { return bucket_.revision_at_open(); }
  // About how many records there are (from opening the bucket).
  std::uint64_t size_hint() const { return bucket_.size_hint(); }
  SessionWatch watch(const std::string& pattern = ">") const;

  // The server's clock, read once now (one round trip, see
  // kv::Bucket::server_clock_offset) and then run on `local`. Ages are
  // measured on it, so hosts whose clocks disagree agree on ages. When the
  // server cannot tell (a cluster without a JetStream leader) it is `local`,
  // not `measured`, and a warning says so: callers then remove nothing for
  // being stale.
  ServerClock server_clock(const Clock& local = system_clock()) const { return read_server_clock(bucket_, local); }
  // Whether the server announces a session's end by its TTL (swarm up
  // turns it on, 2.11+): one request.
  bool announces_expiry() const;

  // For tests and doctor: the raw bucket underneath.
  const kv::Bucket& bucket() const { return bucket_; }
  // The same store, whose requests (retries included) take at most `budget`.
  SessionStore with_budget(std::chrono::milliseconds budget) const {
    SessionStore copy = *this;
    copy.bucket_ = bucket_.with_budget(budget);
    return copy;
  }
  // The same store, whose begin() guards its tokens with `watermark`.
  SessionStore with_watermark(std::shared_ptr<const TokenWatermark> watermark) const {
    SessionStore copy = *this;
    copy.watermark_ = std::move(watermark);
    return copy;
  }

 private:
  explicit SessionStore(kv::Bucket bucket)
      : bucket_(std::move(bucket)), ttl_ms_(std::make_shared<std::atomic<std::int64_t>>(-1)) {}
  kv::Bucket bucket_;
  std::shared_ptr<std::atomic<std::int64_t>> ttl_ms_;  // -1: the bucket's as opened
  std::shared_ptr<const TokenWatermark> watermark_;
};

}  // namespace swarm
