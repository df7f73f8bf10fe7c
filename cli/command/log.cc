// swarm log: the journal of ownership acts, filtered, once or as they happen.
#include <cstdio>
#include <iterator>

#include "cli/command/context.h"
#include "cli/verbs/signal_router.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/journal/journal.h"

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

// With --follow and neither -n nor --since, the last this many first (as tail -f).
constexpr std::size_t kFollowBacklog = 10;
constexpr std::chrono::milliseconds kFollowPoll{250};

struct LogFlags {
  std::string slot;
  std::string lease;
  std::vector<std::string> kinds;
  std::string since;
  std::optional<std::size_t> last;
  bool follow = false;
  std::string onto;
};

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

// TIME KIND SUBJECT HOST TOKEN DETAIL
std::string row_of(const swarm::Event& e) {
  const std::string subject = std::string(swarm::to_string(e.thing)) + "/" + swarm::printable(e.name);
  return padded(e.time ? swarm::format_rfc3339(*e.time) : "-", 24) + " " + padded(swarm::printable(e.kind), 13) + " " +
         padded(subject, 20) + " " + padded(swarm::printable(e.actor.host), 12) + " " +
         padded(std::to_string(e.token), 6) + " " + swarm::detail_text(e.detail);
}

void print(const Context& ctx, const swarm::Event& e) {
  if (ctx.out().json()) {
    ctx.out().json_line(e.to_json());
  } else {
    std::string line = row_of(e);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::fputs((line + "\n").c_str(), stdout);
    std::fflush(stdout);
  }
}

// Bad combinations, before any I/O.
void require_sense(const LogFlags& f) {
  if (f.last == std::size_t(0) && !f.follow)
    throw swarm::Error(swarm::Errc::bad_input, "-n 0 prints nothing without --follow: give N of 1 or more, "
                                               "or add --follow to see only what happens next");
  if (f.last == std::size_t(0) && !f.since.empty())
    throw swarm::Error(swarm::Errc::bad_input, "-n 0 prints nothing of the past, so --since has nothing to "
                                               "choose: give one of them");
  if (!f.onto.empty())
    for (const auto& k : f.kinds)
      if (k != "land" && k != "land.refused")
        throw swarm::Error(swarm::Errc::bad_input, "--onto finds lands and refused lands: --kind " + k +
                                                       " has no onto branch (use land or land.refused)");
}

// The journal to read, and what of it the flags ask for.
std::pair<swarm::Journal, swarm::JournalQuery> query_of(Context& ctx, const LogFlags& f) {
  swarm::JournalQuery query;
  std::optional<swarm::Journal> journal;
  if (!f.lease.empty()) {
    auto leases = ctx.leases(f.follow);
    journal.emplace(leases.journal());
    query.thing = swarm::Thing::lease;
    query.name = f.lease;
    query.buckets = {leases.bucket_name()};
  } else {
    auto s = ctx.sessions();
    journal.emplace(s.leases.journal());
    query.buckets = {s.store.bucket_name()};
    if (!f.slot.empty()) {
      query.thing = swarm::Thing::slot;
      query.name = f.slot;
    } else {
      query.buckets.insert(s.leases.bucket_name());
      query.buckets.insert(ctx.task_bucket());  // the queue's acts too
    }
  }
  query.kinds.insert(f.kinds.begin(), f.kinds.end());
  if (!f.onto.empty()) {
    query.onto = f.onto;
    if (query.kinds.empty()) query.kinds = {"land", "land.refused"};
  }
  if (!f.since.empty()) query.since = since_of(f.since);
  query.last = f.last.value_or(0);
  if (f.follow && !f.last && !query.since) query.last = kFollowBacklog;
  return {std::move(*journal), std::move(query)};
}

int run_log(Context& ctx, const LogFlags& f) {
  require_sense(f);
  std::optional<SignalRouter> signals;
  if (f.follow) signals.emplace();  // before any thread is made
  auto [journal, query] = query_of(ctx, f);
  // Where a follow starts: after what the stream held before the read.
  std::uint64_t end_before = 0;
  if (f.follow) {
    auto state = journal.state();
    if (!state) throw swarm::Error(swarm::Errc::not_bootstrapped, "no journal: `swarm up` makes it");
    end_before = state->last_seq;
  }
  std::uint64_t printed = 0;
  // -f -n 0: nothing of the past, only what comes after end_before.
  const auto events = f.last == std::size_t(0) ? std::vector<swarm::Event>{} : journal.read(query);
  for (const auto& e : events) {
    print(ctx, e);
    printed = std::max(printed, e.seq);
  }
  if (!f.follow) {
    if (events.empty() && !ctx.out().json()) ctx.out().note("no events match");
    return 0;
  }
  auto follow = journal.follow(query, end_before);
  while (signals->received() == 0) {
    auto e = follow.next(kFollowPoll);
    if (e && e->seq > printed) print(ctx, *e);
  }
  return 0;
}

}  // namespace

Verb add_log(CLI::App& app) {
  auto flags = std::make_shared<LogFlags>();
  CLI::App* cmd = app.add_subcommand(
      "log", "The journal: who held which slot or lease, when, with which token, and how it ended");
  auto* slot = cmd->add_option("--slot", flags->slot, "Only this slot's events")
                   ->option_text("SLOT")
                   ->check(slot_name_validator());
  cmd->add_option("--lease", flags->lease, "Only this lease's events")
      ->option_text("NAME")
      ->check(validator_of(swarm::require_lease_name, "NAME"))
      ->excludes(slot);
  cmd->add_option("--kind", flags->kinds, "Only events of this kind (repeatable): " + kind_list())
      ->option_text("KIND")
      ->check(validator_of(
          [](const std::string& k) {
            if (!is_kind(k))
              throw swarm::Error(swarm::Errc::bad_input,
                                 "bad --kind '" + swarm::printable(k.substr(0, 40)) + "': one of " + kind_list());
          },
          "KIND"))
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(kKinds), std::end(kKinds))));  // for completion
  cmd->add_option("--since", flags->since, "Only events since then: a duration back from now (90m, 2h, 30d) or an "
                                           "RFC 3339 time")
      ->option_text("DUR|TIME")
      ->check(validator_of([](const std::string& t) { since_of(t); }, "DUR|TIME"));
  cmd->add_option("-n,--last", flags->last, "Only the last N events that match (the end of a long history is "
                                            "read, not all of it); with --follow, 0 prints only what happens next")
      ->option_text("N")
      ->transform(decimal_in(0, 1000000));
  cmd->add_option("--onto", flags->onto, "What landed on BRANCH: its lands and refused lands (every slot's)")
      ->option_text("BRANCH")
      ->check(validator_of([](const std::string& b) { swarm::require_branch_name(b, "--onto"); }, "BRANCH"))
      ->excludes("--lease");
  cmd->add_flag("-f,--follow", flags->follow,
                "Then print each act as it happens, until Ctrl-C (with neither -n nor --since: the last 10 first)");
  cmd->footer(
      "Rows: TIME KIND SUBJECT HOST TOKEN DETAIL (time: the server's, UTC; host: who acted; token: the session\n"
      "token or the lease's fencing token). With --json, one swarm.event.v1 object per line (JSON Lines).\n"
      "Examples:\n"
      "  swarm log --slot render -n 20\n"
      "  swarm log --lease nightly --kind lease.grant --since 24h\n"
      "  swarm log --onto main -n 10    # the last ten lands and refusals on main\n"
      "  swarm log --follow --json");
  return {cmd, [flags](Context& ctx) { return run_log(ctx, *flags); }};
}

}  // namespace cli
