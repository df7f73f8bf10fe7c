// Leases: named, time-bounded, exclusive holds on anything (a task, a merge,
// a leader role) in the swarm-leases bucket, each known by its fencing token,
// the revision of the write that granted it. This file is the one-shot part:
// reading leases, taking a free one, and what a holder does after (renew,
// release), all CAS on revisions. Waiting in line for a held lease is Mutex
// (mutex.h); keeping one alive while work runs is LeaseKeeper (lease_keeper.h).
// Why expiry is safe without per-key TTLs or shared wall clocks: adr/0011.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kv/bucket.h"
#include "swarm/base/boot_clock.h"
#include "swarm/base/host.h"
#include "swarm/base/server_clock.h"
#include "swarm/base/token_watermark.h"
#include "swarm/journal/journal.h"
#include "swarm/lease/lease_keys.h"
#include "swarm/lease/lease_record.h"
#include "swarm/lease/rules.h"

namespace swarm {

inline constexpr const char* kDefaultLeaseBucket = kLegacyLeaseBucket;

// Who asks for a lease.
struct LeaseHolder {
  std::string holder;  // shown to others: --holder, default "<host>:<pid>"
  std::string host;
  std::string host_id;
  std::int64_t pid = 0;          // the process whose life the lease is tied to
  std::uint64_t pid_start = 0;   // its start time, so that a reused pid is told apart
  std::string slot;              // a task lease's slot and task id
  std::string task;
  // A hold's patterns, kind, reason and session (see LeaseRecord).
  std::vector<std::string> patterns;
  std::string kind;
  std::string reason;
  std::uint64_t session = 0;
  // An election's candidate: its priority and minimum term (see LeaseRecord).
  std::uint64_t priority = 0;
  std::chrono::milliseconds min_term{0};

  // Process `pid` of this host (its start time read from /proc).
  static LeaseHolder process(const HostIdentity& me, std::int64_t pid, const std::string& holder = {});
};

// A new record of `who` holding (or waiting for, or asking of) `name` for
// `ttl`, acquired and renewed now.
LeaseRecord record_for(const std::string& name, const LeaseHolder& who, std::chrono::milliseconds ttl);

// Whether `record` names a process of host `me` (this host: the same name and
// host id, as doctor's own check has it; a container sharing the machine id
// but not the pids has another name) that is no longer running (its pid
// gone, or now another process's): such a holder or waiter is dead now,
// whatever its TTL still says. False for other hosts.
bool gone_from(const LeaseRecord& record, const std::string& host, const std::string& host_id);

// A key of the bucket as read.
struct LeaseEntry {
  std::string name;
  std::uint64_t revision = 0;
  TimePoint stored_at{};               // the server's timestamp of this revision
  std::optional<LeaseRecord> record;   // empty when corrupt
  std::string corrupt_reason;
  std::string raw;                     // the stored bytes of a corrupt record

  bool corrupt() const { return !record.has_value(); }
  // The fencing token: the revision that granted the lease (see LeaseRecord::token).
  std::uint64_t token() const { return token_of(record ? record->token : 0, revision); }
};

enum class LeaseState { held, expired, corrupt };
std::string_view to_string(LeaseState state);

// How an entry stands at `server_now` (on the server's clock).
struct LeaseStanding {
  LeaseState state = LeaseState::corrupt;
  std::chrono::milliseconds age{0};   // since the server stored the current revision
  std::chrono::milliseconds left{0};  // until it expires; 0 once expired
};
LeaseStanding standing_of(const LeaseEntry& entry, TimePoint server_now);

// The lease `join` takes for a task: "task.<id>" when that is a lease name,
// else "task.h<16 hex digits of a hash of the id>" (the record keeps the id).
std::string task_lease_name(const std::string& task_id);

// Names swarm gives the leases it takes itself: task.<id> (join), ports.<A-B>
// (join --ports), land.<onto> (land), hold.<slot>.<n> (hold), and a
// semaphore's <name>.permit.<k> and <name>.gate. Taken by hand they would
// block what swarm does (a range of ports no join gets, a task no slot may
// claim), so lease acquire, lock and elect refuse them (bad_input, naming
// what takes the lease).
void require_user_lease_name(std::string_view name);

// Keys of the bucket that are no lease: lease names start every token with
// a letter or digit, these with '_'. A waiter's place in a lease's queue is
// "_wait.<name>.<id>"; a request to a leader to step down, "_resign.<name>".
std::string queue_prefix(const std::string& name);
// A waiter's heartbeats go to "_beat.<name>.<id>", beside its place (adr/0012).
std::string beat_prefix(const std::string& name);
std::string resign_key(const std::string& name);
bool is_lease_key(std::string_view key);

// A lease this process was granted: its token, and its deadline, until which
// the holder may act: the TTL after it sent the write that granted or last
// renewed it, on CLOCK_BOOTTIME. Past it, another may be granted the lease.
struct Lease {
  std::string name;
  std::uint64_t token = 0;
  std::uint64_t revision = 0;  // of the last write (grant or renewal)
  LeaseRecord record;
  BootTime deadline{};
};

// A grant (`record`, last written at `revision`) carried on by `who` for
// `ttl`, its token kept: what renew() renews when a rejoin keeps a slot's
// task lease or port block for its new session.
Lease kept_grant(const std::string& name, const LeaseRecord& record, std::uint64_t revision, const LeaseHolder& who,
                 std::chrono::milliseconds ttl);

// What a key held last, a released lease's delete marker included.
struct LastWrite {
  std::uint64_t revision = 0;  // 0: the key never had a value
  bool released = false;       // a delete marker
  TimePoint stored_at{};
  std::optional<LeaseRecord> record;
  std::string corrupt_reason;  // of a record that is there and cannot be read
  // The server's marker of its expiry (2.11+): `record` is then the one it
  // ended, at `expired_revision`, as a watcher saw it (none when unseen).
  bool expired_by_server = false;
  std::uint64_t expired_revision = 0;
};

// A live place in a lease's line: the lease, and the place's order there.
struct LiveWaiter {
  std::string lease;
  std::uint64_t order = 0;
  std::string id;      // its place: "_wait.<lease>.<id>"
  std::string holder;  // who waits there
};

class LeaseStore {
 public:
  // Binds the existing bucket names.leases (never creates it): a missing
  // one is not_bootstrapped. Its grants are journaled in names' journal.
  static LeaseStore open(const kv::Connection& connection, const WorkspaceNames& names);
  // The same with no round trip (kv::Bucket::bind): for verbs that may not
  // touch a lease at all.
  static LeaseStore bind(const kv::Connection& connection, const WorkspaceNames& names) {
    return LeaseStore(kv::Bucket::bind(connection, names.leases), names);
  }

  // The bucket's keys for the queue, the mutex and the election (its waiters'
  // places, a lease's watch, resign requests), kv errors translated.
  const LeaseKeys& keys() const { return keys_; }
  // The same store, whose requests (retries included) take at most `budget`.
  LeaseStore with_budget(std::chrono::milliseconds budget) const {
    LeaseStore copy = *this;
    copy.keys_ = keys_.with_budget(budget);
    return copy;
  }
  // The server's clock, read on first use and kept (by this store and its copies).
  const ServerClock& server_clock() const;

  std::optional<LeaseEntry> get(const std::string& name) const;
  // Those of `names` that are held or were (absent ones left out), read in
  // one round trip: a status of a few sessions reads their task leases so.
  std::vector<LeaseEntry> get_together(const std::vector<std::string>& names) const;
  // Every lease record (queue and resign keys left out), corrupt ones
  // included; or those matching `pattern` ("task.>").
  std::vector<LeaseEntry> list(const std::string& pattern = ">") const;
  // Those matching `pattern`, none missed though renewed as they are read
  // (kv::Bucket::current: a request per key): for a small set that decides
  // a grant, as holds, port blocks and permits do.
  std::vector<LeaseEntry> current(const std::string& pattern) const;
  // list and current, with the server's clock read beside them when it was
  // not yet (its probe sent first, so that the two round trips overlap): for
  // a reader that judges what it lists by age.
  std::vector<LeaseEntry> list_with_clock(const std::string& pattern) const;
  std::vector<LeaseEntry> current_with_clock(const std::string& pattern) const;
  // Live waiters in each lease's queue, or in `name`'s only (a waiter whose
  // place expired is gone).
  // (A place of a process of this host (`host`, `host_id`) that is gone is
  // not counted.)
  std::map<std::string, int> waiting(const std::string& name = {}, const std::string& host = {},
                                     const std::string& host_id = {}) const;
  // The live places in each lease's line, or in `name`'s (see waiting).
  std::vector<LiveWaiter> live_waiters(const std::string& name, const std::string& host = {},
                                       const std::string& host_id = {}) const;
  // A waiter's place in `name`'s line (1: next), from its place's `order`
  // (Mutex::place_order): one more than the live places before it.
  int place_in_line(const std::string& name, std::uint64_t order) const;
  // The last write to `name`, a release included.
  LastWrite last(const std::string& name) const;

  // Takes `name` now if it is free (never held, released, or expired) and no
  // waiter is in its queue; else conflict naming the holder (or the queue).
  Lease acquire(const std::string& name, const LeaseHolder& who, std::chrono::milliseconds ttl) const;
  // The granting write over what the key held last (by CAS on its revision).
  // For the head of a queue, which has judged it free itself. Conflict when
  // the key moved meanwhile.
  Lease grant(const std::string& name, const LeaseHolder& who, std::chrono::milliseconds ttl,
              const LastWrite& over) const;
  // Renews a lease this process holds (CAS on its last revision); conflict
  // when it is no longer that grant's (taken, released).
  Lease renew(const Lease& lease) const;
  // Releases it (CAS delete; the marker keeps the record, for transitions).
  // Its marker names a waiting candidate's place when the holder hands the
  // lease over (`handover_to`, `handover_holder`): only that candidate may
  // take it while its place is live (see Mutex).
  void release(const Lease& lease, const std::string& handover_to = {},
               const std::string& handover_holder = {}) const;

  // For a holder that knows only the token (swarm lease renew/release):
  // conflict when the lease's token is another, or it expired; not_found when
  // there is no lease by that name.
  Lease renew(const std::string& name, std::uint64_t token) const;
  void release(const std::string& name, std::uint64_t token) const;

  // The write that renews `held` as it was read (its token kept, renewed
  // now), for a holder that sends it with others (kv::Bucket::update_together).
  kv::Bucket::Write renewal_of(const LeaseEntry& held,
                               std::optional<std::chrono::milliseconds> ttl = std::nullopt) const;

  // The same store, whose grants guard their tokens with `watermark`
  // (never a token handed out before, whatever the server lost).
  LeaseStore with_watermark(std::shared_ptr<const TokenWatermark> watermark) const {
    LeaseStore copy = *this;
    copy.watermark_ = std::move(watermark);
    return copy;
  }

  const std::string& bucket_name() const { return keys_.bucket_.name(); }
  // The journal beside the bucket, where grants, releases and losses go.
  const Journal& journal() const { return journal_; }

 private:
  LeaseStore(kv::Bucket bucket, const WorkspaceNames& names)
      : keys_(std::move(bucket)), journal_(keys_.bucket_.connection(), names) {}
  const kv::Bucket& bucket() const { return keys_.bucket_; }
  Lease write_grant(const std::string& name, LeaseRecord record, const LastWrite& over) const;
  std::vector<LeaseEntry> with_clock(const std::function<std::vector<LeaseEntry>()>& listing) const;
  LeaseKeys keys_;
  Journal journal_;
  // The server's clock, read once and shared by this store's copies (a
  // keeper's renewals each use a copy with their own budget); a reading
  // that could not measure it is not kept, so the next use reads again.
  // (Readings are kept a while: a caller may still hold one when the next
  // is taken. One that could not measure is read again at most once a second.)
  struct SharedClock {
    std::mutex mu;
    std::vector<std::unique_ptr<const ServerClock>> readings;
    std::chrono::steady_clock::time_point last_read{};
    // The reading to use now; null when it is time to read again.
    const ServerClock* usable() const;
    void keep(std::unique_ptr<const ServerClock> reading);
  };
  std::shared_ptr<SharedClock> server_clock_ = std::make_shared<SharedClock>();
  std::shared_ptr<const TokenWatermark> watermark_;
};

// What the leases a slot takes beside its session share (its task's, its
// port block, its holds): the store, who takes them (this host), their TTL
// (the session's); and the same whose requests take at most `budget` each
// (a keeper's renewal must end before its session's deadline).
template <typename Self>
class SlotLeases {
 public:
  SlotLeases(LeaseStore store, HostIdentity me, std::chrono::milliseconds ttl)
      : store_(std::move(store)), me_(std::move(me)), ttl_(ttl) {}
  Self with_budget(std::chrono::milliseconds budget) const {
    Self copy = static_cast<const Self&>(*this);
    copy.store_ = store_.with_budget(budget);
    return copy;
  }
  const LeaseStore& store() const { return store_; }

 protected:
  LeaseStore store_;
  HostIdentity me_;
  std::chrono::milliseconds ttl_;
};

// The lease a waiter's place ("_wait.<name>.<id>") waits for; nullopt for another key.
std::optional<std::string> place_of(std::string_view key);
// The place a beat ("_beat.<name>.<id>") keeps alive; nullopt for another key.
std::optional<std::string> beat_of(std::string_view key);
// Whether a waiter's place is live at `now`: within its TTL from its own
// write or from its last beat (`last_beat`), and not of a process of this
// host (`host`, `host_id`) that is gone.
bool place_is_live(const kv::Entry& place, const std::optional<TimePoint>& last_beat, TimePoint now,
                   const std::string& host, const std::string& host_id);

// Parses a stored value; a record whose name is not its key is corrupt too.
LeaseEntry lease_entry_of(kv::Entry&& entry);

}  // namespace swarm
