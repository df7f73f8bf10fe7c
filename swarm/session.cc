#include "swarm/session.h"

#include <cmath>

#include "swarm/json.h"

namespace swarm {

namespace {

const char* const kKnownFields[] = {"slot",     "task_id", "agent_id",   "host",        "host_id",
                                    "leaf_pid", "hub_url", "started_at", "last_renewed"};

bool is_known(const char* name) {
  for (const char* known : kKnownFields)
    if (std::string_view(known) == name) return true;
  return false;
}

// Reads an optional string field; false (with reason) when it has another type.
bool read_string(const cJSON* root, const char* name, std::string* out, std::string* reason) {
  const cJSON* item = cJSON_GetObjectItemCaseSensitive(root, name);
  if (item == nullptr || cJSON_IsNull(item)) return true;
  if (!cJSON_IsString(item)) {
    *reason = std::string("field '") + name + "' is not a string";
    return false;
  }
  *out = item->valuestring;
  return true;
}

bool read_time(const cJSON* root, const char* name, std::optional<TimePoint>* out, std::string* reason) {
  std::string text;
  if (!read_string(root, name, &text, reason)) return false;
  if (text.empty()) return true;
  *out = parse_rfc3339(text);
  if (!*out) {
    *reason = std::string("field '") + name + "' is not an RFC 3339 time: '" + text + "'";
    return false;
  }
  return true;
}

bool read_pid(const cJSON* root, std::int64_t* out, std::string* reason) {
  const cJSON* item = cJSON_GetObjectItemCaseSensitive(root, "leaf_pid");
  if (item == nullptr || cJSON_IsNull(item)) return true;
  double v = cJSON_IsNumber(item) ? item->valuedouble : -1;
  if (!cJSON_IsNumber(item) || v < 0 || v != std::floor(v) || v > 4194304.0 * 1024) {
    *reason = "field 'leaf_pid' is not a process id";
    return false;
  }
  *out = static_cast<std::int64_t>(v);
  return true;
}

}  // namespace

ParsedSession parse_session(std::string_view text) {
  ParsedSession out;
  Json json = Json::parse(text);
  if (!json) {
    out.corrupt_reason = text.empty() ? "the value is empty" : "the value is not valid JSON";
    return out;
  }
  const cJSON* root = json.get();
  if (!cJSON_IsObject(root)) {
    out.corrupt_reason = "the value is not a JSON object";
    return out;
  }
  Session s;
  std::string& reason = out.corrupt_reason;
  if (!read_string(root, "slot", &s.slot, &reason) || !read_string(root, "task_id", &s.task_id, &reason) ||
      !read_string(root, "agent_id", &s.agent_id, &reason) || !read_string(root, "host", &s.host, &reason) ||
      !read_string(root, "host_id", &s.host_id, &reason) || !read_string(root, "hub_url", &s.hub_url, &reason) ||
      !read_pid(root, &s.leaf_pid, &reason) || !read_time(root, "started_at", &s.started_at, &reason) ||
      !read_time(root, "last_renewed", &s.last_renewed, &reason))
    return out;
  if (s.slot.empty()) {
    reason = "field 'slot' is missing";
    return out;
  }
  if (s.host.empty()) {
    reason = "field 'host' is missing";
    return out;
  }
  for (const cJSON* item = root->child; item != nullptr; item = item->next) {
    if (item->string == nullptr || is_known(item->string)) continue;
    char* raw = cJSON_PrintUnformatted(item);
    if (raw == nullptr) continue;
    s.unknown_fields.emplace_back(item->string, raw);
    cJSON_free(raw);
  }
  out.session = std::move(s);
  return out;
}

std::string to_json(const Session& s) {
  Json json = Json::object();
  json.set("slot", s.slot);
  if (!s.task_id.empty()) json.set("task_id", s.task_id);
  if (!s.agent_id.empty()) json.set("agent_id", s.agent_id);
  json.set("host", s.host);
  if (!s.host_id.empty()) json.set("host_id", s.host_id);
  if (s.leaf_pid != 0) json.set("leaf_pid", s.leaf_pid);
  if (!s.hub_url.empty()) json.set("hub_url", s.hub_url);
  if (s.started_at) json.set("started_at", format_rfc3339(*s.started_at));
  if (s.last_renewed) json.set("last_renewed", format_rfc3339(*s.last_renewed));
  for (const auto& [name, raw] : s.unknown_fields) {
    if (is_known(name.c_str())) continue;  // a known field always comes from the struct
    Json value = Json::parse(raw);
    if (value) json.set(name.c_str(), std::move(value));
  }
  return json.dump();
}

}  // namespace swarm
