// What `swarm run --land` takes from `swarm land`: one slot landed as
// `land --slot SLOT [-- CHECK…]` lands it, and its result as land prints it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/command/context.h"
#include "cli/verbs/signal_router.h"
#include "swarm/landing/landing.h"

namespace cli {

// Before any I/O: the checks a land of this workspace would run with
// `check` given are runnable (exit 2 naming the program otherwise).
void require_land_check(const Context& ctx, const std::vector<std::string>& check);
// Lands `slot` as `land --slot SLOT -- CHECK` would (the workspace's check
// first), waiting in line for ever: landed, already landed or refused;
// nullopt when a signal ended the wait. Throws what land throws (a slot not
// ready is exit 3).
std::optional<swarm::LandResult> land_slot(Context& ctx, const std::string& slot, const std::vector<std::string>& check,
                                           SignalRouter& signals);

}  // namespace cli
