// swarm serve: a read-only view of the workspace over HTTP (metrics, a live
// dashboard, the verbs' JSON). Its server links an HTTP library that no
// other verb needs, so it is its own program, swarm-serve, in swarm's
// private folder; `swarm serve` runs it with the same arguments (adr/0022).
#pragma once

#include "cli/verbs/context.h"
#include "cli/verbs/serve_request.h"

namespace cli {

// The real server (swarm-serve only): serves until SIGINT or SIGTERM.
int run_serve(Context& ctx, const ServeFlags& flags);

}  // namespace cli
