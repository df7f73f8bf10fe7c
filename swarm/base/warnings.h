// Where the library's warnings go: what a verb cannot return because it
// happens while it waits or in the background (waiting for another swarm
// process, restarting the embedded server, a lease renewal that failed and
// is tried again). One sink the program gives; until it gives one, spdlog's
// default logger. A warning about the result of a call is returned with it
// instead (CommitResult::warnings, CloseResult::warnings).
#pragma once

#include <functional>
#include <string>

namespace swarm {

using WarningSink = std::function<void(const std::string&)>;

// Replaces the sink (process-wide; set it once, before any call that may
// warn). An empty sink restores the default.
void set_warning_sink(WarningSink sink);

// Says `message` through the sink. Safe from any thread.
void warn(const std::string& message);

}  // namespace swarm
