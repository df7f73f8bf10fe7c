#include "swarm/session.h"

#include <cstring>

#include "swarm/json.h"
#include "swarm/record.h"

namespace swarm {

namespace {

// The known fields, in the order a writer puts them.
enum class Field {
  slot, task_id, agent_id, host, host_id, leaf_pid, hub_url, started_at, last_renewed, session_token, unknown
};

Field field_of(const char* name) {
  switch (name[0]) {
    case 's':
      if (std::strcmp(name, "slot") == 0) return Field::slot;
      if (std::strcmp(name, "started_at") == 0) return Field::started_at;
      if (std::strcmp(name, "session_token") == 0) return Field::session_token;
      break;
    case 't':
      if (std::strcmp(name, "task_id") == 0) return Field::task_id;
      break;
    case 'a':
      if (std::strcmp(name, "agent_id") == 0) return Field::agent_id;
      break;
    case 'h':
      if (std::strcmp(name, "host") == 0) return Field::host;
      if (std::strcmp(name, "host_id") == 0) return Field::host_id;
      if (std::strcmp(name, "hub_url") == 0) return Field::hub_url;
      break;
    case 'l':
      if (std::strcmp(name, "leaf_pid") == 0) return Field::leaf_pid;
      if (std::strcmp(name, "last_renewed") == 0) return Field::last_renewed;
      break;
    default:
      break;
  }
  return Field::unknown;
}

bool is_known(const char* name) { return field_of(name) != Field::unknown; }

// The largest process id Linux hands out (PID_MAX_LIMIT), with room to spare.
constexpr std::uint64_t kMaxPid = 4194304ULL * 1024;
// A revision a double holds exactly (2^53): what a JSON reader reads back.
constexpr std::uint64_t kMaxRevision = 1ULL << 53;

// Reads one member into the session; false (with reason) when its type is
// wrong. `as_written` is its value's text in the record.
bool read_member(const cJSON* item, std::string_view as_written, Session* s, std::string* reason) {
  using namespace record;
  switch (field_of(item->string)) {
    case Field::slot: return read_string(item, &s->slot, reason);
    case Field::task_id: return read_string(item, &s->task_id, reason);
    case Field::agent_id: return read_string(item, &s->agent_id, reason);
    case Field::host: return read_string(item, &s->host, reason);
    case Field::host_id: return read_string(item, &s->host_id, reason);
    case Field::leaf_pid: {
      std::uint64_t pid = 0;
      if (!read_count(item, kMaxPid, &pid, reason, "a process id")) return false;
      s->leaf_pid = static_cast<std::int64_t>(pid);
      return true;
    }
    case Field::hub_url: return read_string(item, &s->hub_url, reason);
    case Field::started_at: return read_time(item, &s->started_at, &s->started_at_text, reason);
    case Field::last_renewed: return read_time(item, &s->last_renewed, &s->last_renewed_text, reason);
    case Field::session_token: return read_count(item, kMaxRevision, &s->session_token, reason, "a revision");
    case Field::unknown: break;
  }
  s->unknown_fields.emplace_back(item->string, std::string(as_written));
  return true;
}

}  // namespace

ParsedSession parse_session(const std::string& text) {
  ParsedSession out;
  Session s;
  out.corrupt_reason = record::read_object(
      text, is_known, [&](const cJSON* item, std::string_view as_written, std::string* reason) {
        return read_member(item, as_written, &s, reason);
      });
  if (!out.corrupt_reason.empty()) return out;
  if (s.slot.empty()) {
    out.corrupt_reason = record::missing("slot");
    return out;
  }
  if (s.host.empty()) {
    out.corrupt_reason = record::missing("host");
    return out;
  }
  out.session = std::move(s);
  return out;
}

std::string to_json(const Session& s) {
  // Written by hand, member by member (the bytes cJSON would print): status
  // writes 10,000 of these, and every renewal one.
  std::string out;
  out.reserve(256);
  auto member = [&](const char* key, std::string_view value) {
    out += out.empty() ? "{\"" : ",\"";
    out += key;
    out += "\":";
    append_quoted(out, value);
  };
  member("slot", s.slot);
  if (!s.task_id.empty()) member("task_id", s.task_id);
  if (!s.agent_id.empty()) member("agent_id", s.agent_id);
  member("host", s.host);
  if (!s.host_id.empty()) member("host_id", s.host_id);
  // An integer printed as digits: cJSON would print a double through %g.
  if (s.leaf_pid != 0) out += ",\"leaf_pid\":" + std::to_string(s.leaf_pid);
  if (!s.hub_url.empty()) member("hub_url", s.hub_url);
  if (s.started_at) member("started_at", record::time_text(*s.started_at, s.started_at_text));
  if (s.last_renewed) member("last_renewed", record::time_text(*s.last_renewed, s.last_renewed_text));
  if (s.session_token != 0) out += ",\"session_token\":" + std::to_string(s.session_token);
  record::append_unknown(out, s.unknown_fields, is_known);
  out += '}';
  return out;
}

}  // namespace swarm
