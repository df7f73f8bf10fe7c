#include "swarm/slots/session.h"

#include "swarm/base/record.h"

namespace swarm {

namespace {

// The largest process id Linux hands out (PID_MAX_LIMIT), with room to spare.
constexpr std::uint64_t kMaxPid = 4194304ULL * 1024;
// A revision a double holds exactly (2^53): what a JSON reader reads back.
constexpr std::uint64_t kMaxRevision = 1ULL << 53;

// The session record's known fields, in the order a writer puts them.
const record::Schema<Session>& schema() {
  using namespace record;
  static const Schema<Session> kSchema{
      {text("slot", &Session::slot, true), text("task_id", &Session::task_id), text("agent_id", &Session::agent_id),
       text("host", &Session::host, true), text("host_id", &Session::host_id),
       signed_count("leaf_pid", &Session::leaf_pid, kMaxPid, "a process id"), text("hub_url", &Session::hub_url),
       time("started_at", &Session::started_at, &Session::started_at_text),
       time("last_renewed", &Session::last_renewed, &Session::last_renewed_text),
       count("session_token", &Session::session_token, kMaxRevision, "a revision"),
       count("port_base", &Session::port_base, 65535, "a port"),
       count("ports", &Session::ports, kMaxPortBlock, "a number of ports"),
       count("leaf_start", &Session::leaf_start, kMaxRevision, "a process start time"),
       signed_count("agent_pid", &Session::agent_pid, kMaxPid, "a process id"),
       count("agent_start", &Session::agent_start, kMaxRevision, "a process start time"),
       text("status", &Session::status), text("note", &Session::note), list("holds", &Session::holds)},
      &Session::unknown_fields};
  return kSchema;
}

}  // namespace

ParsedSession parse_session(const std::string& text) {
  ParsedSession out;
  out.corrupt_reason = record::read(text, schema(), &out.session, &out.as_written);
  return out;
}

std::string to_json(const Session& s) { return record::write(s, schema()); }

}  // namespace swarm
