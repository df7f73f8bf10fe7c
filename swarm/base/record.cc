#include "swarm/base/record.h"

#include <charconv>
#include <deque>
#include <climits>
#include <cmath>
#include <optional>
#include <vector>

#include "swarm/base/text.h"

namespace swarm::record {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// A JSON number exactly as the grammar has it: its end, or nullptr.
const char* number_end(const char* at, const char* end) {
  const char* p = at;
  auto digits = [&] {
    const char* from = p;
    while (p < end && *p >= '0' && *p <= '9') ++p;
    return p > from;
  };
  if (p < end && *p == '-') ++p;
  if (p < end && *p == '0') ++p;
  else if (!digits()) return nullptr;
  if (p < end && *p == '.' && (++p, !digits())) return nullptr;
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    if (p < end && (*p == '+' || *p == '-')) ++p;
    if (!digits()) return nullptr;
  }
  return p;
}

// What a record almost always is: one object whose members are strings
// without escapes, numbers, true, false, null and lists of such strings. Read from a copy of the
// text in place (each string ended where its closing quote was), each member
// handed over as the one-item tree cJSON would make of it. Anything else (an
// escape, a nested value, a stray byte) is left to cJSON: nullopt. Not
// reentrant (a member's reader must not read another record).
std::optional<std::string> read_flat(const std::string& text,
                                     const std::function<bool(const cJSON*, std::string_view, std::string*)>& member,
                                     bool* compact) {
  thread_local std::string copy;
  copy.assign(text);
  char* p = copy.data();
  char* const end = p + copy.size();
  bool spaced = false;
  auto skip_space = [&] {
    const char* from = p;
    while (p < end && is_space(*p)) ++p;
    spaced = spaced || p != from;
  };
  // A string without escapes from the quote at p: its text, ended in place.
  auto string_at = [&]() -> char* {
    if (p >= end || *p != '"') return nullptr;
    char* start = ++p;
    while (p < end && *p != '"' && *p != '\\') ++p;
    if (p >= end || *p != '"') return nullptr;
    *p++ = '\0';
    return start;
  };
  skip_space();
  if (p >= end || *p != '{') return std::nullopt;
  ++p;
  skip_space();
  bool first = true;
  struct Member {
    cJSON item;
    std::string_view as_written;
  };
  thread_local std::vector<Member> members;
  members.clear();
  // The strings of the lists, linked as cJSON links an array's items
  // (a deque: each stays where it was made while more are added).
  thread_local std::deque<cJSON> items;
  items.clear();
  while (true) {
    if (p < end && *p == '}' && first) break;
    char* name = string_at();
    if (name == nullptr) return std::nullopt;
    skip_space();
    if (p >= end || *p != ':') return std::nullopt;
    ++p;
    skip_space();
    Member m{};
    m.item.string = name;
    const char* value = p;
    const std::size_t at = static_cast<std::size_t>(value - copy.data());
    if (p < end && *p == '"') {
      m.item.type = cJSON_String;
      m.item.valuestring = string_at();
      if (m.item.valuestring == nullptr) return std::nullopt;
    } else if (p < end && *p == '[') {
      m.item.type = cJSON_Array;
      ++p;
      skip_space();
      cJSON* last = nullptr;
      while (p < end && *p != ']') {
        char* element = string_at();
        if (element == nullptr) return std::nullopt;
        cJSON& e = items.emplace_back();
        e.type = cJSON_String;
        e.valuestring = element;
        if (last == nullptr) m.item.child = &e;
        else last->next = &e, e.prev = last;
        last = &e;
        skip_space();
        if (p < end && *p == ',') {
          ++p;
          skip_space();
          if (p >= end || *p != '"') return std::nullopt;
        } else if (p >= end || *p != ']') {
          return std::nullopt;
        }
      }
      if (p >= end) return std::nullopt;
      if (last != nullptr) m.item.child->prev = last;
      ++p;
    } else if (const char* number = number_end(p, end); number != nullptr) {
      double v = 0;
      const auto [stop, ec] = std::from_chars(p, number, v);
      if (ec != std::errc() || stop != number) return std::nullopt;  // out of a double's range: cJSON's way
      m.item.type = cJSON_Number;
      m.item.valuedouble = v;
      m.item.valueint = v >= INT_MAX ? INT_MAX : v <= static_cast<double>(INT_MIN) ? INT_MIN : static_cast<int>(v);
      p = const_cast<char*>(number);
    } else {
      static constexpr std::pair<std::string_view, int> kWords[] = {
          {"null", cJSON_NULL}, {"true", cJSON_True}, {"false", cJSON_False}};
      bool matched = false;
      for (const auto& [word, type] : kWords)
        if (!matched && static_cast<std::size_t>(end - p) >= word.size() && std::string_view(p, word.size()) == word) {
          m.item.type = type;
          m.item.valueint = type == cJSON_True;
          p += word.size();
          matched = true;
        }
      if (!matched) return std::nullopt;
    }
    m.as_written = std::string_view(text).substr(at, static_cast<std::size_t>(p - value));
    members.push_back(m);
    first = false;
    skip_space();
    if (p < end && *p == ',') {
      ++p;
      skip_space();
      continue;
    }
    if (p < end && *p == '}') break;
    return std::nullopt;
  }
  ++p;
  skip_space();
  if (p != end) return std::nullopt;
  // Read whole before any member is handed over: a record that is not flat
  // after all goes to cJSON without a member seen twice.
  if (compact != nullptr) *compact = !spaced;
  std::string reason;
  for (const Member& m : members)
    if (!member(&m.item, m.as_written, &reason)) return reason;
  return std::string();
}

}  // namespace

std::string read_object(const std::string& text, const std::function<bool(const char* name)>& is_known,
                        const std::function<bool(const cJSON*, std::string_view, std::string*)>& member,
                        bool* compact) {
  if (compact != nullptr) *compact = false;
  // What cJSON lets through but a strict reader refuses (ill-formed UTF-8,
  // raw control characters in strings) is corrupt: such a record never
  // reaches a terminal or a --json output.
  if (auto problem = strict_json_problem(text); !problem.empty()) return problem;
  if (auto flat = read_flat(text, member, compact)) return *flat;
  return detail::read_object_tree(text, is_known, member);
}

namespace detail {
std::string read_object_tree(const std::string& text, const std::function<bool(const char* name)>& is_known,
                             const std::function<bool(const cJSON*, std::string_view, std::string*)>& member) {
  JsonArena arena;  // the tree below dies before it
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
}  // namespace detail

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

bool read_list(const cJSON* item, std::vector<std::string>* out, std::string* reason) {
  out->clear();
  if (cJSON_IsNull(item)) return true;
  if (!cJSON_IsArray(item)) {
    *reason = std::string("field '") + item->string + "' is not a list of strings";
    return false;
  }
  for (const cJSON* e = item->child; e != nullptr; e = e->next) {
    if (!cJSON_IsString(e)) {
      *reason = std::string("field '") + item->string + "' is not a list of strings";
      return false;
    }
    out->emplace_back(e->valuestring);
  }
  return true;
}

bool read_object_text(const cJSON* item, std::string* out, std::string* reason) {
  out->clear();
  if (cJSON_IsNull(item)) return true;
  if (!cJSON_IsObject(item)) {
    *reason = std::string("field '") + item->string + "' is not an object";
    return false;
  }
  char* text = cJSON_PrintUnformatted(item);
  if (text == nullptr) {
    *reason = std::string("field '") + item->string + "' could not be read";
    return false;
  }
  *out = text;
  cJSON_free(text);
  return true;
}

void append_list(std::string& out, const std::vector<std::string>& list) {
  out += '[';
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out += ',';
    append_quoted(out, list[i]);
  }
  out += ']';
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
