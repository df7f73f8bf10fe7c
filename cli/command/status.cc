// swarm status --watch: the status verb (cli/verbs/status.cc) as a live
// view on the command line, redrawn from a KV watch.
#include <unistd.h>

#include <chrono>
#include <iostream>

#include "cli/command/context.h"
#include "cli/command/typed_command.h"
#include "cli/verbs/documents/documents.h"
#include "cli/verbs/signal_router.h"
#include "cli/verbs/status.h"
#include "cli/verbs/status_table.h"
#include "swarm/base/duration.h"
#include "swarm/base/text.h"
#include "swarm/slots/status.h"
#include "swarm/slots/status_watch.h"

namespace cli {

namespace {

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
int watch(Context& ctx, const SignalRouter& signals, const Context::Sessions& sessions, const StatusRequest& flags) {
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
      const Presentation s = terminal_presentation();
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
  auto watching = std::make_shared<bool>(false);
  CommandExtras extras;
  extras.options = [watching](CLI::App& cmd) {
    cmd.add_flag("--watch", *watching, "Keep the view live from a KV watch (--json: one line per change)");
  };
  extras.instead = [watching](const void* request, Context& ctx) -> std::optional<int> {
    if (!*watching) return std::nullopt;
    typed_verb({"status"})->validate(request);
    const SignalRouter signals;  // before any thread is made
    const auto sessions = ctx.sessions();
    return watch(ctx, signals, sessions, *static_cast<const StatusRequest*>(request));
  };
  return add_typed(app, *typed_verb({"status"}), extras);
}

}  // namespace cli
