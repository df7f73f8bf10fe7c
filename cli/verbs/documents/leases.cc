// swarm.lease.v1: leases and semaphores as `lease list --json`, /api/leases
// and the lease tools hand them out.
#include "cli/verbs/documents/documents.h"

namespace cli {

namespace {

double seconds(std::chrono::milliseconds d) { return static_cast<double>(d.count()) / 1000.0; }

}  // namespace

// One lease as swarm.lease.v1 has it: the record's fields, then ours.
swarm::Json lease_json(const swarm::LeaseEntry& e, const swarm::LeaseStanding& s, int waiters) {
  swarm::Json item = e.corrupt() ? swarm::Json::object() : swarm::Json::parse(swarm::to_json(*e.record));
  if (e.corrupt()) item.set("name", e.name);
  else item.set("token", e.token());
  item.set("revision", e.revision)
      .set("state", swarm::to_string(s.state))
      .set("age_seconds", seconds(s.age))
      .set("expires_in_seconds", seconds(s.left))
      .set("waiters", waiters);
  if (e.corrupt()) item.set("error", e.corrupt_reason);
  return item;
}

swarm::Json granted_lease_json(const swarm::LeaseStore& store, const swarm::Lease& lease) {
  swarm::LeaseEntry entry;
  entry.name = lease.name;
  entry.revision = lease.revision;
  entry.record = lease.record;
  entry.record->token = lease.token;
  entry.stored_at = store.server_clock().now();
  swarm::Json list = swarm::Json::array();
  list.push(lease_json(entry, swarm::standing_of(entry, entry.stored_at), 0));
  swarm::Json doc = swarm::Json::object();
  doc.set("leases", std::move(list));
  return doc;
}

swarm::Json semaphore_json(const swarm::SemaphoreSummary& s) {
  swarm::Json about = swarm::Json::object();
  about.set("name", s.name).set("limit", s.limit).set("held", s.held).set("waiters", s.waiters);
  return about;
}

swarm::Json leases_of(const std::vector<swarm::LeaseEntry>& entries, const std::map<std::string, int>& waiting,
                      swarm::TimePoint now) {
  swarm::Json list = swarm::Json::array();
  for (const auto& e : entries) {
    auto w = waiting.find(e.name);
    list.push(lease_json(e, swarm::standing_of(e, now), w == waiting.end() ? 0 : w->second));
  }
  swarm::Json doc = swarm::Json::object();
  doc.set("leases", std::move(list));
  return doc;
}

// A whole listing: its leases, and its semaphores.
swarm::Json listing_of(const std::vector<swarm::LeaseEntry>& entries, const std::map<std::string, int>& waiting,
                       const std::vector<swarm::SemaphoreSummary>& semaphores, swarm::TimePoint now) {
  swarm::Json doc = leases_of(entries, waiting, now);
  swarm::Json list = swarm::Json::array();
  for (const auto& s : semaphores) list.push(semaphore_json(s));
  doc.set("semaphores", std::move(list));
  return doc;
}

swarm::Json leases_document(const std::vector<swarm::LeaseEntry>& entries, const std::map<std::string, int>& waiting,
                            const std::vector<swarm::SemaphoreSummary>& semaphores, swarm::TimePoint server_now) {
  return with_schema("lease", listing_of(entries, waiting, semaphores, server_now));
}

}  // namespace cli
