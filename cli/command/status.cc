// swarm status: every session, its age (server timestamps) and state.
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <climits>
#include <chrono>
#include <future>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "cli/command/context.h"
#include "swarm/base/log.h"
#include "cli/documents/documents.h"
#include "cli/command/signal_router.h"
#include "cli/command/status_table.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/slots/status.h"
#include "swarm/slots/status_watch.h"

namespace cli {

namespace {

struct StatusFlags {
  std::vector<std::string> slots;  // --slot: only these
  bool watch = false;
  std::vector<std::string> states;  // --state: only these
  std::vector<std::string> hosts;   // --host: only these
};

// The sessions the filters keep (all of them when there are none).
std::vector<swarm::SessionRow> filtered(const std::vector<swarm::SessionRow>& rows, const StatusFlags& f) {
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

// Up to this many records, status reads their task leases by name after
// listing them (one round trip) rather than listing every task lease
// alongside (a consumer and a thread, which cost more than 64 gets).
constexpr std::uint64_t kTaskLeasesByName = 64;

// The names of the task leases the rows' sessions hold, each once.
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

std::vector<std::string> task_lease_names(const std::vector<swarm::SessionRow>& rows) {
  std::set<std::string> names;
  for (const auto& row : rows)
    if (!row.corrupt && !row.task_id.empty()) names.insert(swarm::task_lease_name(std::string(row.task_id)));
  return {names.begin(), names.end()};
}

// The terminal stdout is, if it is one: its size; else $COLUMNS (and
// $LINES) when set; else 0 (as wide and as long as it takes).
struct Screen {
  std::size_t columns = 0;
  std::size_t lines = 0;
  bool tty = false;
  bool color = false;
};

Screen screen() {
  Screen out;
  out.tty = isatty(STDOUT_FILENO) != 0;
  winsize size{};
  if (out.tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
    out.columns = size.ws_col;
    out.lines = size.ws_row;
  }
  auto number = [](const char* name) -> std::size_t {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0' || std::strlen(text) > 5 || std::strspn(text, "0123456789") != std::strlen(text)) return 0;
    return static_cast<std::size_t>(std::atoi(text));
  };
  if (out.columns == 0) out.columns = number("COLUMNS");
  if (out.lines == 0) out.lines = number("LINES");
  const char* term = std::getenv("TERM");
  out.color = out.tty && std::getenv("NO_COLOR") == nullptr && !(term != nullptr && std::string_view(term) == "dumb");
  return out;
}

// The alternate screen of a terminal while --watch draws on it; the
// terminal as it was (its screen, its cursor) when it goes, however the
// loop ends (a signal ends the loop; an error unwinds through here).
class AlternateScreen {
 public:
  explicit AlternateScreen(bool on) : on_(on) {
    if (on_) std::cout << "\033[?1049h\033[?25l" << std::flush;
  }
  ~AlternateScreen() {
    if (on_) std::cout << "\033[?25h\033[?1049l" << std::flush;
  }
  AlternateScreen(const AlternateScreen&) = delete;
  AlternateScreen& operator=(const AlternateScreen&) = delete;

 private:
  bool on_;
};

// Redraws the live view on each change (and each second, so ages tick), from
// the library's feed of a KV watch: no polling of the bucket. Ends cleanly
// on SIGINT, SIGTERM or SIGHUP (exit 0).
int watch(Context& ctx, const SignalRouter& signals, const Context::Sessions& sessions, const StatusFlags& flags) {
  using namespace std::chrono_literals;
  const bool json = ctx.out().json();
  const bool tty = isatty(STDOUT_FILENO) != 0 && !json;
  // One slot is watched alone; several are filtered from the whole bucket's watch.
  // The server's expiries it hears are journaled (every watcher writes the
  // same message; the journal keeps one).
  swarm::StatusWatch feed(sessions.store, ctx.me(), flags.slots.size() == 1 ? flags.slots.front() : std::string(),
                          json, sessions.leases.journal());
  const AlternateScreen alternate(tty);
  auto last_draw = std::chrono::steady_clock::now() - 1h;

  auto draw = [&](const std::vector<swarm::SessionRow>& all, const std::vector<swarm::LiveSessions::Change>& changes) {
    last_draw = std::chrono::steady_clock::now();
    const std::vector<swarm::SessionRow> rows = filtered(all, flags);
    if (json) {
      // One line per change; the first line is the snapshot.
      auto emit = [&](const swarm::LiveSessions::Change* change) {
        swarm::Json c;
        if (change) {
          c = swarm::Json::object();
          c.set("event", swarm::to_string(change->kind)).set("slot", change->slot);
          // An expiry says who judged it: the server's marker, or this view's clock.
          if (change->kind == swarm::LiveSessions::Change::Kind::expired)
            c.set("by", change->by_server ? "server" : "clock").set("at", swarm::format_rfc3339(change->at));
        }
        ctx.out().rendered(status_json(feed.bucket_name(), feed.ttl(), rows, true, change ? &c : nullptr));
      };
      if (changes.empty()) emit(nullptr);
      for (const auto& c : changes) emit(&c);
      return;
    }
    if (tty) {
      // Drawn in place: home, each line cleared to its end, the rest of the
      // screen cleared; at most what fits (the summary says how many more).
      const Screen s = screen();
      std::vector<swarm::SessionRow> shown = rows;
      const std::size_t room = s.lines > 6 ? s.lines - 6 : 1;
      const std::size_t more = shown.size() > room ? shown.size() - room : 0;
      shown.resize(shown.size() - more);
      std::string text = "swarm status --watch   (" + feed.bucket_name() + ", TTL " + swarm::format_duration(feed.ttl()) +
                         "; Ctrl-C to stop)\n\n" + table(shown, {s.columns, s.color, false});
      // One summary, of every row the filters keep, shown or not.
      text += (more != 0 ? "... and " + std::to_string(more) + " more; " : std::string()) + summary(rows) + "\n";
      std::string framed = "\033[H";
      for (std::size_t at = 0; at < text.size();) {
        const auto end = text.find('\n', at);
        framed += text.substr(at, end - at) + "\033[K\n";
        at = end == std::string::npos ? text.size() : end + 1;
      }
      std::cout << framed << "\033[J" << std::flush;
    } else {
      const std::string text = table(rows);
      std::cout << "-- " << swarm::format_rfc3339(std::chrono::system_clock::now()) << "\n" << text << std::flush;
    }
  };

  while (signals.received() == 0) {
    if (auto update = feed.next(250ms)) {
      draw(update->view.rows(), update->changes);
    } else if (tty && !json && feed.caught_up() && std::chrono::steady_clock::now() - last_draw >= 1s) {
      draw(feed.view().rows(), {});
    }
  }
  feed.stop();
  return 0;
}

}  // namespace

Verb add_status(CLI::App& app) {
  auto flags = std::make_shared<StatusFlags>();
  CLI::App* cmd = app.add_subcommand("status", "Every session: slot, task, host, age, state (fresh/late/stale/corrupt)");
  cmd->add_flag("--watch", flags->watch, "Keep the view live from a KV watch (--json: one line per change)");
  cmd->add_option("--slot", flags->slots, "Only this slot (repeatable; exit 4 when one has no record)")
      ->option_text("SLOT")
      ->check(slot_name_validator());
  cmd->add_option("--state", flags->states, "Only sessions in this state (repeatable): fresh, late, stale, dead, corrupt")
      ->option_text("STATE")
      ->check(CLI::IsMember({"fresh", "late", "stale", "dead", "corrupt"}));
  cmd->add_option("--host", flags->hosts, "Only sessions of this host (repeatable)")->option_text("HOST");
  cmd->footer(
      "Examples:\n"
      "  swarm status\n"
      "  swarm status --slot render --json\n"
      "  swarm status --watch          # live; Ctrl-C ends it\n"
      "  swarm status --state stale --state late\n"
      "Ages are read on the server's clock: fresh < TTL/3 <= late < 2*TTL/3 <= stale.\n"
      "On a terminal the table fits its width (task and host cut with ..., never the slot), states are\n"
      "coloured (not with NO_COLOR set), and --watch draws in place on the alternate screen.\n"
      "Slots sort naturally (agent-2 before agent-10); a summary line ends the table.");
  return {cmd, [flags](Context& ctx) {
            for (const auto& slot : flags->slots) swarm::require_slot_name(slot);
            if (flags->watch) {
              const SignalRouter signals;  // before any thread is made
              const auto sessions = ctx.sessions();
              return watch(ctx, signals, sessions, *flags);
            }
            const auto [store, leases] = ctx.sessions();
            // The task leases, to say where one disagrees with its session:
            // of a few sessions, read by name once they are known (one round
            // trip); of many, all of them listed alongside the sessions.
            const bool by_name = !flags->slots.empty() || store.size_hint() <= kTaskLeasesByName;
            std::future<std::vector<swarm::LeaseEntry>> listed;
            if (!by_name) listed = std::async(std::launch::async, [&leases = leases] { return leases.list("task.>"); });
            auto ttl = store.ttl();
            // The server's clock is read while other requests are: beside a
            // long listing, or with the task leases read by name.
            std::future<swarm::ServerClock> clock_beside;
            if (!by_name) clock_beside = std::async(std::launch::async, [&] { return store.server_clock(); });
            swarm::SessionTable table(ctx.me(), ctx.out().json());
            if (flags->slots.empty()) {
              table.reserve(static_cast<std::size_t>(store.size_hint()));
              store.for_each([&](swarm::SessionEntry&& entry) { table.add(entry); }, ctx.out().json());
            } else {
              std::string missing;
              for (const auto& slot : std::set<std::string>(flags->slots.begin(), flags->slots.end())) {
                auto one = store.get(slot);
                if (!one) {
                  missing += (missing.empty() ? "" : ", ") + slot;
                  continue;
                }
                table.add(*one);
              }
              if (!missing.empty()) throw swarm::Error(swarm::Errc::not_found, "no session for slot " + missing);
            }
            // The queue's records of the sessions' tasks: of a few sessions
            // read by id, of many the whole queue listed beside.
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
            table.finish(flags->slots.empty() ? store.revision_at_open() : 0, ttl, now,
                         swarm::observer_margin(ttl, clock.uncertainty));
            table.note_task_leases(task_leases, now);
            // The task states are an extra: a queue that cannot be read leaves them out.
            try {
              table.note_task_states(tasks_beside.valid() ? tasks_beside.get() : tasks_by_id(ctx, table.rows()));
            } catch (const std::exception& e) {
              swarm::log::info("the task states were left out of status: {}", e.what());
            }
            const auto rows = filtered(table.rows(), *flags);
            if (ctx.out().json()) {
              write_status_json(std::cout, store.bucket_name(), ttl, rows);
            } else {
              const Screen s = screen();
              write_table(std::cout, rows, {s.columns, s.color});
            }
            return 0;
          }};
}

}  // namespace cli
