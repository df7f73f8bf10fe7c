// What `swarm serve` shows, kept up to date by watching: the sessions (a KV
// watch of the session bucket), the leases and their lines (a KV watch of
// the lease bucket) and the journal (an ordered consumer), each on a thread
// of its own that starts again after NATS comes back. Read by the HTTP
// threads as snapshots; never written back anywhere.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kv/connection.h"
#include "swarm/journal.h"
#include "swarm/lease/lease.h"
#include "swarm/session_store.h"
#include "swarm/status.h"

namespace cli {

// How much of the journal the page is given: the last hour, at most this many acts.
inline constexpr std::size_t kViewEvents = 2000;
// The page lists at most this many sessions (the most troubled first); counts cover all.
inline constexpr std::size_t kViewSessions = 1000;

class ServeView {
 public:
  ServeView(kv::Connection connection, swarm::SessionStore sessions, std::string lease_bucket,
            swarm::HostIdentity me);
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
  // The journal's last `n` acts seen (JSON Lines, swarm.event.v1).
  std::string log_lines(std::size_t n) const;
  // What the page draws (one JSON object), and its version.
  std::pair<std::uint64_t, std::string> page() const;
  // Waits until the version passes `seen`, or `timeout`; false when stopping.
  bool wait_for_change(std::uint64_t seen, std::chrono::milliseconds timeout) const;
  bool stopping() const { return stopping_; }

 private:
  void feed(const char* what, const std::function<void()>& body);
  void sessions_loop();
  void leases_loop();
  void journal_loop();
  void changed();
  void set_up(const char* what, bool up);
  // Live places in each lease's line, and whether every feed works (mu_ held).
  std::map<std::string, int> waiting(swarm::TimePoint now) const;
  bool nats_up() const;
  // The sessions as of now: ages moved on since the last update, states again.
  std::vector<swarm::SessionRow> sessions_now(swarm::TimePoint* now) const;
  swarm::TimePoint server_now() const;

  kv::Connection connection_;
  swarm::SessionStore sessions_;
  std::string lease_bucket_;
  swarm::HostIdentity me_;
  swarm::Journal journal_;
  std::chrono::milliseconds ttl_{0};

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::uint64_t version_ = 1;
  std::atomic<bool> stopping_{false};
  std::map<std::string, bool> up_;  // each feed's last word on NATS
  // The server's clock, run on the monotonic one (read at start).
  std::chrono::steady_clock::time_point clock_read_at_{};
  swarm::TimePoint server_at_read_{};

  // Sessions: the last update of the watch, and when it was aged.
  swarm::SessionTable table_;
  std::chrono::steady_clock::time_point table_at_{};
  // Leases and the places in their lines.
  std::map<std::string, swarm::LeaseEntry> leases_;
  std::map<std::string, kv::Entry> places_;
  std::map<std::string, swarm::TimePoint> beats_;  // place key -> its last beat
  // The journal: the last hour's acts (at most kViewEvents), and counts by kind since start.
  std::deque<swarm::Event> events_;
  std::map<std::string, std::uint64_t> event_counts_;

  std::mutex stop_mu_;
  std::vector<std::thread> threads_;
};

}  // namespace cli
