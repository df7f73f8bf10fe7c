#include "swarm/lease/lease_record.h"


namespace swarm {

namespace {

constexpr std::uint64_t kMaxPid = 4194304ULL * 1024;
constexpr std::uint64_t kMaxCount = 1ULL << 53;  // exact in the double JSON numbers are read as

// The lease record's known fields, in the order a writer puts them.
const record::Schema<LeaseRecord>& schema() {
  using namespace record;
  using R = LeaseRecord;
  static const auto kMinMs = static_cast<std::uint64_t>(std::chrono::milliseconds(kMinLeaseTtl).count());
  static const auto kMaxMs = static_cast<std::uint64_t>(std::chrono::milliseconds(kMaxLeaseTtl).count());
  static const Schema<R> kSchema{
      {text("name", &R::name, true), text("holder", &R::holder, true), text("host", &R::host, true),
       text("host_id", &R::host_id), signed_count("pid", &R::pid, kMaxPid, "a process id"),
       count("pid_start", &R::pid_start, kMaxCount, "a process start time"),
       count("token", &R::token, kMaxCount, "a fencing token"),
       millis("ttl_ms", &R::ttl, kMinMs, kMaxMs, "a TTL of 1s to 1h in milliseconds"),
       time("acquired_at", &R::acquired_at, &R::acquired_at_text),
       time("renewed_at", &R::renewed_at, &R::renewed_at_text),
       count("transitions", &R::transitions, kMaxCount, "a count", true), text("slot", &R::slot),
       text("task", &R::task), count("order", &R::order, kMaxCount, "a revision"),
       list("patterns", &R::patterns), text("kind", &R::kind), text("reason", &R::reason),
       count("session", &R::session, kMaxCount, "a session token"),
       count("priority", &R::priority, kMaxElectionPriority, "a priority of 0 to 1000"),
       optional_millis("min_term_ms", &R::min_term, kMaxMs, "a term of up to 1h in milliseconds"),
       text("handover_to", &R::handover_to), text("handover_holder", &R::handover_holder)},
      &R::unknown_fields};
  return kSchema;
}

}  // namespace

ParsedLease parse_lease(const std::string& text) {
  ParsedLease out;
  out.corrupt_reason = record::read(text, schema(), &out.lease);
  return out;
}

std::string to_json(const LeaseRecord& l) { return record::write(l, schema()); }

}  // namespace swarm
