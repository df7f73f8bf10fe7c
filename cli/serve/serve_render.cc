// What ServeView shows, built from what its feeds hold: the verbs'
// documents, the journal's last acts, and the page (the feeds and the
// supervisor: serve_view.cc; /metrics: serve_metrics.cc).
#include <algorithm>
#include <cstdio>
#include <set>
#include <unordered_map>

#include "cli/verbs/documents/documents.h"
#include "cli/serve/serve_view.h"
#include "swarm/holds/hold_store.h"
#include "cli/verbs/status_table.h"
#include "swarm/base/text.h"
#include "swarm/slots/liveness.h"

namespace cli {

std::string text_field(const swarm::Json& detail, const char* name) {
  const cJSON* item = detail ? cJSON_GetObjectItemCaseSensitive(detail.get(), name) : nullptr;
  return cJSON_IsString(item) ? std::string(item->valuestring) : std::string();
}

namespace {

std::int64_t unix_ms(swarm::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}


int severity(swarm::State s) {
  switch (s) {
    case swarm::State::corrupt: return 0;
    case swarm::State::dead: return 1;
    case swarm::State::stale: return 1;
    case swarm::State::late: return 2;
    case swarm::State::fresh: return 3;
  }
  return 3;
}

// Who held what, as spans: a slot from its join to its close (or evict, or
// the next join), a lease from its grant to its release (or loss, or the
// next grant). A span no event ended is open until its hold expires:
// `expiry` says when (ended: it has, or is open until then unless renewed).
using Expiry = std::function<SpanExpiry(const std::string& thing, const std::string& name,
                                                   std::uint64_t token, std::int64_t from)>;
swarm::Json spans_of(const std::deque<swarm::Event>& events, const Expiry& expiry) {
  struct Span {
    std::string thing, name, host, end;
    std::int64_t from = 0, to = -1, until = -1;
    std::uint64_t token = 0;
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
      open[key] = {thing, e.name, e.actor.host, "", at, -1, -1, e.token};
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
  for (auto& [key, span] : open) {
    const SpanExpiry e = expiry(span.thing, span.name, span.token, span.from);
    if (e.ended) {
      span.to = std::max(e.at, span.from);
      span.end = "expired";
    } else {
      span.until = e.at;
    }
    done.push_back(std::move(span));
  }
  std::sort(done.begin(), done.end(), [](const Span& a, const Span& b) { return a.from < b.from; });
  if (done.size() > kViewSpans) done.erase(done.begin(), done.end() - static_cast<std::ptrdiff_t>(kViewSpans));
  swarm::Json out = swarm::Json::array();
  for (const auto& s : done) {
    swarm::Json j = swarm::Json::object();
    j.set("thing", s.thing).set("name", s.name).set("host", s.host).set("from_ms", s.from);
    if (s.to < 0) j.set_null("to_ms");
    else j.set("to_ms", s.to);
    // An open span ends on the page once this passes unrenewed.
    if (s.to < 0 && s.until >= 0) j.set("until_ms", s.until);
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

SpanExpiry ServeView::span_expiry(const std::string& thing, const std::string& name, std::uint64_t token,
                                             std::int64_t from, swarm::TimePoint now) const {
  // What this view saw last of the hold by this token: when it expires
  // unless renewed. Nothing seen of it: it ended, no later than it began.
  std::optional<swarm::TimePoint> until;
  if (thing == "lease") {
    auto it = leases_.find(name);
    if (it != leases_.end() && !it->second.corrupt() && it->second.token() == token)
      until = it->second.stored_at + it->second.record->ttl;
  } else if (auto seen = last_renewals_.find(name); seen != last_renewals_.end() && seen->second.first == token) {
    until = seen->second.second + ttl_;
  }
  if (!until) return {true, from};
  return {*until <= now, unix_ms(*until)};
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

std::vector<swarm::LeaseEntry> ServeView::lease_entries() const {
  std::vector<swarm::LeaseEntry> entries;
  entries.reserve(leases_.size());
  for (const auto& [name, entry] : leases_) entries.push_back(entry);
  return entries;
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
  const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - table_at_);
  for (auto& row : rows) {
    if (row.corrupt) continue;
    row.age += since;
    row.state = swarm::observed_state(row.age, ttl_, margin_);
    if (row.local && row.agent_pid > 0 && row.state != swarm::State::stale &&
        swarm::run_is_gone(row.leaf_pid, row.leaf_start, row.agent_pid, row.agent_start))
      row.state = swarm::State::dead;
  }
  // Each session's task state, from the queue this view follows (as
  // `status` notes it from the queue it reads).
  std::unordered_map<std::string_view, std::string_view> state_of;
  for (const auto& [key, e] : tasks_)
    if (e.task) state_of[e.task->id] = swarm::to_string(e.task->state());
  for (auto& row : rows)
    if (auto it = state_of.find(row.task_id); !row.corrupt && it != state_of.end()) row.task_state = it->second;
  return rows;
}

std::string ServeView::status_document() const {
  std::lock_guard lock(mu_);
  swarm::TimePoint now;
  return cli::status_document(bucket_, ttl_, sessions_now(&now));
}

std::string ServeView::leases_document() const {
  std::lock_guard lock(mu_);
  const auto now = server_now();
  const auto entries = lease_entries();
  const auto waiters = waiting(now);
  return cli::leases_document(entries, waiters, swarm::summarize_semaphores(limits_, entries, waiters, now), now).dump();
}

std::string ServeView::branches_document() const {
  std::lock_guard lock(mu_);
  return branches_json_;
}

namespace {

// The queue's entries in `task list` order (corrupt ones last).
std::vector<const swarm::TaskEntry*> listed(const std::map<std::string, swarm::TaskEntry>& tasks) {
  std::vector<const swarm::TaskEntry*> out;
  out.reserve(tasks.size());
  for (const auto& [key, e] : tasks) out.push_back(&e);
  sort_listed(out);
  return out;
}

// Where a task stands on the page: ready or waiting (open), its state
// otherwise, or corrupt.
std::string stands(const swarm::TaskEntry& e, const swarm::StateOf& state_of) {
  if (e.corrupt()) return "corrupt";
  if (e.task->state() == swarm::TaskState::open) return swarm::is_ready(*e.task, state_of) ? "ready" : "waiting";
  return e.task->state_text;
}

bool done(const std::string& stands) { return stands == "completed" || stands == "failed" || stands == "cancelled"; }

}  // namespace

std::string ServeView::tasks_document() const {
  std::lock_guard lock(mu_);
  const auto shown = listed(tasks_);
  return cli::tasks_document(shown, states_of(shown)).dump();
}

swarm::Json ServeView::inbox_rows() const {
  swarm::Json rows = swarm::Json::array();
  for (const auto& r : inboxes_) {
    swarm::Json j = swarm::Json::object();
    j.set("name", r.name).set("cursor", r.cursor).set("unread", r.unread);
    rows.push(std::move(j));
  }
  return rows;
}

std::string ServeView::inboxes_document() const {
  std::lock_guard lock(mu_);
  swarm::Json doc = swarm::Json::object();
  doc.set("schema", "swarm.inboxes.v1").set("inboxes", inbox_rows());
  return doc.dump();
}

std::vector<swarm::LeaseEntry> ServeView::live_holds(swarm::TimePoint now) const {
  std::vector<swarm::LeaseEntry> out;
  for (const auto& [name, e] : leases_)
    if (swarm::hold_slot_of(name) && swarm::standing_of(e, now).state != swarm::LeaseState::expired) out.push_back(e);
  return out;
}

std::string ServeView::holds_document() const {
  std::lock_guard lock(mu_);
  const auto now = server_now();
  return cli::holds_document(live_holds(now), now).dump();
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
  for (const char* s : {"fresh", "late", "stale", "dead", "corrupt"}) counts.set(s, by_state.count(s) ? by_state[s] : 0);
  doc.set("summary", summary(rows));  // the words `status` ends its table with
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
        .set("revision", static_cast<std::int64_t>(r.revision)).set("local", r.local)
        .set("status", r.status).set("note", r.note);
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
  doc.set("spans", spans_of(events_, [&](const std::string& thing, const std::string& name, std::uint64_t token,
                                          std::int64_t from) { return span_expiry(thing, name, token, from, now); }));
  swarm::Json branches = swarm::Json::object();
  if (branches_) {
    branches.set("onto", branches_->onto).set("rows", branch_rows(*branches_, events_));
  } else {
    branches.set_null("onto").set("rows", swarm::Json::array());
  }
  doc.set("branches", std::move(branches));
  doc.set("tasks", tasks_panel());
  doc.set("inboxes", inbox_rows());
  doc.set("holds", hold_rows(live_holds(now), now));
  return doc.dump();
}

// The page's tasks panel: counts by where each stands, and at most
// kViewTasks rows, those not done first (in `task list` order), then the
// done ones, the latest first.
swarm::Json ServeView::tasks_panel() const {
  const auto each = listed(tasks_);
  const auto state_of = states_of(each);
  std::map<std::string, int> counts;
  for (const char* s : {"ready", "waiting", "working", "in_review", "approved", "completed", "failed", "cancelled",
                        "corrupt"})
    counts[s] = 0;
  std::vector<std::pair<const swarm::TaskEntry*, std::string>> open, closed;
  for (const auto* e : each) {
    std::string where = stands(*e, state_of);
    ++counts[where];
    (done(where) ? closed : open).emplace_back(e, std::move(where));
  }
  std::stable_sort(closed.begin(), closed.end(), [](const auto& a, const auto& b) {
    return a.first->stored_at > b.first->stored_at;
  });
  open.insert(open.end(), closed.begin(), closed.end());
  swarm::Json rows = swarm::Json::array();
  for (std::size_t i = 0; i < open.size() && i < kViewTasks; ++i) {
    const auto& [e, where] = open[i];
    swarm::Json r = swarm::Json::object();
    r.set("stands", where).set("updated_ms", unix_ms(e->stored_at));
    if (e->corrupt()) {
      r.set("id", e->key).set("title", e->corrupt_reason).set("slot", "").set("priority", 0);
    } else {
      const swarm::Task& t = *e->task;
      r.set("id", t.id).set("title", t.title).set("slot", t.slot).set("priority", t.priority)
          .set("attempts", t.attempts).set("result", t.result);
      if (t.created_at) r.set("created_ms", unix_ms(*t.created_at));
    }
    rows.push(std::move(r));
  }
  swarm::Json c = swarm::Json::object();
  for (const auto& [k, n] : counts) c.set(k.c_str(), n);
  swarm::Json panel = swarm::Json::object();
  panel.set("counts", std::move(c)).set("total", static_cast<std::int64_t>(tasks_.size())).set("rows", std::move(rows));
  return panel;
}

}  // namespace cli
