// swarm.holds.v1: the holds as `swarm holds --json`, /api/holds and the
// holds tool hand them out.
#include "cli/verbs/documents/documents.h"
#include "swarm/holds/hold_store.h"

namespace cli {

namespace {

double seconds(std::chrono::milliseconds d) { return static_cast<double>(d.count()) / 1000.0; }

}  // namespace

swarm::Json hold_rows(const std::vector<swarm::LeaseEntry>& holds, swarm::TimePoint server_now) {
  swarm::Json list = swarm::Json::array();
  for (const auto& e : holds) {
    const auto standing = swarm::standing_of(e, server_now);
    swarm::Json one = swarm::Json::object();
    one.set("name", e.name);
    if (e.corrupt()) {
      one.set("state", "corrupt").set("error", e.corrupt_reason);
    } else {
      const swarm::LeaseRecord& r = *e.record;
      one.set("slot", r.slot)
          .set("host", r.host)
          .set("patterns", swarm::Json::strings(r.patterns))
          .set("kind", r.kind == "shared" ? "shared" : "exclusive")
          .set("token", e.token())
          .set("session", r.session)
          .set("reason", r.reason)
          .set("state", swarm::to_string(standing.state));
    }
    one.set("age_seconds", seconds(standing.age)).set("expires_in_seconds", seconds(standing.left));
    list.push(std::move(one));
  }
  return list;
}

swarm::Json holds_document(const std::vector<swarm::LeaseEntry>& holds, swarm::TimePoint server_now) {
  swarm::Json doc = swarm::Json::object();
  doc.set("holds", hold_rows(holds, server_now));
  return with_schema("holds", std::move(doc));
}

}  // namespace cli
