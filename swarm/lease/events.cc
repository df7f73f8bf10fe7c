#include "swarm/lease/events.h"

namespace swarm {

namespace {

Actor actor_of(const LeaseRecord& r) { return {r.host, r.host_id, r.pid}; }

Event with_lease_fields(Event e, const Lease& lease) {
  e.detail.set("holder", lease.record.holder)
      .set("ttl_ms", static_cast<std::int64_t>(lease.record.ttl.count()))
      .set("transitions", lease.record.transitions);
  return e;
}

}  // namespace

Event lease_grant_event(std::string_view bucket, const Lease& lease, const LastWrite& over) {
  Event e = with_lease_fields(
      lease_event("lease.grant", bucket, lease.name, actor_of(lease.record), lease.token, lease.revision), lease);
  const bool took_over = (over.revision != 0 && !over.released) || over.expired_by_server;
  if (took_over) {
    e.detail.set("took_over", "expired");
    const std::uint64_t revision = over.expired_by_server ? over.expired_revision : over.revision;
    if (over.record)
      e.detail.set("previous_holder", over.record->holder)
          .set("previous_token", over.record->token != 0 ? over.record->token : revision);
  } else {
    e.detail.set_null("took_over");
  }
  return e;
}

Event lease_expired_event(std::string_view bucket, std::string_view name, const LastWrite& ended,
                          std::uint64_t marker_revision, TimePoint at, const HostIdentity& seen_by) {
  const LeaseRecord* r = ended.record ? &*ended.record : nullptr;
  const std::uint64_t token = r ? token_of(r->token, ended.expired_revision) : 0;
  Event e = lease_event("lease.expired", bucket, name, r ? actor_of(*r) : Actor{}, token, marker_revision);
  e.detail.set("expired_at", format_rfc3339(at)).set("seen_by", seen_by.host);
  if (r) e.detail.set("holder", r->holder).set("ttl_ms", static_cast<std::int64_t>(r->ttl.count()));
  return e;
}

Event lease_release_event(std::string_view bucket, const Lease& lease) {
  return with_lease_fields(
      lease_event("lease.release", bucket, lease.name, actor_of(lease.record), lease.token, lease.revision), lease);
}

Event lease_lost_event(std::string_view bucket, const Lease& lease, const std::string& why) {
  Event e = with_lease_fields(
      lease_event("lease.lost", bucket, lease.name, actor_of(lease.record), lease.token, lease.revision), lease);
  e.detail.set("reason", why);
  return e;
}

Event elect_resign_event(std::string_view bucket, const Lease& lease, const std::string& to) {
  Event e = with_lease_fields(lease_event(to.empty() ? "elect.resign" : "elect.handover", bucket, lease.name,
                                          actor_of(lease.record), lease.token, lease.revision),
                              lease);
  if (!to.empty()) e.detail.set("to", to);
  return e;
}

}  // namespace swarm
