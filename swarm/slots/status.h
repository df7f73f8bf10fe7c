// A session as `status` shows it: the record, how alive it is, whose it is.
#pragma once

#include "swarm/tasks/task_store.h"

#include <chrono>
#include <map>
#include <memory>
#include <string_view>
#include <utility>
#include <optional>
#include <string>
#include <vector>

#include "swarm/base/host.h"
#include "swarm/lease/lease.h"
#include "swarm/slots/liveness.h"
#include "swarm/slots/session_store.h"

namespace swarm {

// Text kept for as long as a table lives, in blocks that never move: views
// into it stay valid, and 100,000 small strings cost no allocation each.
class TextArena {
 public:
  TextArena() = default;
  TextArena(TextArena&& other) noexcept
      : blocks_(std::move(other.blocks_)), used_(std::exchange(other.used_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  TextArena& operator=(TextArena&& other) noexcept {
    blocks_ = std::move(other.blocks_);
    used_ = std::exchange(other.used_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    return *this;
  }
  std::string_view keep(std::string_view text);

 private:
  static constexpr std::size_t kBlock = 256 * 1024;
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::size_t used_ = 0, capacity_ = 0;
};

// A session as `status` shows it. Status holds every one of them (to sort
// them), so a row is small and its text lives in its table's arena.
struct SessionRow {
  std::string_view slot;
  std::string_view task_id;             // "" when corrupt
  std::string_view host;                // "" when corrupt
  std::string_view record_json;         // the record as swarm writes it, kept for --json only; "" when corrupt
  std::string_view corrupt_reason;      // "" unless corrupt
  std::string_view task_lease_problem;  // how its task lease disagrees with it ("" when it agrees)
  std::uint64_t revision = 0;
  std::uint64_t session_token = 0;      // 0 when corrupt
  bool token_in_record = false;         // the record carries its session_token itself
  TimePoint stored_at{};                // the server's timestamp of this revision
  std::chrono::milliseconds age{0};     // since then, on the server's clock (set by finish)
  State state = State::corrupt;
  bool corrupt = false;
  bool local = false;                   // the session belongs to this host
  bool newer_fields = false;            // the record has fields this version does not know
  // A session `swarm run` keeps: its run and agent, for `dead` (this host's only).
  std::int64_t leaf_pid = 0, agent_pid = 0;
  std::uint64_t leaf_start = 0, agent_start = 0;
  std::string_view task_state;          // its task's state in the queue, "" when not queued (or unread)
  std::string_view status;              // what its agent says it does (renew --status), "" unsaid
  std::string_view note;
};

// The rows of one listing (or of a watch's view).
class SessionTable {
 public:
  SessionTable(HostIdentity me, bool keep_json) : me_(std::move(me)), keep_json_(keep_json) {}
  SessionTable(SessionTable&&) = default;
  SessionTable& operator=(SessionTable&&) = default;

  void reserve(std::size_t rows) { rows_.reserve(rows); }
  // One record as listed: only what status shows is kept.
  void add(const SessionEntry& entry);
  // Drops the older revisions of a key that a renewal during the listing
  // repeated (revisions after `since` only), sorts by slot, and ages the
  // rows (their states judged with `margin`: observed_state).
  void finish(std::uint64_t since, std::chrono::milliseconds ttl, TimePoint now, std::chrono::milliseconds margin);
  // Notes on each row how its task lease disagrees with its session, if it
  // does. `task_leases` are the task leases read (any order).
  void note_task_leases(const std::vector<LeaseEntry>& task_leases, TimePoint now);
  // Each row's task state from the queue's records (`tasks`: those of the
  // rows' task ids, or the whole queue); a free-form id has none.
  void note_task_states(const std::vector<TaskEntry>& tasks);
  const std::vector<SessionRow>& rows() const { return rows_; }

 private:
  void sort_by_slot();

  HostIdentity me_;
  bool keep_json_;
  std::vector<SessionRow> rows_;
  TextArena text_;
};

// The sessions as a live watch reports them. Expiry by TTL sends no event,
// so entries older than the TTL are dropped here, by the server's timestamps.
class LiveSessions {
 public:
  struct Change {
    enum class Kind { put, erase, expired };
    Kind kind;
    std::string slot;
    // For an erase or expiry: the session that ended, when
    // this view had it; when it ended (the server's time: its marker's, or
    // its TTL after its last renewal); whether the server said so (its
    // marker, at `revision`) or this view's clock judged it.
    std::optional<SessionEntry> ended;
    TimePoint at{};
    bool by_server = false;
    std::uint64_t revision = 0;
  };

  // Applies one watch event; the change it made, if any (caught_up makes none).
  std::optional<Change> apply(const SessionEvent& event);
  // Drops entries whose age reached `ttl` (and `grace` more): the server
  // has evicted them, at their TTL.
  std::vector<Change> expire(TimePoint now, std::chrono::milliseconds ttl,
                             std::chrono::milliseconds grace = std::chrono::milliseconds(0));
  std::vector<SessionEntry> entries() const;
  std::size_t size() const { return entries_.size(); }

 private:
  std::map<std::string, SessionEntry> entries_;
};

std::string_view to_string(LiveSessions::Change::Kind kind);

}  // namespace swarm
