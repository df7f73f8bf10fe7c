// swarm log --follow: the log verb (cli/verbs/log.cc) kept printing each
// act as it happens, until Ctrl-C; the command line's own.
#include <algorithm>

#include "cli/command/context.h"
#include "cli/command/typed_command.h"
#include "cli/verbs/log.h"
#include "cli/verbs/signal_router.h"
#include "swarm/base/error.h"

namespace cli {

namespace {

constexpr std::chrono::milliseconds kFollowPoll{250};

int follow(Context& ctx, const SignalRouter& signals, const LogRequest& r) {
  auto [journal, query] = log_query(ctx, r, true);
  // Where a follow starts: after what the stream held before the read.
  auto state = journal.state();
  if (!state) throw swarm::Error(swarm::Errc::not_bootstrapped, "no journal: `swarm up` makes it");
  const std::uint64_t end_before = state->last_seq;
  PrintingReporter report(ctx.out());
  std::uint64_t printed = 0;
  // -n 0: nothing of the past, only what comes after end_before.
  if (r.last != 0)
    for (const auto& e : journal.read(query)) {
      report_event(report, e);
      printed = std::max(printed, e.seq);
    }
  auto events = journal.follow(query, end_before);
  while (signals.received() == 0) {
    auto e = events.next(kFollowPoll);
    if (e && e->seq > printed) report_event(report, *e);
  }
  return 0;
}

}  // namespace

Verb add_log(CLI::App& app) {
  auto following = std::make_shared<bool>(false);
  CommandExtras extras;
  extras.options = [following](CLI::App& cmd) {
    cmd.add_flag("-f,--follow", *following,
                 "Then print each act as it happens, until Ctrl-C (with neither -n nor --since: the last 10 first)");
  };
  extras.instead = [following](const void* request, Context& ctx) -> std::optional<int> {
    if (!*following) return std::nullopt;
    require_log_sense(*static_cast<const LogRequest*>(request), true);
    const SignalRouter signals;  // before any thread is made
    return follow(ctx, signals, *static_cast<const LogRequest*>(request));
  };
  return add_typed(app, *typed_verb({"log"}), extras);
}

}  // namespace cli
