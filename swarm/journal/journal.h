// The journal: every ownership act (a join, a commit, a close, a lease
// granted or lost...) as one event in the workspace's stream (swarm-<name>-
// events; swarm-events for a workspace made before names), one subject per
// owned thing, written after the act succeeded. What is journaled and why
// renewals are not: adr/0020.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kv/connection.h"
#include "kv/stream.h"
#include "swarm/base/clock.h"
#include "swarm/base/error.h"
#include "swarm/base/host.h"
#include "swarm/base/json.h"
#include "swarm/base/workspace_names.h"

namespace swarm {

inline constexpr const char* kEventSchema = "swarm.event.v1";
inline constexpr std::chrono::milliseconds kEventsMaxAge = std::chrono::hours(24 * 30);
inline constexpr std::int64_t kEventsMaxBytes = std::int64_t(1) << 30;

// What an event is about.
enum class Thing { slot, lease, task };
std::string_view to_string(Thing thing);

// `<root><bucket>.<slot|lease|task>.<name>` (root: WorkspaceNames::event_root,
// "swarm.<workspace>.events."): the subject of one owned thing, in the bucket
// that holds its record.
std::string event_subject(std::string_view root, Thing thing, std::string_view bucket, std::string_view name);

// Who made an act: a host and a process.
struct Actor {
  std::string host;
  std::string host_id;
  std::int64_t pid = 0;
  // This process on `me`.
  static Actor here(const HostIdentity& me);
};

// One journaled act. Built by the functions below, never field by field
// elsewhere; `detail` holds what its kind carries (see the contract).
struct Event {
  std::string kind;  // join, commit, close, evict, fix, lease.grant, ...
  Thing thing = Thing::slot;
  std::string bucket;  // the bucket that holds the thing's record
  std::string name;    // the slot or lease
  Actor actor;
  std::string task_id;
  std::uint64_t token = 0;     // the session token, or the lease's fencing token
  std::uint64_t revision = 0;  // of the record write the act made (or, for a removal, removed)
  Json detail = Json::object();
  // Read back: the stream sequence and the server's time of the message.
  std::uint64_t seq = 0;
  std::optional<TimePoint> time;

  // `swarm.event.v1`: with `time` and `seq` once read back.
  Json to_json() const;
  // An event from a message of the journal whose subjects start with
  // `root`; nullopt when it is not one (not JSON, another schema, or a
  // subject it does not belong to).
  static std::optional<Event> from_message(const kv::StreamMessage& message, std::string_view root);
  // What `record` sends as its message id: the same act, sent again, is
  // stored once.
  std::string message_id() const;
};

// The one place events are built.
Event slot_event(std::string kind, std::string_view bucket, std::string_view slot, const Actor& actor,
                 std::string_view task_id, std::uint64_t token, std::uint64_t revision);
Event lease_event(std::string kind, std::string_view bucket, std::string_view lease, const Actor& actor,
                  std::uint64_t token, std::uint64_t revision);
// A task's act (task.add, task.claim, task.state, task.edit, review.*), on
// the subject of its key in the tasks bucket.
Event task_event(std::string kind, std::string_view bucket, std::string_view key, const Actor& actor,
                 std::string_view task_id, std::uint64_t revision);

// What `log` asks for.
// An event's detail as one line of text: key=value pairs, strings as they
// are (escaped; a commit id shortened), the rest as JSON. What `log` and
// the dashboard show.
std::string detail_text(const Json& detail);

struct JournalQuery {
  std::optional<Thing> thing;        // with `name`: that one thing's subject only
  std::string name;
  std::set<std::string> buckets;     // without a name: events of these buckets (empty: all)
  std::set<std::string> kinds;       // empty: every kind
  std::optional<TimePoint> since;
  std::size_t last = 0;              // the last N that match (0: all)
  std::string onto;                  // only events whose detail names this onto branch (lands, refusals)
  bool matches(const Event& event) const;
};

class JournalFollow {
 public:
  JournalFollow(kv::StreamReader reader, JournalQuery query, std::string root)
      : reader_(std::move(reader)), query_(std::move(query)), root_(std::move(root)) {}
  // The next matching event, or nullopt when none came within `timeout`.
  std::optional<Event> next(std::chrono::milliseconds timeout);
  void stop() { reader_.stop(); }

 private:
  kv::StreamReader reader_;
  JournalQuery query_;
  std::string root_;
};

class Journal {
 public:
  // Binds the journal of the workspace `names` names on `connection` (no round trip).
  Journal(const kv::Connection& connection, const WorkspaceNames& names);

  // Makes the stream with `replicas` (what `up` does), or checks it; an
  // existing one takes `max_age`/`max_bytes` when they are given (each on
  // its own) and its subjects back. Returns what still differs from what
  // was asked: other replicas (never changed), less room than asked.
  // A new one keeps `default_bytes` (the store's share: store_shares.h).
  static std::vector<std::string> ensure(const kv::Connection& connection, const WorkspaceNames& names, int replicas,
                                         std::optional<std::chrono::milliseconds> max_age,
                                         std::optional<std::int64_t> max_bytes,
                                         std::int64_t default_bytes = kEventsMaxBytes);

  // The stream's config and counts; nullopt when it is missing.
  std::optional<kv::StreamStatus> state() const;

  // Writes `event` after its act succeeded. Never throws and never fails
  // the act: a journal that cannot be written is a warning naming the act.
  // Returns whether it was stored (or had been, by an earlier send).
  bool record(const Event& event) const noexcept;

  // The same journal, whose writes and reads take at most `budget` each.
  Journal with_budget(std::chrono::milliseconds budget) const {
    Journal copy = *this;
    copy.stream_ = stream_.with_budget(budget);
    copy.writer_ = writer_.with_budget(budget);
    return copy;
  }

  // The last event of one thing (one direct get); nullopt when none.
  std::optional<Event> last(Thing thing, std::string_view bucket, std::string_view name) const;
  // The last event of each thing of `bucket` (a slot's last close is its result).
  std::vector<Event> last_each(Thing thing, std::string_view bucket) const;

  // The events the query asks for, oldest first. With `last`, only the end
  // of the stream is read, in windows growing backwards, so a long history
  // costs what the answer holds, not what the stream does.
  std::vector<Event> read(const JournalQuery& query) const;
  // The events from the query's start (`since`, else only new ones) as they happen.
  JournalFollow follow(const JournalQuery& query, std::optional<std::uint64_t> after_seq = {}) const;

 private:
  std::string filter_of(const JournalQuery& query) const;
  // The first sequence in [first, end] stored at or after `time` (end + 1: none).
  std::uint64_t seq_at(TimePoint time, std::uint64_t first, std::uint64_t end) const;
  // The last sequence in [head, to] matching `filter`, `head` being the first.
  std::uint64_t last_match(const std::string& filter, std::uint64_t head, std::uint64_t to) const;
  // The matching events of [from, to] (sequences), oldest first.
  std::vector<Event> read_range(const std::string& filter, const JournalQuery& query, std::uint64_t from,
                                std::uint64_t to) const;
  // The subject of one thing of this workspace's journal.
  std::string subject_of(Thing thing, std::string_view bucket, std::string_view name) const {
    return event_subject(root_, thing, bucket, name);
  }
  // A stream that is not there: exit 6, naming it and what makes it.
  Error missing() const;
  std::string stream_name_;
  std::string root_;
  kv::Stream stream_;
  kv::Stream writer_;  // stream_ whose publishes take at most a short budget: an act waits little on it
  std::chrono::milliseconds wait_;
};

}  // namespace swarm
