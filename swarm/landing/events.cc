#include "swarm/landing/events.h"

namespace swarm {

Event land_event(std::string_view bucket, const LandResult& result, std::string_view task_id, const Actor& actor) {
  const bool refused = result.outcome == LandResult::Outcome::refused;
  Event e = slot_event(refused ? "land.refused" : "land", bucket, result.slot, actor, task_id, result.token,
                       result.token);
  e.detail.set("onto", result.onto).set("from", result.from);
  if (refused) {
    e.detail.set("reason", result.reason);
    if (result.reason == "conflict") {
      e.detail.set("paths", Json::strings(result.paths));
    } else {
      e.detail.set("status", static_cast<std::int64_t>(result.check_status));
    }
  } else {
    e.detail.set("to", result.to).set("how", result.kind);
  }
  if (result.forced) e.detail.set("forced", true);
  return e;
}

}  // namespace swarm
