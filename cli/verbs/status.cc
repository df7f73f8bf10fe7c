// swarm status: every session, its age (server timestamps) and state. The
// command line adds --watch (cli/command/status.cc), a live view of it.
#include <algorithm>
#include <future>
#include <set>

#include "cli/verbs/documents/documents.h"
#include "cli/verbs/status.h"
#include "cli/verbs/status_table.h"
#include "cli/verbs/verbs.h"
#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/slots/status.h"

namespace cli {

namespace {

// Up to this many records, status reads their task leases by name after
// listing them (one round trip) rather than listing every task lease
// alongside (a consumer and a thread, which cost more than 64 gets).
constexpr std::uint64_t kTaskLeasesByName = 64;

// The queue's records of the rows' task ids, one read each (a few rows).
std::vector<swarm::TaskEntry> tasks_by_id(const Context& ctx, const std::vector<swarm::SessionRow>& rows) {
  std::vector<swarm::TaskEntry> out;
  if (rows.empty()) return out;
  auto queue = ctx.queue_if_exists();
  if (!queue) return out;
  std::set<std::string> ids;
  for (const auto& row : rows)
    if (!row.corrupt && !row.task_id.empty()) ids.insert(std::string(row.task_id));
  for (const auto& id : ids)
    if (auto e = queue->get(id)) out.push_back(std::move(*e));
  return out;
}

// The names of the task leases the rows' sessions hold, each once.
std::vector<std::string> task_lease_names(const std::vector<swarm::SessionRow>& rows) {
  std::set<std::string> names;
  for (const auto& row : rows)
    if (!row.corrupt && !row.task_id.empty()) names.insert(swarm::task_lease_name(std::string(row.task_id)));
  return {names.begin(), names.end()};
}

// The rows of every session (or of the slots asked for) in `table`, aged
// on the server's clock, with their task leases and task states noted
// (the rows view the table's records: it outlives them).
void read_rows(const StatusRequest& f, Context& ctx, const Context::Sessions& sessions, swarm::SessionTable& table) {
  const auto& [store, leases] = sessions;
  // The task leases, to say where one disagrees with its session: of a few
  // sessions, read by name once they are known (one round trip); of many,
  // all of them listed alongside the sessions.
  const bool by_name = !f.slots.empty() || store.size_hint() <= kTaskLeasesByName;
  std::future<std::vector<swarm::LeaseEntry>> listed;
  if (!by_name) listed = std::async(std::launch::async, [&leases = leases] { return leases.list("task.>"); });
  auto ttl = store.ttl();
  // The server's clock is read while other requests are: beside a long
  // listing, or with the task leases read by name.
  std::future<swarm::ServerClock> clock_beside;
  if (!by_name) clock_beside = std::async(std::launch::async, [&] { return store.server_clock(); });
  if (f.slots.empty()) {
    table.reserve(static_cast<std::size_t>(store.size_hint()));
    store.for_each([&](swarm::SessionEntry&& entry) { table.add(entry); }, ctx.wants_json());
  } else {
    std::string missing;
    for (const auto& slot : std::set<std::string>(f.slots.begin(), f.slots.end())) {
      auto one = store.get(slot);
      if (!one) {
        missing += (missing.empty() ? "" : ", ") + slot;
        continue;
      }
      table.add(*one);
    }
    if (!missing.empty()) throw swarm::Error(swarm::Errc::not_found, "no session for slot " + missing);
  }
  // The queue's records of the sessions' tasks: of a few sessions read by
  // id, of many the whole queue listed beside.
  std::future<std::vector<swarm::TaskEntry>> tasks_beside;
  if (!by_name)
    tasks_beside = std::async(std::launch::async, [&ctx] {
      auto queue = ctx.queue_if_exists();
      return queue ? queue->list() : std::vector<swarm::TaskEntry>{};
    });
  std::optional<swarm::PendingServerClock> clock_together;
  if (by_name && !table.rows().empty()) clock_together.emplace(store.bucket());
  const std::vector<swarm::LeaseEntry> task_leases =
      by_name ? leases.get_together(task_lease_names(table.rows())) : listed.get();
  // No record, no age to read: no round trip for the clock.
  const swarm::ServerClock clock = clock_beside.valid() ? clock_beside.get()
                                   : clock_together     ? clock_together->get()
                                                        : swarm::ServerClock{};
  const auto now = clock_beside.valid() || clock_together ? clock.now() : swarm::system_clock()();
  // A session renewed while the listing ran may have come twice.
  table.finish(f.slots.empty() ? store.revision_at_open() : 0, ttl, now, swarm::observer_margin(ttl, clock.uncertainty));
  table.note_task_leases(task_leases, now);
  // The task states are an extra: a queue that cannot be read leaves them out.
  try {
    table.note_task_states(tasks_beside.valid() ? tasks_beside.get() : tasks_by_id(ctx, table.rows()));
  } catch (const std::exception& e) {
    swarm::log::info("the task states were left out of status: {}", e.what());
  }
}

VerbResult status(const StatusRequest& f, Context& ctx, Reporter&) {
  const auto sessions = ctx.sessions();
  swarm::SessionTable table(ctx.me(), ctx.wants_json());
  read_rows(f, ctx, sessions, table);
  const auto rows = filtered(table.rows(), f);
  VerbResult out;
  // Of many sessions each form costs: only the one asked for is made.
  if (ctx.wants_json()) {
    out.rendered = status_document(sessions.store.bucket_name(), sessions.store.ttl(), rows);
  } else {
    const Presentation& p = ctx.presentation();
    out.text = cli::table(rows, {p.columns, p.color});
    out.text_is_safe = true;
  }
  return out;
}

}  // namespace

std::vector<swarm::SessionRow> filtered(const std::vector<swarm::SessionRow>& rows, const StatusRequest& f) {
  if (f.states.empty() && f.hosts.empty() && f.slots.size() < 2) return rows;
  std::vector<swarm::SessionRow> out;
  for (const auto& row : rows) {
    if (f.slots.size() > 1 && std::find(f.slots.begin(), f.slots.end(), row.slot) == f.slots.end()) continue;
    const std::string_view state = swarm::to_string(row.state);
    if (!f.states.empty() && std::find(f.states.begin(), f.states.end(), state) == f.states.end()) continue;
    if (!f.hosts.empty() && std::find(f.hosts.begin(), f.hosts.end(), row.host) == f.hosts.end()) continue;
    out.push_back(row);
  }
  return out;
}

VerbSpec status_verb() {
  auto options =
      OptionTable<StatusRequest>()
          .texts(&StatusRequest::slots, {.name = "--slot", .value_name = "SLOT",
                                         .help = "Only this slot (repeatable; exit 4 when one has no record)",
                                         .check = swarm::require_slot_name})
          .texts(&StatusRequest::states, {.name = "--state", .value_name = "STATE",
                                          .help = "Only sessions in this state (repeatable): fresh, late, stale, "
                                                  "dead, corrupt",
                                          .choices = {"fresh", "late", "stale", "dead", "corrupt"}})
          .texts(&StatusRequest::hosts, {.name = "--host", .value_name = "HOST",
                                         .help = "Only sessions of this host (repeatable)"})
          .done();
  return make_verb<StatusRequest>(
      {"status"}, "Every session: slot, task, host, age, state (fresh/late/stale/corrupt)",
      "Examples:\n"
      "  swarm status\n"
      "  swarm status --slot render --json\n"
      "  swarm status --watch          # live; Ctrl-C ends it\n"
      "  swarm status --state stale --state late\n"
      "Ages are read on the server's clock: fresh < TTL/3 <= late < 2*TTL/3 <= stale.\n"
      "On a terminal the table fits its width (task and host cut with ..., never the slot), states are\n"
      "coloured (not with NO_COLOR set), and --watch draws in place on the alternate screen.\n"
      "Slots sort naturally (agent-2 before agent-10); a summary line ends the table.",
      std::move(options), {}, {}, status);
}

}  // namespace cli
