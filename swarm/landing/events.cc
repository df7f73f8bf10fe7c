#include "swarm/landing/events.h"

namespace swarm {

Event land_event(std::string_view bucket, const LandResult& result, std::string_view task_id, const Actor& actor) {
  const bool refused = result.outcome == LandResult::Outcome::refused;
  Event e = slot_event(refused ? "land.refused" : "land", bucket, result.slot, actor, task_id, result.token,
                       result.token);
  e.detail.set("onto", result.onto).set("from", result.from);
  if (!result.head.empty()) e.detail.set("head", result.head);
  if (refused) {
    e.detail.set("reason", result.reason);
    if (result.reason == "conflict" || result.reason == "hold") {
      e.detail.set("paths", Json::strings(result.paths));
    } else {
      e.detail.set("status", static_cast<std::int64_t>(result.check_status));
    }
  } else {
    e.detail.set("to", result.to).set("how", result.kind);
  }
  if (result.forced) e.detail.set("forced", true);
  if (result.no_check) e.detail.set("no_check", true);
  if (!result.check.empty()) e.detail.set("check", result.check).set("check_attempts", result.check_attempts);
  if (result.check == "flaky") e.detail.set("flaky", true);
  if (!result.batch.empty()) e.detail.set("batch", result.batch);
  if (!result.convicted_by.empty()) {
    Json checks = Json::array();
    for (const auto& c : result.convicted_by) {
      Json one = Json::object();
      one.set("slots", Json::strings(c.slots)).set("status", static_cast<std::int64_t>(c.status));
      checks.push(std::move(one));
    }
    e.detail.set("convicted_by", std::move(checks));
  }
  return e;
}

Event overlap_event(std::string_view bucket, std::string_view slot, const Overlap& overlap, std::string_view task_id,
                    std::uint64_t token, std::uint64_t revision, const Actor& actor) {
  Event e = slot_event("overlap", bucket, slot, actor, task_id, token, revision);
  e.detail.set("with", overlap.with).set("paths", Json::strings(overlap.paths));
  return e;
}

}  // namespace swarm
