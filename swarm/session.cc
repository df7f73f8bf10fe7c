#include "swarm/session.h"

#include <cmath>
#include <cstring>

#include "swarm/json.h"

namespace swarm {

namespace {

// The known fields, in the order a writer puts them.
enum class Field { slot, task_id, agent_id, host, host_id, leaf_pid, hub_url, started_at, last_renewed, unknown };

Field field_of(const char* name) {
  switch (name[0]) {
    case 's':
      if (std::strcmp(name, "slot") == 0) return Field::slot;
      if (std::strcmp(name, "started_at") == 0) return Field::started_at;
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

// Reads an optional string field; false (with reason) when it has another type.
bool read_string(const cJSON* item, std::string* out, std::string* reason) {
  if (cJSON_IsNull(item)) return true;
  if (!cJSON_IsString(item)) {
    *reason = std::string("field '") + item->string + "' is not a string";
    return false;
  }
  *out = item->valuestring;
  return true;
}

bool read_time(const cJSON* item, std::optional<TimePoint>* out, std::string* text, std::string* reason) {
  if (!read_string(item, text, reason)) return false;
  if (text->empty()) return true;
  *out = parse_rfc3339(*text);
  if (!*out) {
    *reason = std::string("field '") + item->string + "' is not an RFC 3339 time of the years 1678 to 2261: '" +
              *text + "'";
    return false;
  }
  return true;
}

// A time as read when it still says `t`, else `t` in swarm's own form.
std::string time_text(TimePoint t, const std::string& as_read) {
  if (!as_read.empty() && parse_rfc3339(as_read) == t) return as_read;
  return format_rfc3339(t);
}

bool read_pid(const cJSON* item, std::int64_t* out, std::string* reason) {
  if (cJSON_IsNull(item)) return true;
  double v = cJSON_IsNumber(item) ? item->valuedouble : -1;
  if (!cJSON_IsNumber(item) || v < 0 || v != std::floor(v) || v > 4194304.0 * 1024) {
    *reason = "field 'leaf_pid' is not a process id";
    return false;
  }
  *out = static_cast<std::int64_t>(v);
  return true;
}

// Reads one member into the session; false (with reason) when its type is
// wrong. `as_written` is its value's text in the record.
bool read_member(const cJSON* item, std::string_view as_written, Session* s, std::string* reason) {
  switch (field_of(item->string)) {
    case Field::slot: return read_string(item, &s->slot, reason);
    case Field::task_id: return read_string(item, &s->task_id, reason);
    case Field::agent_id: return read_string(item, &s->agent_id, reason);
    case Field::host: return read_string(item, &s->host, reason);
    case Field::host_id: return read_string(item, &s->host_id, reason);
    case Field::leaf_pid: return read_pid(item, &s->leaf_pid, reason);
    case Field::hub_url: return read_string(item, &s->hub_url, reason);
    case Field::started_at: return read_time(item, &s->started_at, &s->started_at_text, reason);
    case Field::last_renewed: return read_time(item, &s->last_renewed, &s->last_renewed_text, reason);
    case Field::unknown: break;
  }
  s->unknown_fields.emplace_back(item->string, std::string(as_written));
  return true;
}

}  // namespace

ParsedSession parse_session(const std::string& text) {
  ParsedSession out;
  JsonArena arena;  // the tree below dies before it
  Json json = Json::parse(text);
  if (!json) {
    out.corrupt_reason = text.empty()               ? "the value is empty"
                         : has_escaped_nul(text) ? "a string in the value holds a NUL character (\\u0000)"
                                                 : "the value is not valid JSON";
    return out;
  }
  const cJSON* root = json.get();
  if (!cJSON_IsObject(root)) {
    out.corrupt_reason = "the value is not a JSON object";
    return out;
  }
  Session s;
  // One pass over the members: a record is read in the order it was written.
  const auto texts = member_value_texts(text);
  std::size_t index = 0;
  for (const cJSON* item = root->child; item != nullptr; item = item->next, ++index) {
    if (item->string == nullptr) continue;
    std::string_view as_written = index < texts.size() ? texts[index] : std::string_view();
    if (!read_member(item, as_written, &s, &out.corrupt_reason)) return out;
  }
  if (s.slot.empty()) {
    out.corrupt_reason = "field 'slot' is missing";
    return out;
  }
  if (s.host.empty()) {
    out.corrupt_reason = "field 'host' is missing";
    return out;
  }
  out.session = std::move(s);
  return out;
}

std::string to_json(const Session& s) {
  JsonArena arena;  // the tree below dies before it
  Json json = Json::object();
  json.add("slot", s.slot);
  if (!s.task_id.empty()) json.add("task_id", s.task_id);
  if (!s.agent_id.empty()) json.add("agent_id", s.agent_id);
  json.add("host", s.host);
  if (!s.host_id.empty()) json.add("host_id", s.host_id);
  // An integer printed as digits: cJSON would print a double through %g.
  if (s.leaf_pid != 0) json.add_raw("leaf_pid", std::to_string(s.leaf_pid));
  if (!s.hub_url.empty()) json.add("hub_url", s.hub_url);
  if (s.started_at) json.add("started_at", time_text(*s.started_at, s.started_at_text));
  if (s.last_renewed) json.add("last_renewed", time_text(*s.last_renewed, s.last_renewed_text));
  for (const auto& [name, raw] : s.unknown_fields) {
    // A known field always comes from the struct; an unknown one is written
    // back as it was read, a repeated name repeated (as another reader may
    // take either).
    if (is_known(name.c_str())) continue;
    // As it was written in a record that parsed; checked again all the same.
    if (Json::parse(raw)) json.add_raw(name.c_str(), raw);
  }
  return json.dump();
}

}  // namespace swarm
