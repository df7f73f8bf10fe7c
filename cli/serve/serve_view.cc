#include "cli/serve/serve_view.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "cli/verbs/documents/documents.h"
#include "kv/bucket.h"
#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/text.h"
#include "swarm/lease/events.h"
#include "swarm/slots/liveness.h"
#include "swarm/slots/status_watch.h"

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

// Whether an act may have moved a branch, or what `branches` says of one.
bool moves_branches(const std::string& kind) {
  return kind == "commit" || kind == "close" || kind == "land" || kind == "land.refused" || kind == "sync" ||
         kind == "join" || kind == "evict";
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

void ServeView::set_clock(const swarm::ServerClock& clock) {
  clock_read_at_ = Steady::now();
  server_at_read_ = clock.now();
  margin_ = swarm::observer_margin(ttl_, clock.uncertainty);
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
      if (!said_down) swarm::log::warn("NATS is not answering ({}); trying again every {} ms", e.what(), kReconnect.count());
      said_down = true;
      std::unique_lock lock(mu_);
      if (!down_since_)
        down_since_ = clock_read_at_ == Steady::time_point{} ? std::chrono::system_clock::now() : server_now();
      cv_.wait_for(lock, kReconnect, [&] { return stopping_.load(); });
      continue;
    }
    if (said_down) swarm::log::info("NATS answers again at {}", kv::redact_urls(link->connection.connected_url()));
    said_down = false;
    serve_link(*link);
    if (stopping_) break;
    {
      std::lock_guard lock(mu_);
      connected_ = false;
      if (!down_since_) down_since_ = server_now();
    }
    changed();
    swarm::log::warn("lost NATS; connecting again");
  }
}

void ServeView::serve_link(ServeLink& link) {
  {
    std::lock_guard lock(mu_);
    bucket_ = link.landing.sessions().bucket_name();
    lease_bucket_ = link.landing.leases().bucket_name();
    ttl_ = link.landing.sessions().ttl();
    set_clock(link.landing.sessions().server_clock());
    connected_ = true;
    up_.clear();
    broken_ = false;
    // What the watches replay is the state now: nothing of before is kept but the journal's place.
    leases_.clear();
    places_.clear();
    limits_.clear();
    beats_.clear();
    tasks_.clear();
    inboxes_.clear();
    table_ = swarm::SessionTable(me_, true);
    branches_stale_ = true;
  }
  changed();
  feeds_.emplace_back([this, &link] { sessions_feed(link); });
  feeds_.emplace_back([this, &link] { leases_feed(link); });
  feeds_.emplace_back([this, &link] { journal_feed(link); });
  feeds_.emplace_back([this, &link] { branches_feed(link); });
  feeds_.emplace_back([this, &link] { tasks_feed(link); });
  feeds_.emplace_back([this, &link] { inboxes_feed(link); });
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
    if (!stopping_) swarm::log::warn("the {} feed broke: {}", what, e.what());
    set_up(what, false);
    broken_ = true;
    changed();
  }
}

void ServeView::sessions_feed(ServeLink& link) {
  feed("sessions", [&] {
    // The server's expiries it hears are journaled (every watcher writes the same message; one is kept).
    swarm::StatusWatch watch(link.landing.sessions(), me_, "", true, link.landing.journal());
    while (running()) {
      auto update = watch.next(kPoll);
      if (!update) continue;
      {
        std::lock_guard lock(mu_);
        table_ = std::move(update->view);
        table_at_ = Steady::now();
        for (const auto& row : table_.rows())
          if (!row.corrupt) last_renewals_[std::string(row.slot)] = {row.session_token, row.stored_at};
      }
      set_up("sessions", true);
      changed();
    }
  });
}

// One event of the lease bucket's watch, applied to the view; the journal
// event of a lease the server ended by its TTL (one this view had: a
// replay's marker ends nothing it had) when it was one.
std::optional<swarm::Event> ServeView::apply_lease_event(kv::WatchEvent&& event) {
  std::optional<swarm::Event> expired;  // the server ended a lease this view had
  std::lock_guard lock(mu_);
  if (event.kind != kv::WatchEvent::Kind::caught_up) {
    const std::string key = event.entry.key;
    const bool put = event.kind == kv::WatchEvent::Kind::put;
    if (swarm::is_lease_key(key)) {
      if (put) {
        leases_[key] = swarm::lease_entry_of(std::move(event.entry));
      } else {
        auto it = leases_.find(key);
        if (event.expired && it != leases_.end()) {
          swarm::LastWrite ended;
          ended.record = it->second.record;
          ended.expired_revision = it->second.revision;
          ended.expired_by_server = true;
          expired = swarm::lease_expired_event(lease_bucket_, key, ended, event.entry.revision,
                                               event.entry.created, me_);
        }
        if (it != leases_.end()) leases_.erase(it);
      }
    } else if (swarm::place_of(key)) {
      if (put) places_[key] = std::move(event.entry);
      else places_.erase(key);
    } else if (auto place = swarm::beat_of(key)) {
      if (put) beats_[*place] = event.entry.created;
      else beats_.erase(*place);
    } else if (auto semaphore = swarm::limit_key_of(key)) {
      auto limit = put ? swarm::limit_in(event.entry.value) : std::nullopt;
      if (limit) limits_[*semaphore] = *limit;
      else limits_.erase(*semaphore);
    }
  }
  ++version_;
  cv_.notify_all();
  return expired;
}

void ServeView::leases_feed(ServeLink& link) {
  feed("leases", [&] {
    kv::Bucket bucket = kv::Bucket::open(link.connection, lease_bucket_);
    kv::Watch watch = bucket.watch(">");
    while (running()) {
      auto event = watch.next(kPoll);
      if (!event) continue;
      if (event->kind == kv::WatchEvent::Kind::caught_up) set_up("leases", true);
      // The server's end of a lease this view had is journaled, unlocked.
      if (auto expired = apply_lease_event(std::move(*event))) link.landing.journal().record(*expired);
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
    query.buckets = {bucket_, lease_bucket_, link.landing.task_bucket()};
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
        if (event->kind == "land" || event->kind == "land.refused")
          if (const std::string check = text_field(event->detail, "check"); !check.empty()) ++land_checks_[check];
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

// The task queue from a watch of its bucket (deletes included: doctor
// --fix removes a corrupt record). A workspace made before tasks has no
// bucket: looked for again every few seconds, until `swarm up` makes it.
void ServeView::tasks_feed(ServeLink& link) {
  feed("tasks", [&] {
    const std::string name = link.landing.task_bucket();
    std::optional<swarm::TaskStore> queue;
    while (running()) {
      queue = swarm::TaskStore::open_if_exists(link.connection, name);
      if (queue) break;
      set_up("tasks", true);
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, kLookAgainForMissing, [&] { return !running(); });
    }
    if (!queue) return;
    kv::Watch watch = queue->watch(true);
    while (running()) {
      auto event = watch.next(kPoll);
      if (!event) continue;
      if (event->kind == kv::WatchEvent::Kind::caught_up) set_up("tasks", true);
      std::lock_guard lock(mu_);
      if (event->kind != kv::WatchEvent::Kind::caught_up && event->entry.key.front() != '_') {
        const std::string key = event->entry.key;
        if (event->kind == kv::WatchEvent::Kind::put) tasks_[key] = swarm::task_entry_of(std::move(event->entry));
        else tasks_.erase(key);
      }
      ++version_;
      cv_.notify_all();
    }
  });
}

}  // namespace cli
