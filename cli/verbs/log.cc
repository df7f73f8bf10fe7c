// swarm log: the journal of ownership acts, filtered (its --follow is the
// command line's: cli/command/log.cc).
#include "cli/verbs/log.h"

#include <iterator>

#include "cli/verbs/verbs.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/landing/landing.h"

namespace cli {

namespace {

// Every kind the journal writes (the event builders of swarm/: slots,
// leases, elections, landing, doctor, tasks and reviews): --kind takes
// these, and its help and its refusal list them, from this one table.
constexpr const char* kKinds[] = {
    "join",          "commit",     "close",      "evict",          "fix",         "sync",
    "overlap",       "hold.conflict", "session.lost", "session.expired", "lease.grant", "lease.release",
    "lease.lost",    "lease.expired",
    "elect.resign",  "elect.handover", "elect.state", "land",        "land.refused", "task.add",
    "task.claim",    "task.state", "task.edit",  "review.approve", "review.reject"};

bool is_kind(const std::string& kind) {
  for (const char* k : kKinds)
    if (kind == k) return true;
  return false;
}

std::string kind_list() {
  std::string out;
  for (const char* k : kKinds) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

// "2h", "30d", or an RFC 3339 time; bad_input naming it otherwise.
swarm::TimePoint since_of(const std::string& text) {
  if (auto t = swarm::parse_rfc3339(text)) return *t;
  try {
    return std::chrono::system_clock::now() - swarm::parse_long_duration(text);
  } catch (const swarm::Error&) {
    throw swarm::Error(swarm::Errc::bad_input, "bad --since '" + swarm::printable(text.substr(0, 40)) +
                                                    "': use a duration (90m, 2h, 30d) or an RFC 3339 time "
                                                    "(2026-11-24T03:00:00Z)");
  }
}

std::string padded(std::string text, std::size_t width) {
  if (text.size() < width) text.resize(width, ' ');
  return text;
}

// TIME KIND SUBJECT HOST TOKEN DETAIL, its trailing blanks cut.
std::string row_of(const swarm::Event& e) {
  const std::string subject = std::string(swarm::to_string(e.thing)) + "/" + swarm::printable(e.name);
  std::string line = padded(e.time ? swarm::format_rfc3339(*e.time) : "-", 24) + " " +
                     padded(swarm::printable(e.kind), 13) + " " + padded(subject, 20) + " " +
                     padded(swarm::printable(e.actor.host), 12) + " " + padded(std::to_string(e.token), 6) + " " +
                     swarm::detail_text(e.detail);
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line + "\n";
}

VerbResult log(const LogRequest& r, Context& ctx, Reporter& report) {
  auto [journal, query] = log_query(ctx, r, false);
  const auto events = journal.read(query);
  // A reader that went (`swarm log | head -1`) ends the listing, no error.
  for (const auto& e : events)
    if (!report_event(report, e)) break;
  if (events.empty() && !ctx.wants_json()) report.note("no events match");
  VerbResult out;
  out.items_only = true;
  return out;
}

}  // namespace

void require_log_sense(const LogRequest& r, bool follow) {
  if (r.last == 0 && !follow)
    throw swarm::Error(swarm::Errc::bad_input, "-n 0 prints nothing without --follow: give N of 1 or more, "
                                               "or add --follow to see only what happens next");
  if (r.last == 0 && !r.since.empty())
    throw swarm::Error(swarm::Errc::bad_input, "-n 0 prints nothing of the past, so --since has nothing to "
                                               "choose: give one of them");
  if (!r.slot.empty() && !r.lease.empty())
    throw swarm::Error(swarm::Errc::bad_input, "--slot and --lease name two journals of their own: give one");
  if (!r.onto.empty() && !r.lease.empty())
    throw swarm::Error(swarm::Errc::bad_input, "--onto finds lands, which no lease has: drop --lease");
  if (!r.onto.empty())
    for (const auto& k : r.kinds)
      if (k != "land" && k != "land.refused")
        throw swarm::Error(swarm::Errc::bad_input, "--onto finds lands and refused lands: --kind " + k +
                                                       " has no onto branch (use land or land.refused)");
}

std::pair<swarm::Journal, swarm::JournalQuery> log_query(Context& ctx, const LogRequest& r, bool follow) {
  swarm::JournalQuery query;
  std::optional<swarm::Journal> journal;
  if (!r.lease.empty()) {
    auto leases = ctx.leases(follow);
    journal.emplace(leases.journal());
    query.thing = swarm::Thing::lease;
    query.name = r.lease;
    query.buckets = {leases.bucket_name()};
  } else {
    auto s = ctx.sessions();
    journal.emplace(s.leases.journal());
    query.buckets = {s.store.bucket_name()};
    if (!r.slot.empty()) {
      query.thing = swarm::Thing::slot;
      query.name = r.slot;
    } else {
      query.buckets.insert(s.leases.bucket_name());
      query.buckets.insert(ctx.task_bucket());  // the queue's acts too
    }
  }
  query.kinds.insert(r.kinds.begin(), r.kinds.end());
  if (!r.onto.empty()) {
    query.onto = r.onto;
    if (query.kinds.empty()) query.kinds = {"land", "land.refused"};
  }
  if (!r.since.empty()) query.since = since_of(r.since);
  query.last = static_cast<std::size_t>(r.last.value_or(0));
  if (follow && !r.last && !query.since) query.last = kFollowBacklog;
  return {std::move(*journal), std::move(query)};
}

bool report_event(Reporter& report, const swarm::Event& e) { return report.item(e.to_json(), row_of(e)); }

VerbSpec log_verb() {
  auto options =
      OptionTable<LogRequest>()
          .text(&LogRequest::slot,
                {.name = "--slot", .value_name = "SLOT", .help = "Only this slot's events", .check = swarm::require_slot_name})
          .text(&LogRequest::lease, {.name = "--lease",
                                     .value_name = "NAME",
                                     .help = "Only this lease's events",
                                     .check = swarm::require_lease_name})
          .texts(&LogRequest::kinds,
                 {.name = "--kind",
                  .value_name = "KIND",
                  .help = "Only events of this kind (repeatable): " + kind_list(),
                  .choices = std::vector<std::string>(std::begin(kKinds), std::end(kKinds)),
                  .check =
                      [](const std::string& k) {
                        if (!is_kind(k))
                          throw swarm::Error(swarm::Errc::bad_input, "bad --kind '" + swarm::printable(k.substr(0, 40)) +
                                                                         "': one of " + kind_list());
                      }})
          .text(&LogRequest::since, {.name = "--since",
                                     .value_name = "DUR|TIME",
                                     .help = "Only events since then: a duration back from now (90m, 2h, 30d) or an "
                                             "RFC 3339 time",
                                     .check = [](const std::string& t) { since_of(t); }})
          .maybe_number(&LogRequest::last,
                        {.name = "--last",
                         .alias = "-n",
                         .value_name = "N",
                         .help = "Only the last N events that match (the end of a long history is read, not all of "
                                 "it); with --follow, 0 prints only what happens next",
                         .min = 0,
                         .max = 1000000})
          .text(&LogRequest::onto,
                {.name = "--onto",
                 .value_name = "BRANCH",
                 .help = "What landed on BRANCH: its lands and refused lands (every slot's)",
                 .check = [](const std::string& b) { swarm::require_branch_name(b, "--onto"); }})
          .done();
  VerbSpec v = make_verb<LogRequest>(
      {"log"}, "The journal: who held which slot or lease, when, with which token, and how it ended",
      "Rows: TIME KIND SUBJECT HOST TOKEN DETAIL (time: the server's, UTC; host: who acted; token: the session\n"
      "token or the lease's fencing token). With --json, one swarm.event.v1 object per line (JSON Lines).\n"
      "Examples:\n"
      "  swarm log --slot render -n 20\n"
      "  swarm log --lease nightly --kind lease.grant --since 24h\n"
      "  swarm log --onto main -n 10    # the last ten lands and refusals on main\n"
      "  swarm log --follow --json",
      std::move(options), [](const LogRequest& r) { require_log_sense(r, false); }, {}, log);
  v.items = true;
  return v;
}

}  // namespace cli
