#include "swarm/base/record.h"

#include <cmath>

#include "swarm/base/text.h"

namespace swarm::record {

std::string read_object(const std::string& text, const std::function<bool(const char* name)>& is_known,
                        const std::function<bool(const cJSON*, std::string_view, std::string*)>& member) {
  JsonArena arena;  // the tree below dies before it
  // What cJSON lets through but a strict reader refuses (ill-formed UTF-8,
  // raw control characters in strings) is corrupt: such a record never
  // reaches a terminal or a --json output.
  if (auto problem = strict_json_problem(text); !problem.empty()) return problem;
  Json json = Json::parse(text);
  if (!json) {
    if (text.empty()) return "the value is empty";
    if (has_escaped_nul(text)) return "a string in the value holds a NUL character (\\u0000)";
    return "the value is not valid JSON";
  }
  const cJSON* root = json.get();
  if (!cJSON_IsObject(root)) return "the value is not a JSON object";
  // The texts as written are kept for unknown members only: finding them is
  // a pass over the text that a record of known fields does not need.
  bool any_unknown = false;
  for (const cJSON* item = root->child; item != nullptr && !any_unknown; item = item->next)
    any_unknown = item->string != nullptr && !is_known(item->string);
  // One pass over the members: a record is read in the order it was written.
  const auto texts = any_unknown ? member_value_texts(text) : std::vector<std::string_view>();
  std::size_t index = 0;
  std::string reason;
  for (const cJSON* item = root->child; item != nullptr; item = item->next, ++index) {
    if (item->string == nullptr) continue;
    std::string_view as_written = index < texts.size() ? texts[index] : std::string_view();
    if (!member(item, as_written, &reason)) return reason;
  }
  return {};
}

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

bool read_count(const cJSON* item, std::uint64_t max, std::uint64_t* out, std::string* reason, const char* what) {
  if (cJSON_IsNull(item)) return true;
  double v = cJSON_IsNumber(item) ? item->valuedouble : -1;
  // Range-checked as a double before it is converted: 1e300 is no count.
  if (!cJSON_IsNumber(item) || !(v >= 0 && v <= static_cast<double>(max)) || v != std::floor(v)) {
    *reason = std::string("field '") + item->string + "' is not " + what;
    return false;
  }
  *out = static_cast<std::uint64_t>(v);
  return true;
}

std::string time_text(TimePoint t, const std::string& as_read) {
  if (!as_read.empty() && parse_rfc3339(as_read) == t) return as_read;
  return format_rfc3339(t);
}

void add_unknown(Json& json, const UnknownFields& unknown, const std::function<bool(const char*)>& is_known) {
  for (const auto& [name, raw] : unknown) {
    // Written back as read, a repeated name repeated (another reader may take
    // either); checked again all the same, as it came from a record that parsed.
    if (is_known(name.c_str())) continue;
    if (Json::parse(raw)) json.add_raw(name.c_str(), raw);
  }
}

void append_unknown(std::string& object, const UnknownFields& unknown, const std::function<bool(const char*)>& is_known) {
  for (const auto& [name, raw] : unknown) {
    if (is_known(name.c_str())) continue;
    if (!Json::parse(raw)) continue;
    object += ',';
    append_quoted(object, name);
    object += ':';
    object += raw;
  }
}

std::string missing(const char* name) { return std::string("field '") + name + "' is missing"; }

std::string keyed_reason(const std::string& key, bool valid_key, std::string_view kind, const std::string& unreadable,
                         std::string_view field, const std::string* named) {
  if (!valid_key) return "the key is not a valid " + std::string(kind) + " name";
  if (!unreadable.empty()) return unreadable;
  if (named != nullptr && *named != key)
    return "field '" + std::string(field) + "' is '" + *named + "' but the key is '" + key + "'";
  return {};
}

}  // namespace swarm::record
