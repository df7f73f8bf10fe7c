// swarm lease show NAME and swarm lease list: leases as they stand, as a
// table or as swarm.lease.v1. (The rest of `lease`, what takes or lets go of
// one, is the command line's: cli/command/lease.cc.)
#include <algorithm>

#include "cli/verbs/documents/documents.h"
#include "cli/verbs/output.h"
#include "cli/verbs/verbs.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/lease/lease.h"
#include "swarm/lease/semaphore.h"

namespace cli {

namespace {

struct LeaseShowRequest {
  std::string name;
};

struct LeaseListRequest {};

std::string age_text(std::chrono::milliseconds d) {
  return swarm::format_duration(std::chrono::duration_cast<std::chrono::seconds>(d));
}

// Record text is escaped: a holder with control characters cannot drive the terminal.
std::string table(const std::vector<swarm::LeaseEntry>& entries, const std::map<std::string, int>& waiting,
                  swarm::TimePoint now) {
  if (entries.empty()) return "no leases\n";
  std::vector<std::vector<std::string>> rows = {{"NAME", "STATE", "HOLDER", "HOST", "TOKEN", "AGE", "LEFT", "WAITERS"}};
  for (const auto& e : entries) {
    auto s = swarm::standing_of(e, now);
    auto w = waiting.find(e.name);
    if (e.corrupt())
      rows.push_back({swarm::printable(e.name), "corrupt: " + swarm::printable(e.corrupt_reason), "-", "-", "-",
                      age_text(s.age), "-", "-"});
    else
      rows.push_back({swarm::printable(e.name), std::string(swarm::to_string(s.state)),
                      swarm::printable(e.record->holder), swarm::printable(e.record->host),
                      std::to_string(e.token()), age_text(s.age), age_text(s.left),
                      std::to_string(w == waiting.end() ? 0 : w->second)});
  }
  return aligned(rows);
}

// The semaphores of a listing, as a table ("" when there are none).
std::string semaphore_table(const std::vector<swarm::SemaphoreSummary>& semaphores) {
  if (semaphores.empty()) return {};
  std::vector<std::vector<std::string>> rows = {{"SEMAPHORE", "LIMIT", "HELD", "WAITING"}};
  for (const auto& s : semaphores)
    rows.push_back({swarm::printable(s.name), std::to_string(s.limit), std::to_string(s.held),
                    std::to_string(s.waiters)});
  return "\n" + aligned(rows);
}

// An election's candidates: each one's priority and minimum term, and how long it has led.
std::string candidates_text(const std::vector<swarm::LeaseEntry>& entries, swarm::TimePoint now) {
  std::string text;
  for (const auto& e : entries) {
    if (e.corrupt() || (e.record->priority == 0 && e.record->min_term.count() == 0)) continue;
    text += swarm::printable(e.name) + ": priority " + std::to_string(e.record->priority);
    if (e.record->min_term.count() > 0) text += ", minimum term " + swarm::format_duration(e.record->min_term);
    if (e.record->acquired_at)
      text += ", leading for " + swarm::format_duration(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::max(now - *e.record->acquired_at, swarm::TimePoint::duration(0))));
    text += "\n";
  }
  return text;
}

// A semaphore's name shown: its limit, its permits and its line; nullopt
// when `name` is no semaphore.
std::optional<VerbResult> semaphore_shown(const Context& ctx, const swarm::LeaseStore& store, const std::string& name) {
  std::optional<int> limit;
  try {
    limit = swarm::Semaphore(store, name).limit();
  } catch (const swarm::Error& e) {
    if (e.kind() != swarm::Errc::bad_input) throw;  // a name too long for a semaphore's permits: none
  }
  if (!limit) return std::nullopt;
  std::vector<swarm::LeaseEntry> permits;
  for (auto& e : store.list(name + ".permit.*"))
    if (swarm::permit_of(e.name)) permits.push_back(std::move(e));
  std::sort(permits.begin(), permits.end(), [](const auto& a, const auto& b) {
    return *swarm::permit_of(a.name) < *swarm::permit_of(b.name);
  });
  const auto now = store.server_clock().now();
  const std::string gate = swarm::gate_lease(name);
  std::vector<swarm::LeaseEntry> counted = permits;
  if (auto at_gate = store.get(gate)) counted.push_back(std::move(*at_gate));
  const auto summary = swarm::summarize_semaphores({{name, *limit}}, counted,
                                                   store.waiting(gate, ctx.me().host, ctx.me().host_id), now)
                           .front();
  VerbResult out;
  out.doc = leases_of(permits, {}, now);
  out.doc.set("semaphore", semaphore_json(summary));
  out.text = "semaphore " + name + ": limit " + std::to_string(summary.limit) + ", " + std::to_string(summary.held) +
             " held, " + std::to_string(summary.waiters) + " waiting\n" + table(permits, {}, now);
  return out;
}

VerbResult lease_show(const LeaseShowRequest& r, Context& ctx, Reporter&) {
  const auto store = ctx.leases();
  auto entry = store.get(r.name);
  if (!entry) {
    if (auto shown = semaphore_shown(ctx, store, r.name)) return std::move(*shown);
    throw swarm::Error(swarm::Errc::not_found, "no lease " + r.name);
  }
  const std::vector<swarm::LeaseEntry> entries = {*entry};
  const auto waiting = store.waiting(r.name, ctx.me().host, ctx.me().host_id);
  const auto now = store.server_clock().now();
  VerbResult out;
  out.doc = leases_of(entries, waiting, now);
  out.text = table(entries, waiting, now) + candidates_text(entries, now);
  return out;
}

VerbResult lease_list(const LeaseListRequest&, Context& ctx, Reporter&) {
  const auto store = ctx.leases();
  auto entries = store.list();
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  const auto waiting = store.waiting({}, ctx.me().host, ctx.me().host_id);
  const auto now = store.server_clock().now();
  const auto semaphores = swarm::summarize_semaphores(swarm::semaphore_limits(store), entries, waiting, now);
  VerbResult out;
  out.doc = listing_of(entries, waiting, semaphores, now);
  out.text = table(entries, waiting, now) + semaphore_table(semaphores);
  return out;
}

}  // namespace

OptionSpec lease_name_option(std::string help) {
  return {.name = "name",
          .value_name = "NAME",
          .help = std::move(help),
          .required = true,
          .check = swarm::require_lease_name};
}

VerbSpec lease_show_verb() {
  auto options = OptionTable<LeaseShowRequest>()
                     .text(&LeaseShowRequest::name, lease_name_option("Lease name"))
                     .done();
  return make_verb<LeaseShowRequest>(
      {"lease", "show"}, "One lease: state, holder, token, age, time left, waiters",
      "Example:\n  swarm lease show merge-main --json\n"
      "A semaphore's name shows its limit, its permits (NAME.permit.K) and how many wait.",
      std::move(options), {}, {}, lease_show);
}

VerbSpec lease_list_verb() {
  return make_verb<LeaseListRequest>(
      {"lease", "list"},
      "Every lease: state, holder, token, age, time left, waiters; then each semaphore's limit, permits held and "
      "waiters",
      "Example:\n  swarm lease list", OptionTable<LeaseListRequest>().done(), {}, {}, lease_list);
}

}  // namespace cli
