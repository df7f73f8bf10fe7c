#include "cli/serve_view.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "cli/documents.h"
#include "kv/bucket.h"
#include "swarm/error.h"
#include "swarm/liveness.h"
#include "swarm/log.h"
#include "swarm/status_watch.h"

namespace cli {

namespace {

constexpr std::chrono::milliseconds kPoll{500};
constexpr std::chrono::seconds kRetry{1};
constexpr std::chrono::hours kHistory{1};

std::int64_t unix_ms(swarm::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// A Prometheus label value: backslash, double quote and line feed escaped.
std::string label(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

int severity(swarm::State s) {
  switch (s) {
    case swarm::State::corrupt: return 0;
    case swarm::State::stale: return 1;
    case swarm::State::late: return 2;
    case swarm::State::fresh: return 3;
  }
  return 3;
}

}  // namespace

ServeView::ServeView(kv::Connection connection, swarm::SessionStore sessions, std::string lease_bucket,
                     swarm::HostIdentity me)
    : connection_(std::move(connection)),
      sessions_(std::move(sessions)),
      lease_bucket_(std::move(lease_bucket)),
      me_(std::move(me)),
      journal_(connection_),
      table_(me_, true) {
  ttl_ = sessions_.ttl();
  auto clock = sessions_.server_clock();
  clock_read_at_ = std::chrono::steady_clock::now();
  server_at_read_ = clock.now();
}

ServeView::~ServeView() { stop(); }

void ServeView::start() {
  threads_.emplace_back([this] { sessions_loop(); });
  threads_.emplace_back([this] { leases_loop(); });
  threads_.emplace_back([this] { journal_loop(); });
}

void ServeView::stop() {
  std::lock_guard once(stop_mu_);
  stopping_ = true;
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

swarm::TimePoint ServeView::server_now() const {
  return server_at_read_ + std::chrono::duration_cast<swarm::TimePoint::duration>(std::chrono::steady_clock::now() -
                                                                                   clock_read_at_);
}

void ServeView::changed() {
  {
    std::lock_guard lock(mu_);
    ++version_;
  }
  cv_.notify_all();
}

void ServeView::set_up(const char* what, bool up) {
  std::lock_guard lock(mu_);
  up_[what] = up;
}

bool ServeView::wait_for_change(std::uint64_t seen, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return stopping_ || version_ > seen; });
  return !stopping_;
}

// Runs `body` (one feed: it watches until stop()) again and again: a broken
// watch (NATS gone) is made anew a second later, and the view says NATS is
// down meanwhile.
void ServeView::feed(const char* what, const std::function<void()>& body) {
  while (!stopping_) {
    try {
      body();
    } catch (const std::exception& e) {
      spdlog::warn("the {} feed broke: {}; watching again in {}s", what, e.what(), kRetry.count());
      set_up(what, false);
      changed();
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, kRetry, [&] { return stopping_.load(); });
    }
  }
}

void ServeView::sessions_loop() {
  feed("sessions", [this] {
    swarm::StatusWatch watch(sessions_, me_, "", true);
    set_up("sessions", true);
    while (!stopping_) {
      auto update = watch.next(kPoll);
      if (!update) continue;
      {
        std::lock_guard lock(mu_);
        table_ = std::move(update->view);
        table_at_ = std::chrono::steady_clock::now();
      }
      changed();
    }
  });
}

void ServeView::leases_loop() {
  feed("leases", [this] {
    kv::Bucket bucket = kv::Bucket::open(connection_, lease_bucket_);
    kv::Watch watch = bucket.watch(">");
    set_up("leases", true);
    {
      std::lock_guard lock(mu_);
      leases_.clear();
      places_.clear();
      beats_.clear();
    }
    while (!stopping_) {
      auto event = watch.next(kPoll);
      if (!event) continue;
      if (event->kind != kv::WatchEvent::Kind::caught_up) {
        std::lock_guard lock(mu_);
        const std::string key = event->entry.key;
        const bool put = event->kind == kv::WatchEvent::Kind::put;
        if (swarm::is_lease_key(key)) {
          if (put) leases_[key] = swarm::lease_entry_of(std::move(event->entry));
          else leases_.erase(key);
        } else if (swarm::place_of(key)) {
          if (put) places_[key] = std::move(event->entry);
          else places_.erase(key);
        } else if (auto place = swarm::beat_of(key)) {
          if (put) beats_[*place] = event->entry.created;
          else beats_.erase(*place);
        }
      }
      changed();
    }
  });
}

void ServeView::journal_loop() {
  std::optional<std::uint64_t> after;
  feed("journal", [this, &after] {
    swarm::JournalQuery query;
    query.buckets = {sessions_.bucket_name(), lease_bucket_};
    if (!after) query.since = std::chrono::system_clock::now() - kHistory;
    if (!journal_.state())
      throw swarm::Error(swarm::Errc::not_bootstrapped, "no journal yet (stream swarm-events); `swarm up` makes it");
    auto follow = journal_.follow(query, after);
    set_up("journal", true);
    while (!stopping_) {
      auto event = follow.next(kPoll);
      if (!event) continue;
      after = event->seq;
      {
        std::lock_guard lock(mu_);
        ++event_counts_[event->kind];
        events_.push_back(std::move(*event));
        const auto horizon = std::chrono::system_clock::now() - kHistory;
        while (events_.size() > kViewEvents ||
               (!events_.empty() && events_.front().time && *events_.front().time < horizon))
          events_.pop_front();
      }
      changed();
    }
  });
}

std::map<std::string, int> ServeView::waiting(swarm::TimePoint now) const {
  std::map<std::string, int> out;
  for (const auto& [key, place] : places_) {
    auto beat = beats_.find(key);
    if (swarm::place_is_live(place, beat == beats_.end() ? std::nullopt : std::optional(beat->second), now, {}, {}))
      ++out[*swarm::place_of(key)];
  }
  return out;
}

bool ServeView::nats_up() const {
  bool up = !up_.empty();
  for (const auto& [what, ok] : up_) up = up && ok;
  return up;
}

std::vector<swarm::SessionRow> ServeView::sessions_now(swarm::TimePoint* now) const {
  *now = server_now();
  std::vector<swarm::SessionRow> rows = table_.rows();
  const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - table_at_);
  for (auto& row : rows) {
    if (row.corrupt) continue;
    row.age += since;
    row.state = swarm::state_of(row.age, ttl_);
  }
  return rows;
}

std::string ServeView::metrics() const {
  std::lock_guard lock(mu_);
  swarm::TimePoint now;
  const auto rows = sessions_now(&now);
  std::map<std::pair<std::string, std::string>, int> sessions;
  for (const auto& row : rows) ++sessions[{std::string(swarm::to_string(row.state)), std::string(row.host)}];
  std::map<std::string, int> lease_states;
  for (const auto& [name, entry] : leases_) ++lease_states[std::string(swarm::to_string(swarm::standing_of(entry, now).state))];
  const std::map<std::string, int> waiters = waiting(now);
  const bool up = nats_up();

  std::string out;
  out += "# HELP swarm_sessions Sessions of the workspace's bucket by state and host.\n# TYPE swarm_sessions gauge\n";
  for (const auto& state : {"fresh", "late", "stale", "corrupt"})
    if (std::none_of(sessions.begin(), sessions.end(), [&](const auto& s) { return s.first.first == state; }))
      out += "swarm_sessions{state=\"" + std::string(state) + "\",host=\"\"} 0\n";
  for (const auto& [key, n] : sessions)
    out += "swarm_sessions{state=\"" + label(key.first) + "\",host=\"" + label(key.second) + "\"} " +
           std::to_string(n) + "\n";
  out += "# HELP swarm_leases Leases by state.\n# TYPE swarm_leases gauge\n";
  for (const auto& state : {"held", "expired", "corrupt"})
    out += "swarm_leases{state=\"" + std::string(state) + "\"} " +
           std::to_string(lease_states.count(state) ? lease_states[state] : 0) + "\n";
  out += "# HELP swarm_lease_waiters Live places in each lease's line.\n# TYPE swarm_lease_waiters gauge\n";
  for (const auto& [name, n] : waiters) out += "swarm_lease_waiters{lease=\"" + label(name) + "\"} " + std::to_string(n) + "\n";
  out += "# HELP swarm_events_total Journal events seen since this server started (the last hour's first).\n"
         "# TYPE swarm_events_total counter\n";
  for (const auto& [kind, n] : event_counts_) out += "swarm_events_total{kind=\"" + label(kind) + "\"} " + std::to_string(n) + "\n";
  out += "# HELP swarm_nats_up Whether every watch of NATS is working (1) or not (0).\n# TYPE swarm_nats_up gauge\n";
  out += std::string("swarm_nats_up ") + (up ? "1" : "0") + "\n";
  out += "# HELP swarm_session_ttl_seconds The session bucket's TTL.\n# TYPE swarm_session_ttl_seconds gauge\n";
  char ttl[32];
  std::snprintf(ttl, sizeof ttl, "%.3f", static_cast<double>(ttl_.count()) / 1000.0);
  out += std::string("swarm_session_ttl_seconds ") + ttl + "\n";
  return out;
}

std::string ServeView::status_document() const {
  std::lock_guard lock(mu_);
  swarm::TimePoint now;
  return cli::status_document(sessions_.bucket_name(), ttl_, sessions_now(&now));
}

std::string ServeView::leases_document() const {
  std::lock_guard lock(mu_);
  const auto now = server_now();
  std::vector<swarm::LeaseEntry> entries;
  for (const auto& [name, entry] : leases_) entries.push_back(entry);
  return cli::leases_document(entries, waiting(now), now).dump();
}

std::string ServeView::log_lines(std::size_t n) const {
  std::lock_guard lock(mu_);
  std::string out;
  const std::size_t from = events_.size() > n ? events_.size() - n : 0;
  for (std::size_t i = from; i < events_.size(); ++i) out += events_[i].to_json().dump() + "\n";
  return out;
}

std::pair<std::uint64_t, std::string> ServeView::page() const {
  std::lock_guard lock(mu_);
  swarm::TimePoint now;
  auto rows = sessions_now(&now);
  swarm::Json doc = swarm::Json::object();
  doc.set("server_time_ms", unix_ms(now))
      .set("ttl_ms", static_cast<std::int64_t>(ttl_.count()))
      .set("bucket", sessions_.bucket_name())
      .set("host", me_.host);
  doc.set("nats_up", nats_up());
  swarm::Json counts = swarm::Json::object();
  std::map<std::string, int> by_state;
  std::set<std::string> hosts;
  for (const auto& r : rows) {
    ++by_state[std::string(swarm::to_string(r.state))];
    hosts.insert(std::string(r.host));
  }
  for (const char* s : {"fresh", "late", "stale", "corrupt"}) counts.set(s, by_state.count(s) ? by_state[s] : 0);
  doc.set("counts", std::move(counts)).set("sessions_total", static_cast<std::int64_t>(rows.size()))
      .set("hosts", static_cast<std::int64_t>(hosts.size()));
  // The most troubled first, then by slot; at most kViewSessions.
  std::stable_sort(rows.begin(), rows.end(),
                   [](const swarm::SessionRow& a, const swarm::SessionRow& b) { return severity(a.state) < severity(b.state); });
  swarm::Json sessions = swarm::Json::array();
  for (std::size_t i = 0; i < rows.size() && i < kViewSessions; ++i) {
    const auto& r = rows[i];
    swarm::Json s = swarm::Json::object();
    s.set("slot", r.slot).set("task", r.task_id).set("host", r.host).set("state", swarm::to_string(r.state))
        .set("stored_ms", unix_ms(r.stored_at)).set("token", static_cast<std::int64_t>(r.session_token))
        .set("revision", static_cast<std::int64_t>(r.revision)).set("local", r.local);
    if (r.corrupt) s.set("error", r.corrupt_reason);
    sessions.push(std::move(s));
  }
  doc.set("sessions", std::move(sessions));
  swarm::Json leases = swarm::Json::array();
  const std::map<std::string, int> waiters = waiting(now);
  for (const auto& [name, e] : leases_) {
    const auto standing = swarm::standing_of(e, now);
    swarm::Json l = swarm::Json::object();
    l.set("name", name).set("state", swarm::to_string(standing.state)).set("stored_ms", unix_ms(e.stored_at))
        .set("left_ms", static_cast<std::int64_t>(standing.left.count()))
        .set("waiters", waiters.count(name) ? waiters.at(name) : 0);
    if (e.record) {
      l.set("holder", e.record->holder).set("host", e.record->host).set("token", static_cast<std::int64_t>(e.token()))
          .set("ttl_ms", static_cast<std::int64_t>(e.record->ttl.count()));
    }
    leases.push(std::move(l));
  }
  doc.set("leases", std::move(leases));
  swarm::Json events = swarm::Json::array();
  for (const auto& e : events_) {
    swarm::Json j = swarm::Json::object();
    j.set("time_ms", e.time ? unix_ms(*e.time) : 0).set("kind", e.kind).set("thing", swarm::to_string(e.thing))
        .set("name", e.name).set("host", e.actor.host).set("token", static_cast<std::int64_t>(e.token))
        .set("seq", static_cast<std::int64_t>(e.seq));
    events.push(std::move(j));
  }
  doc.set("events", std::move(events));
  return {version_, doc.dump()};
}

}  // namespace cli
