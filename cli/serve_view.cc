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
#include "swarm/text.h"

namespace cli {

namespace {

using Steady = std::chrono::steady_clock;
// How often a feed looks up from its watch, and the supervisor at the connection.
constexpr std::chrono::milliseconds kPoll{200};
// Between two tries to connect while NATS is down.
constexpr std::chrono::milliseconds kReconnect{500};
constexpr std::chrono::hours kHistory{24};
// The branches are read again at most this often, and at least this often
// (a push from outside the queue says nothing in the journal).
constexpr std::chrono::seconds kBranchesAtMost{1};
constexpr std::chrono::seconds kBranchesAtLeast{30};

std::int64_t unix_ms(swarm::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// A Prometheus label value from any text: valid UTF-8, control characters
// escaped as swarm prints them, then backslash, quote and line feed escaped
// as the exposition format wants.
std::string label(std::string_view value) {
  std::string out;
  for (char c : swarm::printable(swarm::valid_utf8(value))) {
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

std::string text_field(const swarm::Json& detail, const char* name) {
  const cJSON* item = detail ? cJSON_GetObjectItemCaseSensitive(detail.get(), name) : nullptr;
  return cJSON_IsString(item) ? std::string(item->valuestring) : std::string();
}

// Whether an act may have moved a branch, or what `branches` says of one.
bool moves_branches(const std::string& kind) {
  return kind == "commit" || kind == "close" || kind == "land" || kind == "land.refused" || kind == "sync" ||
         kind == "join" || kind == "evict";
}

// Who held what, as spans: a slot from its join to its close (or evict, or
// the next join), a lease from its grant to its release (or loss, or the
// next grant). Open spans have no end.
swarm::Json spans_of(const std::deque<swarm::Event>& events) {
  struct Span {
    std::string thing, name, host, end;
    std::int64_t from = 0, to = -1;
  };
  std::vector<Span> done;
  std::map<std::string, Span> open;
  auto finish = [&](const std::string& key, std::int64_t at, const std::string& how) {
    auto it = open.find(key);
    if (it == open.end()) return;
    it->second.to = at;
    it->second.end = how;
    done.push_back(std::move(it->second));
    open.erase(it);
  };
  for (const auto& e : events) {
    if (!e.time) continue;
    const std::int64_t at = unix_ms(*e.time);
    const std::string thing(swarm::to_string(e.thing));
    const std::string key = thing + "/" + e.name;
    if (e.kind == "join" || e.kind == "lease.grant") {
      finish(key, at, "taken over");
      open[key] = {thing, e.name, e.actor.host, "", at, -1};
    } else if (e.kind == "close") {
      const std::string result = text_field(e.detail, "result");
      finish(key, at, result.empty() ? "closed" : result);
    } else if (e.kind == "evict") {
      finish(key, at, "evicted");
    } else if (e.kind == "lease.release" || e.kind == "elect.resign") {
      finish(key, at, "released");
    } else if (e.kind == "lease.lost") {
      finish(key, at, "lost");
    }
  }
  for (auto& [key, span] : open) done.push_back(std::move(span));
  std::sort(done.begin(), done.end(), [](const Span& a, const Span& b) { return a.from < b.from; });
  if (done.size() > kViewSpans) done.erase(done.begin(), done.end() - static_cast<std::ptrdiff_t>(kViewSpans));
  swarm::Json out = swarm::Json::array();
  for (const auto& s : done) {
    swarm::Json j = swarm::Json::object();
    j.set("thing", s.thing).set("name", s.name).set("host", s.host).set("from_ms", s.from);
    if (s.to < 0) j.set_null("to_ms");
    else j.set("to_ms", s.to);
    j.set("end", s.end);
    out.push(std::move(j));
  }
  return out;
}

// The branches panel: each branch and where it stands, from `branches` and
// the journal's lands and refusals since its last close.
swarm::Json branch_rows(const swarm::Branches& report, const std::deque<swarm::Event>& events) {
  std::map<std::string, std::string> refused;  // slot -> the last refusal's reason since its last close
  for (const auto& e : events) {
    if (e.thing != swarm::Thing::slot) continue;
    if (e.kind == "close" || e.kind == "land") refused.erase(e.name);
    if (e.kind == "land.refused" && text_field(e.detail, "onto") == report.onto)
      refused[e.name] = text_field(e.detail, "reason");
  }
  swarm::Json rows = swarm::Json::array();
  for (const auto& row : report.rows) {
    std::string stands = row.git.landed             ? "landed"
                         : refused.count(row.git.slot) ? "refused"
                         : row.state                  ? "working"
                         : row.result == "success"    ? "done"
                         : row.result.empty()         ? "unfinished"
                                                      : row.result;
    swarm::Json b = swarm::Json::object();
    b.set("slot", row.git.slot).set("stands", stands).set("ahead", static_cast<std::int64_t>(row.git.ahead))
        .set("head", row.git.head.substr(0, 12)).set("committed_ms", row.git.committed_at * 1000)
        .set("result", row.result);
    if (auto it = refused.find(row.git.slot); it != refused.end()) b.set("reason", it->second);
    rows.push(std::move(b));
  }
  return rows;
}

}  // namespace

ServeView::ServeView(ServeConnect connect, swarm::HostIdentity me)
    : connect_(std::move(connect)), me_(std::move(me)), table_(me_, true) {}

ServeView::~ServeView() { stop(); }

void ServeView::start() {
  supervisor_ = std::thread([this] { supervise(); });
}

void ServeView::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (supervisor_.joinable()) supervisor_.join();
}

void ServeView::set_clock(swarm::TimePoint server_time) {
  clock_read_at_ = Steady::now();
  server_at_read_ = server_time;
}

swarm::TimePoint ServeView::server_now() const {
  return server_at_read_ + std::chrono::duration_cast<swarm::TimePoint::duration>(Steady::now() - clock_read_at_);
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
  if (nats_up()) down_since_.reset();
}

std::uint64_t ServeView::version() const {
  std::lock_guard lock(mu_);
  return version_;
}

bool ServeView::wait_for_change(std::uint64_t seen, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return stopping_ || version_ > seen; });
  return !stopping_;
}

// Connects (again and again while NATS is down), runs the feeds on the
// connection until it goes, says at once that NATS is down, and starts over.
void ServeView::supervise() {
  bool said_down = false;
  while (!stopping_) {
    std::optional<ServeLink> link;
    try {
      link.emplace(connect_());
    } catch (const std::exception& e) {
      if (!said_down) spdlog::warn("NATS is not answering ({}); trying again every {} ms", e.what(), kReconnect.count());
      said_down = true;
      std::unique_lock lock(mu_);
      if (!down_since_)
        down_since_ = clock_read_at_ == Steady::time_point{} ? std::chrono::system_clock::now() : server_now();
      cv_.wait_for(lock, kReconnect, [&] { return stopping_.load(); });
      continue;
    }
    if (said_down) spdlog::info("NATS answers again at {}", kv::redact_urls(link->connection.connected_url()));
    said_down = false;
    serve_link(*link);
    if (stopping_) break;
    {
      std::lock_guard lock(mu_);
      connected_ = false;
      if (!down_since_) down_since_ = server_now();
    }
    changed();
    spdlog::warn("lost NATS; connecting again");
  }
}

void ServeView::serve_link(ServeLink& link) {
  {
    std::lock_guard lock(mu_);
    bucket_ = link.landing.sessions().bucket_name();
    lease_bucket_ = link.landing.leases().bucket_name();
    ttl_ = link.landing.sessions().ttl();
    set_clock(link.landing.sessions().server_clock().now());
    connected_ = true;
    up_.clear();
    broken_ = false;
    // What the watches replay is the state now: nothing of before is kept but the journal's place.
    leases_.clear();
    places_.clear();
    beats_.clear();
    table_ = swarm::SessionTable(me_, true);
    branches_stale_ = true;
  }
  changed();
  feeds_.emplace_back([this, &link] { sessions_feed(link); });
  feeds_.emplace_back([this, &link] { leases_feed(link); });
  feeds_.emplace_back([this, &link] { journal_feed(link); });
  feeds_.emplace_back([this, &link] { branches_feed(link); });
  // The connection's state is known at once when the server goes (its
  // socket closes): within one poll, the view says so.
  while (running()) {
    if (!link.connection.connected()) {
      broken_ = true;
      break;
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, kPoll, [&] { return stopping_.load() || broken_.load(); });
  }
  broken_ = true;
  // Said at once: a feed may be inside a request that waits out its timeout.
  {
    std::lock_guard lock(mu_);
    connected_ = false;
    if (!stopping_ && !down_since_) down_since_ = server_now();
    ++version_;
  }
  cv_.notify_all();
  for (auto& t : feeds_)
    if (t.joinable()) t.join();
  feeds_.clear();
}

// Runs `body` (one feed) until the link breaks or stop(); a feed that throws
// breaks the link, and the supervisor connects anew.
void ServeView::feed(const char* what, const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    if (!stopping_) spdlog::warn("the {} feed broke: {}", what, e.what());
    set_up(what, false);
    broken_ = true;
    changed();
  }
}

void ServeView::sessions_feed(ServeLink& link) {
  feed("sessions", [&] {
    swarm::StatusWatch watch(link.landing.sessions(), me_, "", true);
    while (running()) {
      auto update = watch.next(kPoll);
      if (!update) continue;
      {
        std::lock_guard lock(mu_);
        table_ = std::move(update->view);
        table_at_ = Steady::now();
      }
      set_up("sessions", true);
      changed();
    }
  });
}

void ServeView::leases_feed(ServeLink& link) {
  feed("leases", [&] {
    kv::Bucket bucket = kv::Bucket::open(link.connection, lease_bucket_);
    kv::Watch watch = bucket.watch(">");
    while (running()) {
      auto event = watch.next(kPoll);
      if (!event) continue;
      if (event->kind == kv::WatchEvent::Kind::caught_up) set_up("leases", true);
      std::lock_guard lock(mu_);
      if (event->kind != kv::WatchEvent::Kind::caught_up) {
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
      ++version_;
      cv_.notify_all();
    }
  });
}

void ServeView::journal_feed(ServeLink& link) {
  feed("journal", [&] {
    const swarm::Journal& journal = link.landing.journal();
    auto state = journal.state();
    if (!state)
      throw swarm::Error(swarm::Errc::not_bootstrapped, "no journal yet (stream swarm-events); `swarm up` makes it");
    swarm::JournalQuery query;
    query.buckets = {bucket_, lease_bucket_};
    std::optional<std::uint64_t> after;
    {
      std::lock_guard lock(mu_);
      // Back on the same stream: on from where it was. On another (a store
      // made anew): from its end, so that no act is counted twice.
      if (journal_after_ && *journal_after_ <= state->last_seq) after = journal_after_;
      else if (journal_after_) after = state->last_seq;
      else query.since = std::chrono::system_clock::now() - kHistory;
    }
    auto follow = journal.follow(query, after);
    set_up("journal", true);
    changed();
    while (running()) {
      auto event = follow.next(kPoll);
      if (!event) continue;
      bool branches = false;
      {
        std::lock_guard lock(mu_);
        journal_after_ = event->seq;
        if (!event->kind.empty()) ++event_counts_[event->kind];
        branches = moves_branches(event->kind);
        events_.push_back(std::move(*event));
        const auto horizon = std::chrono::system_clock::now() - kHistory;
        while (events_.size() > kViewEvents ||
               (!events_.empty() && events_.front().time && *events_.front().time < horizon))
          events_.pop_front();
        if (branches) branches_stale_ = true;
        ++version_;
      }
      cv_.notify_all();
    }
  });
}

// The hub read again (read-only: swarm serve never writes it) when the
// journal says a branch may have moved, at most once a second, and every
// 30 s whatever it says.
void ServeView::branches_feed(ServeLink& link) {
  feed("branches", [&] {
    auto last = Steady::now() - kBranchesAtLeast;
    while (running()) {
      {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, kPoll, [&] { return !running(); });
        const bool due = branches_stale_ || Steady::now() - last >= kBranchesAtLeast;
        if (!running() || !due || Steady::now() - last < kBranchesAtMost) continue;
        branches_stale_ = false;
      }
      last = Steady::now();
      try {
        swarm::Branches report = link.landing.branches(link.landing.onto({}));
        std::string json = cli::branches_document(report).dump();
        std::lock_guard lock(mu_);
        branches_ = std::move(report);
        branches_json_ = std::move(json);
        ++version_;
      } catch (const swarm::Error& e) {
        // A hub that cannot be read is said, not a broken NATS link.
        if (e.kind() == swarm::Errc::unavailable && !link.connection.connected()) throw;
        swarm::Json doc = swarm::Json::object();
        doc.set("schema", "swarm.error.v1").set("kind", swarm::to_string(e.kind())).set("message", e.what());
        std::lock_guard lock(mu_);
        branches_json_ = doc.dump();
        ++version_;
      }
      cv_.notify_all();
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
  if (!connected_) return false;
  for (const char* feed : {"sessions", "leases", "journal"}) {
    auto it = up_.find(feed);
    if (it == up_.end() || !it->second) return false;
  }
  return true;
}

std::vector<swarm::SessionRow> ServeView::sessions_now(swarm::TimePoint* now) const {
  *now = server_now();
  std::vector<swarm::SessionRow> rows = table_.rows();
  const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - table_at_);
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
  for (const auto& row : rows)
    ++sessions[{std::string(swarm::to_string(row.state)), row.corrupt ? std::string("unknown") : std::string(row.host)}];
  std::map<std::string, int> lease_states;
  for (const auto& [name, entry] : leases_) ++lease_states[std::string(swarm::to_string(swarm::standing_of(entry, now).state))];
  const std::map<std::string, int> waiters = waiting(now);

  std::string out;
  out += "# HELP swarm_sessions Sessions of the workspace's bucket by state and host.\n# TYPE swarm_sessions gauge\n";
  for (const auto& [key, n] : sessions) {
    const std::string host = key.second.empty() ? "unknown" : key.second;
    out += "swarm_sessions{state=\"" + label(key.first) + "\",host=\"" + label(host) + "\"} " + std::to_string(n) + "\n";
  }
  out += "# HELP swarm_leases Leases by state.\n# TYPE swarm_leases gauge\n";
  for (const auto& state : {"held", "expired", "corrupt"})
    out += "swarm_leases{state=\"" + std::string(state) + "\"} " +
           std::to_string(lease_states.count(state) ? lease_states[state] : 0) + "\n";
  out += "# HELP swarm_lease_waiters Live places in each lease's line.\n# TYPE swarm_lease_waiters gauge\n";
  for (const auto& [name, n] : waiters) out += "swarm_lease_waiters{lease=\"" + label(name) + "\"} " + std::to_string(n) + "\n";
  out += "# HELP swarm_events_total Journal events seen since this server started (the last day's first).\n"
         "# TYPE swarm_events_total counter\n";
  for (const auto& [kind, n] : event_counts_) out += "swarm_events_total{kind=\"" + label(kind) + "\"} " + std::to_string(n) + "\n";
  out += "# HELP swarm_nats_up Whether NATS answers and every watch of it works (1) or not (0).\n# TYPE swarm_nats_up gauge\n";
  out += std::string("swarm_nats_up ") + (nats_up() ? "1" : "0") + "\n";
  out += "# HELP swarm_session_ttl_seconds The session bucket's TTL.\n# TYPE swarm_session_ttl_seconds gauge\n";
  char ttl[32];
  std::snprintf(ttl, sizeof ttl, "%.3f", static_cast<double>(ttl_.count()) / 1000.0);
  out += std::string("swarm_session_ttl_seconds ") + ttl + "\n";
  return out;
}

std::string ServeView::status_document() const {
  std::lock_guard lock(mu_);
  swarm::TimePoint now;
  return cli::status_document(bucket_, ttl_, sessions_now(&now));
}

std::string ServeView::leases_document() const {
  std::lock_guard lock(mu_);
  const auto now = server_now();
  std::vector<swarm::LeaseEntry> entries;
  for (const auto& [name, entry] : leases_) entries.push_back(entry);
  return cli::leases_document(entries, waiting(now), now).dump();
}

std::string ServeView::branches_document() const {
  std::lock_guard lock(mu_);
  return branches_json_;
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
  // One view per version, whoever asks (every stream opened, the pusher):
  // the server's time alone is put in fresh.
  if (page_version_ != version_) {
    page_cache_ = page_body();
    page_version_ = version_;
  }
  return {version_, "{\"server_time_ms\":" + std::to_string(unix_ms(server_now())) + "," + page_cache_.substr(1)};
}

std::string ServeView::page_body() const {
  swarm::TimePoint now;
  auto rows = sessions_now(&now);
  swarm::Json doc = swarm::Json::object();
  doc.set("ttl_ms", static_cast<std::int64_t>(ttl_.count()))
      .set("bucket", bucket_).set("host", me_.host).set("nats_up", nats_up());
  if (down_since_ && !nats_up()) doc.set("nats_down_since_ms", unix_ms(*down_since_));
  else doc.set_null("nats_down_since_ms");
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
          .set("ttl_ms", static_cast<std::int64_t>(e.record->ttl.count()))
          .set("task", e.record->task).set("slot", e.record->slot);
    }
    leases.push(std::move(l));
  }
  doc.set("leases", std::move(leases));
  swarm::Json acts = swarm::Json::array();
  const std::size_t first = events_.size() > kViewActs ? events_.size() - kViewActs : 0;
  for (std::size_t i = first; i < events_.size(); ++i) {
    const auto& e = events_[i];
    swarm::Json j = swarm::Json::object();
    j.set("time_ms", e.time ? unix_ms(*e.time) : 0).set("kind", e.kind).set("thing", swarm::to_string(e.thing))
        .set("name", e.name).set("host", e.actor.host).set("token", static_cast<std::int64_t>(e.token))
        .set("seq", static_cast<std::int64_t>(e.seq)).set("detail", swarm::detail_text(e.detail));
    acts.push(std::move(j));
  }
  doc.set("events", std::move(acts));
  doc.set("spans", spans_of(events_));
  swarm::Json branches = swarm::Json::object();
  if (branches_) {
    branches.set("onto", branches_->onto).set("rows", branch_rows(*branches_, events_));
  } else {
    branches.set_null("onto").set("rows", swarm::Json::array());
  }
  doc.set("branches", std::move(branches));
  return doc.dump();
}

}  // namespace cli
