// What `swarm serve` shows, kept up to date by watching: the sessions (a KV
// watch of the session bucket), the leases and their lines (a KV watch of
// the lease bucket), the journal (an ordered consumer) and the branches (the
// hub, read again when the journal says a branch may have moved). A
// supervisor owns the NATS connection: when it goes (the server stopped,
// restarted, moved to another port the workspace now records), the view says
// NATS is down at once and connects anew, rebuilding every feed from what
// the watches replay. Read by the HTTP loop as snapshots; never written back.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kv/connection.h"
#include "kv/watch.h"
#include "swarm/bus/bus.h"
#include "swarm/bus/cursors.h"
#include "swarm/journal/journal.h"
#include "swarm/landing/landing.h"
#include "swarm/lease/lease.h"
#include "swarm/lease/semaphore.h"
#include "swarm/slots/session_store.h"
#include "swarm/slots/status.h"
#include "swarm/tasks/task_store.h"

namespace cli {

// The string member `name` of an event's detail ("" when it is none).
std::string text_field(const swarm::Json& detail, const char* name);

// How much of the journal the view keeps: the last day, at most this many acts.
inline constexpr std::size_t kViewEvents = 20000;
// The page lists at most this many sessions (the most troubled first); counts cover all.
inline constexpr std::size_t kViewSessions = 1000;
// The page's list of recent acts, and its timeline's spans, at most.
inline constexpr std::size_t kViewActs = 200;
inline constexpr std::size_t kViewSpans = 3000;
// The page's tasks panel lists at most this many (those not done first); counts cover all.
inline constexpr std::size_t kViewTasks = 200;
// A bucket or stream not made yet (a workspace older than tasks or messages)
// is looked for again this often.
inline constexpr std::chrono::seconds kLookAgainForMissing{5};

// One connection's worth of what serve reads, made anew when NATS comes back.
struct ServeLink {
  kv::Connection connection;
  swarm::Landing landing;  // read-only: its sessions, leases, journal and hub
  swarm::WorkspaceNames names;  // where the rest of the workspace is (its bus, cursors)
};
using ServeConnect = std::function<ServeLink()>;

// When a span of the timeline no event ended expires (`at`, unix ms):
// `ended` once its hold is past it unrenewed, or the view has not seen the
// hold at all; else it is held until then unless renewed.
struct SpanExpiry {
  bool ended = false;
  std::int64_t at = 0;
};

// An inbox as serve shows it: its cursor and how many messages after it
// are still kept (its own and those to all).
struct InboxRow {
  std::string name;
  std::uint64_t cursor = 0;
  std::uint64_t unread = 0;
};

class ServeView {
 public:
  ServeView(ServeConnect connect, swarm::HostIdentity me);
  ~ServeView();
  ServeView(const ServeView&) = delete;
  ServeView& operator=(const ServeView&) = delete;

  void start();
  void stop();

  // Prometheus text format, 0.0.4.
  std::string metrics() const;
  // The verbs' documents.
  std::string status_document() const;
  std::string leases_document() const;
  std::string branches_document() const;
  // swarm.tasks.v1 of the queue, by priority then age (as `task list --json`).
  std::string tasks_document() const;
  // swarm.inboxes.v1: each inbox, its cursor and its unread count (never a body).
  std::string inboxes_document() const;
  // swarm.holds.v1: the holds followed that are held now (as `swarm holds --json`).
  std::string holds_document() const;
  // The journal's last `n` acts seen (JSON Lines, swarm.event.v1).
  std::string log_lines(std::size_t n) const;
  // What the page draws (one JSON object), and its version.
  std::pair<std::uint64_t, std::string> page() const;
  std::uint64_t version() const;
  // Waits until the version passes `seen`, or `timeout`; false when stopping.
  bool wait_for_change(std::uint64_t seen, std::chrono::milliseconds timeout) const;
  bool stopping() const { return stopping_; }

 private:
  void supervise();
  // Runs the feeds on `link` until it breaks or stop(); they are joined when it returns.
  void serve_link(ServeLink& link);
  void feed(const char* what, const std::function<void()>& body);
  void sessions_feed(ServeLink& link);
  void leases_feed(ServeLink& link);
  std::optional<swarm::Event> apply_lease_event(kv::WatchEvent&& event);
  void journal_feed(ServeLink& link);
  void branches_feed(ServeLink& link);
  void tasks_feed(ServeLink& link);
  void inboxes_feed(ServeLink& link);
  void changed();
  void set_up(const char* what, bool up);
  bool running() const { return !stopping_ && !broken_; }
  // Live places in each lease's line, and whether every feed works (mu_ held).
  std::map<std::string, int> waiting(swarm::TimePoint now) const;
  // The leases followed, in name order.
  std::vector<swarm::LeaseEntry> lease_entries() const;
  // The holds among them that are not expired at `now` (mu_ held).
  std::vector<swarm::LeaseEntry> live_holds(swarm::TimePoint now) const;
  bool nats_up() const;
  // The sessions as of now: ages moved on since the last update, states again.
  // /metrics by part (serve_metrics.cc, mu_ held): sessions and agents;
  // leases, lines and semaphores; tasks, inboxes, holds, events and lands.
  void session_metrics(std::string& out, const std::vector<swarm::SessionRow>& rows) const;
  void lease_metrics(std::string& out, swarm::TimePoint now) const;
  void queue_metrics(std::string& out, swarm::TimePoint now) const;
  std::vector<swarm::SessionRow> sessions_now(swarm::TimePoint* now) const;
  swarm::TimePoint server_now() const;
  void set_clock(const swarm::ServerClock& clock);
  // When a span of the timeline no event ended expires (see SpanExpiry).
  SpanExpiry span_expiry(const std::string& thing, const std::string& name, std::uint64_t token, std::int64_t from,
                         swarm::TimePoint now) const;
  // The page without the server's time, built from what the feeds hold (mu_ held).
  std::string page_body() const;
  swarm::Json tasks_panel() const;
  // Each inbox: name, cursor, unread (mu_ held): /api/inboxes and the page.
  swarm::Json inbox_rows() const;

  ServeConnect connect_;
  swarm::HostIdentity me_;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::uint64_t version_ = 1;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> broken_{false};  // a feed broke: the supervisor connects anew
  bool connected_ = false;
  std::optional<swarm::TimePoint> down_since_;
  std::map<std::string, bool> up_;  // each feed's last word on NATS
  std::string bucket_, lease_bucket_;
  std::chrono::milliseconds ttl_{0};
  std::chrono::milliseconds margin_{0};  // sessions' states judged with it (observed_state)
  // The server's clock, run on the monotonic one (read at each connect).
  std::chrono::steady_clock::time_point clock_read_at_{};
  swarm::TimePoint server_at_read_{};

  // Sessions: the last update of the watch, and when it was aged.
  swarm::SessionTable table_;
  // Each slot's session token and its last renewal this view saw (kept
  // after the record expired: when its span on the timeline ends).
  std::map<std::string, std::pair<std::uint64_t, swarm::TimePoint>> last_renewals_;
  std::chrono::steady_clock::time_point table_at_{};
  // Leases and the places in their lines.
  std::map<std::string, swarm::LeaseEntry> leases_;
  std::map<std::string, kv::Entry> places_;
  std::map<std::string, int> limits_;  // each semaphore's stored limit ("_limit.<name>")
  std::map<std::string, swarm::TimePoint> beats_;  // place key -> its last beat
  // The journal: the last day's acts (at most kViewEvents), and counts by kind since start.
  std::deque<swarm::Event> events_;
  std::optional<std::uint64_t> journal_after_;
  std::map<std::string, std::uint64_t> event_counts_;
  std::map<std::string, std::uint64_t> land_checks_;  // by the check's outcome: passed, flaky, failed
  // The branches, as `branches --json` has them; the journal says when to read them again.
  std::string branches_json_;
  std::optional<swarm::Branches> branches_;
  bool branches_stale_ = true;

  // The task queue by key, as its watch has it (none while the bucket is missing).
  std::map<std::string, swarm::TaskEntry> tasks_;
  // Each inbox's cursor and unread count (serve_inboxes.cc).
  std::vector<InboxRow> inboxes_;

  // The last page built, and the version it is of.
  mutable std::string page_cache_;
  mutable std::uint64_t page_version_ = 0;

  std::thread supervisor_;
  std::vector<std::thread> feeds_;
};

}  // namespace cli
