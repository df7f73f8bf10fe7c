// The journal's events of landing: `land` when the onto branch moved, or
// `land.refused`, on the slot's subject, with the land lease's fencing token.
#pragma once

#include <string_view>

#include "swarm/journal/journal.h"
#include "swarm/landing/landing.h"

namespace swarm {

Event land_event(std::string_view bucket, const LandResult& result, std::string_view task_id, const Actor& actor);
// A commit of `slot` whose branch conflicts with `overlap.with` (adr/0028).
Event overlap_event(std::string_view bucket, std::string_view slot, const Overlap& overlap, std::string_view task_id,
                    std::uint64_t token, std::uint64_t revision, const Actor& actor);

}  // namespace swarm
