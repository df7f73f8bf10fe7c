// /metrics: what ServeView's feeds hold, in Prometheus's text format. Every
// family names each value it can take, 0 when none is in it: a sum over no
// series at all is empty, not 0, and a graph of it shows nothing.
#include <cstdio>
#include <map>
#include <string>
#include <string_view>

#include "cli/serve/serve_view.h"
#include "swarm/base/text.h"
#include "swarm/slots/liveness.h"

namespace cli {

namespace {

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

// One metric family: its HELP and TYPE lines, then its samples.
class Family {
 public:
  Family(std::string& out, std::string_view name, std::string_view type, std::string_view help)
      : out_(out), name_(name) {
    out_ += "# HELP " + name_ + " " + std::string(help) + "\n# TYPE " + name_ + " " + std::string(type) + "\n";
  }

  // A sample with one label.
  void sample(std::string_view key, std::string_view value, const std::string& number) {
    out_ += name_ + "{" + std::string(key) + "=\"" + label(value) + "\"} " + number + "\n";
  }
  void sample(std::string_view key, std::string_view value, long long n) { sample(key, value, std::to_string(n)); }
  // A sample with no label.
  void sample(const std::string& number) { out_ += name_ + " " + number + "\n"; }

 private:
  std::string& out_;
  std::string name_;
};

}  // namespace

void ServeView::session_metrics(std::string& out, const std::vector<swarm::SessionRow>& rows) const {
  std::map<std::pair<std::string, std::string>, int> sessions;
  for (const auto& row : rows)
    ++sessions[{std::string(swarm::to_string(row.state)), row.corrupt ? std::string("unknown") : std::string(row.host)}];
  for (const char* state : {"fresh", "late", "stale", "dead"}) sessions.try_emplace({state, me_.host}, 0);
  sessions.try_emplace({"corrupt", "unknown"}, 0);
  Family(out, "swarm_sessions", "gauge", "Sessions of the workspace's bucket by state and host.");
  for (const auto& [key, n] : sessions) {
    const std::string host = key.second.empty() ? "unknown" : key.second;
    out += "swarm_sessions{state=\"" + label(key.first) + "\",host=\"" + label(host) + "\"} " + std::to_string(n) + "\n";
  }
  // What the agents say they do (renew --status): a gauge of its own, so
  // swarm_sessions keeps its two labels (state, host) for the queries built on it.
  std::map<std::string, int> doing = {{"working", 0}, {"blocked", 0}, {"idle", 0}, {"waiting", 0}, {"unsaid", 0}};
  for (const auto& row : rows)
    if (!row.corrupt) ++doing[row.status.empty() ? std::string("unsaid") : std::string(row.status)];
  Family agents(out, "swarm_agents", "gauge", "Live sessions by what their agent says it does (swarm renew --status).");
  for (const auto& [status, n] : doing) agents.sample("status", status, n);
}

void ServeView::lease_metrics(std::string& out, swarm::TimePoint now) const {
  std::map<std::string, int> lease_states = {{"held", 0}, {"expired", 0}, {"corrupt", 0}};
  for (const auto& [name, entry] : leases_) ++lease_states[std::string(swarm::to_string(swarm::standing_of(entry, now).state))];
  Family leases(out, "swarm_leases", "gauge", "Leases by state.");
  for (const char* state : {"held", "expired", "corrupt"}) leases.sample("state", state, lease_states[state]);
  const std::map<std::string, int> waiters = waiting(now);
  Family line(out, "swarm_lease_waiters", "gauge", "Live places in each lease's line.");
  for (const auto& [name, n] : waiters) line.sample("lease", name, n);
  const auto sems = swarm::summarize_semaphores(limits_, lease_entries(), waiters, now);
  Family limit(out, "swarm_semaphore_limit", "gauge", "Each semaphore's limit.");
  for (const auto& s : sems) limit.sample("semaphore", s.name, static_cast<long long>(s.limit));
  Family held(out, "swarm_semaphore_held", "gauge", "Permits of each semaphore held now.");
  for (const auto& s : sems) held.sample("semaphore", s.name, static_cast<long long>(s.held));
  Family waiting_for(out, "swarm_semaphore_waiters", "gauge",
                     "Waiters for a permit of each semaphore (at its gate and in line).");
  for (const auto& s : sems) waiting_for.sample("semaphore", s.name, static_cast<long long>(s.waiters));
}

void ServeView::queue_metrics(std::string& out, swarm::TimePoint now) const {
  std::map<std::string, int> task_states;
  for (const auto state : swarm::all_task_states()) task_states[std::string(swarm::to_string(state))] = 0;
  task_states["corrupt"] = 0;
  for (const auto& [key, e] : tasks_) ++task_states[e.corrupt() ? std::string("corrupt") : e.task->state_text];
  Family tasks(out, "swarm_tasks", "gauge",
               "Tasks of the queue by state (open split into ready and waiting is on the page).");
  for (const auto& [state, n] : task_states) tasks.sample("state", state, n);
  Family unread(out, "swarm_inbox_unread", "gauge",
                "Messages to each inbox and to all after its cursor (not acked yet).");
  for (const auto& r : inboxes_) unread.sample("inbox", r.name, static_cast<long long>(r.unread));
  std::map<std::string, int> hold_kinds = {{"exclusive", 0}, {"shared", 0}};
  for (const auto& e : live_holds(now))
    if (!e.corrupt()) ++hold_kinds[e.record->kind == "shared" ? "shared" : "exclusive"];
  Family holds(out, "swarm_holds", "gauge", "Live holds (swarm hold) by kind.");
  for (const auto& [kind, n] : hold_kinds) holds.sample("kind", kind, n);
  Family events(out, "swarm_events_total", "counter",
                "Journal events seen since this server started (the last day's first).");
  for (const auto& [kind, n] : event_counts_) events.sample("kind", kind, static_cast<long long>(n));
  Family checks(out, "swarm_land_checks_total", "counter",
                "Land checks journaled since this server started (the last day's first), by outcome: passed, flaky "
                "(passed on a retry), failed.");
  for (const char* outcome : {"passed", "flaky", "failed"}) {
    auto it = land_checks_.find(outcome);
    checks.sample("outcome", outcome, it == land_checks_.end() ? 0LL : static_cast<long long>(it->second));
  }
  Family conflicts(out, "swarm_branch_conflicts", "gauge",
                   "Other unlanded slot branches and the onto branch each unlanded slot branch would conflict with.");
  if (branches_)
    for (const auto& row : branches_->rows)
      if (!row.git.landed) conflicts.sample("slot", row.git.slot, static_cast<long long>(row.conflicts.size()));
}

std::string ServeView::metrics() const {
  std::lock_guard lock(mu_);
  swarm::TimePoint now;
  const auto rows = sessions_now(&now);
  std::string out;
  session_metrics(out, rows);
  lease_metrics(out, now);
  queue_metrics(out, now);
  Family(out, "swarm_nats_up", "gauge", "Whether NATS answers and every watch of it works (1) or not (0).")
      .sample(nats_up() ? "1" : "0");
  char ttl[32];
  std::snprintf(ttl, sizeof ttl, "%.3f", static_cast<double>(ttl_.count()) / 1000.0);
  Family(out, "swarm_session_ttl_seconds", "gauge", "The session bucket's TTL.").sample(ttl);
  return out;
}

}  // namespace cli
