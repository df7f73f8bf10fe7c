// A handle on one JetStream key-value bucket: reads, CAS writes, a streamed
// snapshot and live watches. Every write is conditional on a revision, because
// everything above this layer is built on compare-and-swap.
#pragma once

#include <chrono>
#include <functional>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kv/connection.h"
#include "kv/error.h"
#include "kv/watch.h"

namespace kv {

namespace detail {
class Attempts;
}

enum class Storage { file, memory };

// What a bucket should look like. Zero values are the defaults of `ensure`.
struct BucketConfig {
  std::string name;
  std::chrono::milliseconds ttl{0};  // 0: entries never expire
  int history = 1;                   // values kept per key
  int replicas = 1;
  Storage storage = Storage::file;
};

// The ways `have` differs from `want`, one plain sentence each ("TTL is 5m0s,
// want 1m0s"); empty when they match.
std::vector<std::string> differences(const BucketConfig& want, const BucketConfig& have);

// A bucket name or key that JetStream accepts; `what` names it in the error.
void require_valid_bucket_name(std::string_view name);
void require_valid_key(std::string_view bucket, std::string_view key);
// A key, or a pattern whose tokens may be "*" (one token) or a final ">".
void require_valid_pattern(std::string_view bucket, std::string_view pattern);

class Bucket {
 public:
  // Binds an existing bucket with one round trip and never creates it.
  // Throws not_found when the bucket does not exist.
  static Bucket open(const Connection& connection, const std::string& name);
  // Binds it with no round trip at all, trusting that it exists: a missing
  // bucket shows at its first use (for a second bucket a verb may not need).
  static Bucket bind(const Connection& connection, const std::string& name);

  // Creates the bucket, or binds it when it exists with the same config. A
  // bucket that exists with another config is left alone and reported as a
  // conflict whose message lists every difference.
  static Bucket ensure(const Connection& connection, const BucketConfig& config);

  // Sets the TTL (MaxAge) of an existing bucket, leaving the rest of its
  // config as it is: for a bucket an older version made with another TTL.
  static void set_ttl(const Connection& connection, const std::string& name, std::chrono::milliseconds ttl);

  // Has the server write a marker when a key's message ends by its age (the
  // bucket's TTL, or a per-message TTL), the marker kept `marker_ttl` (at
  // least 1 s): then a watch sees the end when the server acts
  // (WatchEvent::expired), not when each reader's clock says so. nats-server
  // 2.11 or later; on an older one it changes nothing and returns false.
  // Doing it again changes nothing.
  static bool announce_expiry(const Connection& connection, const std::string& name,
                              std::chrono::milliseconds marker_ttl);

  const std::string& name() const { return name_; }
  // The connection it is on.
  Connection connection() const;

  // The bucket's config as the server had it when the bucket was opened.
  BucketConfig config() const;

  // Messages in the bucket's stream when it was opened: an upper bound on the
  // entries a snapshot then returned (deleted keys keep a marker), to reserve.
  std::uint64_t size_hint() const;

  // The server that leads the bucket's stream (empty when not clustered).
  std::string leader() const;

  // The key's current value, or nullopt when it is absent, deleted or expired.
  std::optional<Entry> get(std::string_view key) const;

  // Several keys' current values (nullopt as get() would), in one round
  // trip: the requests go together, and a key that got no usable answer in
  // time is read again alone, as get() would.
  std::vector<std::optional<Entry>> get_together(const std::vector<std::string>& keys) const;

  // The current value of every key matching `pattern` ("hold.>", "a.*"):
  // the keys the stream holds, named by one stream-info request, then read
  // together. Unlike a pass of for_each it never misses a key that another
  // writer rewrites while it reads (a filtered replay can end before that
  // key's newer revision comes: adr/0044), at a request per key, delete
  // markers included; so it serves small sets whose completeness matters
  // (holds, port blocks, permits, a lease's queue). Ordered by key.
  std::vector<Entry> current(std::string_view pattern) const;

  // The key's last message, a delete marker included (`deleted` says which):
  // a marker may carry data (see erase), e.g. what a released lease was.
  std::optional<Entry> last(std::string_view key, bool* deleted) const { return latest(key, deleted); }

  // Writes only if the key has no value (absent, deleted or expired). Returns
  // the new revision; throws conflict (with the current revision) otherwise.
  std::uint64_t create(std::string_view key, std::string_view value) const;

  // Writes only if the key's latest revision is still `revision`.
  std::uint64_t update(std::string_view key, std::string_view value, std::uint64_t revision) const;

  // Several such updates, of keys in buckets on one connection, sent
  // together and acknowledged together: one round trip for all (a session
  // and its task lease renewed at once). Each succeeds or fails on its own,
  // as update() would; one that got no answer in time is retried alone.
  struct Write {
    const Bucket* bucket = nullptr;
    std::string key;
    std::string value;
    std::uint64_t revision = 0;
    std::chrono::milliseconds message_ttl{0};  // as with_message_ttl (0: none)
  };
  struct WriteResult {
    std::uint64_t revision = 0;  // the new revision when it succeeded
    std::optional<Error> error;
  };
  static std::vector<WriteResult> update_together(const std::vector<Write>& writes);

  // Several writes to this bucket committed together or not at all: the
  // server checks every condition, then stores all (nats-server 2.12+
  // atomic batch publish, a stream made with it allowed: allow_atomic).
  // Each key once; a condition failed is a conflict and stores nothing.
  // Returns each write's new revision, or nullopt when this bucket cannot
  // commit atomically (an older server, or a stream without it): nothing
  // was sent, and the caller writes them as before. (A stream leader that
  // turns out older, in a rolling upgrade, stores each as it comes: the
  // unconditioned ones land even when the condition fails, and on success
  // only the first conditioned write's revision is known, the others' 0.
  // So only hints, which readers check, go beside a record.)
  struct Commit {
    std::string key;
    std::string value;
    std::optional<std::uint64_t> revision;  // the key must still be at it (none: no condition)
    bool erase = false;                     // a delete marker (value empty)
  };
  std::optional<std::vector<std::uint64_t>> commit_together(const std::vector<Commit>& writes) const;
  // Lets the bucket's stream take atomic batches (2.12+; false, nothing
  // changed, on an older server). Doing it again changes nothing.
  static bool allow_atomic(const Connection& connection, const std::string& name);
  // Whether it takes them now: one request, asked once per handle.
  bool commits_atomically() const;

  // Deletes only if the key's latest revision is still `revision`: leaves a
  // delete marker, so watchers see the delete. The marker carries `value`
  // (readers of the key see it as absent; last() returns it).
  void erase(std::string_view key, std::uint64_t revision, std::string_view value = {}) const;

  // Writes or deletes with no condition at all: only for hints that any
  // writer may rewrite and a reader checks against the records they point
  // to (the task queue's ready index), never for a record.
  std::uint64_t put_hint(std::string_view key, std::string_view value) const;
  void remove_hint(std::string_view key) const;
  // Many such writes sent together, their acknowledgements awaited once
  // (an empty value with `erase` deletes): a hint that did not land is
  // mended by the next repair, so none is retried one by one.
  struct HintWrite {
    std::string key;
    std::string value;
    bool erase = false;
  };
  void write_hints(const std::vector<HintWrite>& writes) const;

  // Every key that has a value now, in one streamed pass.
  std::vector<std::string> keys() const;

  // Every current entry in one streamed pass (never one get per key).
  std::vector<Entry> snapshot() const;

  // The same pass, handing each entry to `visit` as it arrives, so callers can
  // work while the rest is still on the wire. With `keys_only` values are empty.
  // A key written while the pass runs may come twice, the newer revision last
  // (see drop_repeats); the pass ends however busy the writers are.
  // `pattern` narrows it to some keys ("a.*", "_wait.x.>").
  void for_each(const std::function<void(Entry&&)>& visit, bool keys_only = false,
                const std::string& pattern = ">") const;

  // The stream's last revision when the bucket was opened: only entries of a
  // pass newer than this can repeat a key.
  std::uint64_t revision_at_open() const;
  // The stream's last revision now (one request).
  std::uint64_t last_revision() const;
  // Writes `key` (one no reader takes for a record) again and again, with
  // no condition, until the bucket's last revision is at least `revision`:
  // after a server lost writes it had acknowledged, the revisions it would
  // give again are used up. The writes go out together, their answers read
  // after. Throws unavailable when it cannot get there in a few rounds.
  void advance_to(std::uint64_t revision, std::string_view key) const;

  // A live watch of one key or a pattern ("a.*", ">"); it first replays the
  // current values, then reports a caught_up event, then every change. Entries
  // removed by the bucket's TTL vanish without an event (JetStream sends none).
  Watch watch(std::string_view pattern, WatchOptions options = {}) const;

  std::chrono::milliseconds request_timeout() const;

  // The same bucket, whose create() and update() give the value a TTL of
  // its own (rounded up to whole seconds, at least 1 s): the server removes
  // it then, with a marker when the bucket announces expiry. Sent only to
  // nats-server 2.11 or later; a stream that refuses message TTLs (one an
  // older swarm made) gets the write without it, and no TTL from then on.
  Bucket with_message_ttl(std::chrono::milliseconds ttl) const;

  // Whether the server writes a marker when a key ends by its age (see
  // announce_expiry), as its stream's config says now: one request (none,
  // and false, on a server before 2.11).
  bool announces_expiry() const;

  // The same bucket, whose requests (retries included) take at most `budget`
  // each, whatever the connection's timeouts: a lease holder renews within
  // what is left of its TTL.
  Bucket with_budget(std::chrono::milliseconds budget) const;

  // How far the clock of the server behind this bucket is ahead of `local`
  // (negative: behind), good to about half a round trip. nats-server 2.9
  // tells its time only in what it stamps, so this asks it to create a
  // consumer (ephemeral, matching nothing, gone within a second of idleness)
  // and reads the creation time it reports. One round trip.
  using LocalClock = std::function<std::chrono::system_clock::time_point()>;
  std::chrono::nanoseconds server_clock_offset(const LocalClock& local = std::chrono::system_clock::now,
                                               std::chrono::nanoseconds* uncertainty = nullptr) const;

  // The same reading, sent now and read later, so that its round trip
  // overlaps another's: it goes out with the next request's flush (status
  // sends it ahead of its batch of task-lease reads).
  struct ServerStamp {
    // Between `sent` and `answered` (this host's monotonic clock) the
    // server's clock said `stamped`.
    std::chrono::steady_clock::time_point sent;
    std::chrono::steady_clock::time_point answered;
    std::chrono::system_clock::time_point stamped;
  };
  class ClockProbe {
   public:
    ClockProbe(ClockProbe&&) noexcept;
    ClockProbe& operator=(ClockProbe&&) noexcept;
    ~ClockProbe();
    // Its answer, waiting at most `wait` for it; nullopt when none came, or
    // none that reads (server_clock_offset then says why).
    std::optional<ServerStamp> read(std::chrono::milliseconds wait);

    struct Impl;
    explicit ClockProbe(std::unique_ptr<Impl> impl);

   private:
    std::unique_ptr<Impl> impl_;
  };
  ClockProbe send_clock_probe() const;

  // Hears the server say the bucket's config changed (its JetStream
  // advisory for the stream's update: a TTL changed in place, say). Asked
  // without blocking; nothing is missed between asks.
  class ConfigChanges {
   public:
    ~ConfigChanges();
    ConfigChanges(ConfigChanges&&) noexcept;
    ConfigChanges& operator=(ConfigChanges&&) = delete;
    // Whether a change was heard since the last ask.
    bool changed();

    struct Impl;
    explicit ConfigChanges(std::unique_ptr<Impl> impl);

   private:
    std::unique_ptr<Impl> impl_;
  };
  // Subscribes (one round trip to make sure the server has it).
  ConfigChanges config_changes() const;

  // Implementation detail shared with watch.cc.
  struct State;

 private:
  Bucket(std::shared_ptr<State> state, std::string name)
      : state_(std::move(state)), name_(std::move(name)) {}
  // What a write expects of its key: no value, or still `revision`.
  enum class Expect { absent, revision };
  // A value, or a delete marker carrying it.
  enum class Op { put, erase };
  // Whether an earlier send of this very write got no answer, so that a
  // conflict may be the write itself having landed.
  enum class Sent { first, maybe_stored };
  std::uint64_t publish(std::string_view key, std::string_view value, Expect expect, std::uint64_t revision, Op op,
                        std::string_view what, Sent sent = Sent::first) const;
  // One write as publish sends it, for what follows a send that failed.
  struct PendingWrite {
    std::string_view key, value, what;
    bool expect_absent = false;
    std::uint64_t expect_revision = 0;
    bool is_delete = false;
    bool maybe_stored = false;  // a send got no answer: it may have landed
    std::uint64_t guard = 0;    // the stream's last sequence the CAS guard sent (0: none)
  };
  // After a failed send of `w` (`e` says how): the revision when the write
  // turns out to have landed, nullopt to send it again; throws when it may
  // not be sent again.
  std::optional<std::uint64_t> after_failure(const Error& e, PendingWrite& w, detail::Attempts& attempts) const;
  std::optional<Entry> latest(std::string_view key, bool* deleted) const;
  // The stream's last sequence, for a CAS write on a clustered stream to
  // carry (see publish); nullopt when the stream is not clustered.
  std::optional<std::uint64_t> cas_guard(std::chrono::milliseconds wait) const;
  // One attempt at watch(): creating its consumer waits `wait` for the
  // answer; its replay ends at `replay_end` (0: when nothing is pending),
  // once the keys of the `initial_messages` the stream then held have come.
  Watch watch_once(std::string_view pattern, const WatchOptions& options, std::chrono::milliseconds wait,
                   std::uint64_t replay_end, std::uint64_t initial_messages = 0) const;
  // After a lost answer, from the key's last write as read (`last`,
  // `deleted`): the revision at which it holds exactly `value` (or, for a
  // delete, no value), when it does.
  static std::optional<std::uint64_t> landed(const std::optional<Entry>& last, bool deleted, std::string_view value,
                                             bool is_delete);
  // After a lost answer to an unconditioned commit_together: each write's
  // revision when every key holds what it wrote.
  std::optional<std::vector<std::uint64_t>> all_landed(const std::vector<Commit>& writes) const;

  std::shared_ptr<State> state_;
  std::string name_;
  std::chrono::milliseconds budget_{0};  // 0: the connection's
  std::chrono::milliseconds message_ttl_{0};  // 0: none (with_message_ttl)
};

// The newest revision of each key that an entry of one pass repeats: only
// entries newer than `since` (revision_at_open) can repeat one, so without
// such this is empty.
template <typename E, typename KeyOf, typename RevisionOf>
std::unordered_map<std::string, std::uint64_t> newest_repeats(const std::vector<E>& entries, std::uint64_t since,
                                                              KeyOf key_of, RevisionOf revision_of) {
  std::unordered_map<std::string, std::uint64_t> newest;
  for (const auto& e : entries)
    if (revision_of(e) > since) newest[std::string(key_of(e))] = std::max(newest[std::string(key_of(e))], revision_of(e));
  return newest;
}

// Drops from `entries` every older revision of a key that `newest` (see
// newest_repeats) has a newer one of.
template <typename E, typename KeyOf, typename RevisionOf>
void drop_older(std::vector<E>& entries, const std::unordered_map<std::string, std::uint64_t>& newest, KeyOf key_of,
                RevisionOf revision_of) {
  if (newest.empty()) return;
  std::erase_if(entries, [&](const E& e) {
    auto it = newest.find(std::string(key_of(e)));
    return it != newest.end() && revision_of(e) < it->second;
  });
}

// Drops from the entries of one pass (in arrival order) every older revision
// of a key that a later entry repeats.
template <typename E, typename KeyOf, typename RevisionOf>
void drop_repeats(std::vector<E>& entries, std::uint64_t since, KeyOf key_of, RevisionOf revision_of) {
  drop_older(entries, newest_repeats(entries, since, key_of, revision_of), key_of, revision_of);
}

}  // namespace kv
