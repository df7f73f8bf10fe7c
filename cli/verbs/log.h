// swarm log (cli/verbs/log.cc): the journal's request, and what a follow
// of it needs. The command line's --follow (cli/command/log.cc) reads the
// same request, then keeps printing as acts happen; no other front end
// follows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/verbs/verb.h"
#include "swarm/journal/journal.h"

namespace cli {

struct LogRequest {
  std::string slot;
  std::string lease;
  std::vector<std::string> kinds;
  std::string since;
  std::optional<std::int64_t> last;
  std::string onto;
};

// With --follow and neither -n nor --since, the last this many first (as tail -f).
inline constexpr std::size_t kFollowBacklog = 10;

// The journal to read, and what of it the request asks for (`follow`:
// the connection lives on, and a follow's backlog).
std::pair<swarm::Journal, swarm::JournalQuery> log_query(Context& ctx, const LogRequest& r, bool follow);
// Bad combinations, before any I/O; `follow`: -n 0 then means only what
// happens next, which without it prints nothing (exit 2).
void require_log_sense(const LogRequest& r, bool follow);
// One event as an item: its swarm.event.v1 document, and its row
// (TIME KIND SUBJECT HOST TOKEN DETAIL).
bool report_event(Reporter& report, const swarm::Event& e);

}  // namespace cli
