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

// A member of a flat record: the one-item tree cJSON would make of it, and
// its value as written.
struct FlatMember {
  cJSON item;
  std::string_view as_written;
};

// Reads a flat record from a copy of its text in place (each string ended
// where its closing quote was). Each step returns false at anything that is
// not flat; the caller then leaves the record to cJSON.
class FlatReader {
 public:
  FlatReader(std::string& copy, std::deque<cJSON>& items)
      : base_(copy.data()), p_(copy.data()), end_(copy.data() + copy.size()), items_(items) {}

  // The whole object, its members into `members`.
  bool object(std::vector<FlatMember>& members, const std::string& text) {
    skip_space();
    if (!take('{')) return false;
    skip_space();
    if (p_ < end_ && *p_ == '}') return finish();
    while (true) {
      FlatMember m{};
      m.item.string = string_at();
      if (m.item.string == nullptr) return false;
      skip_space();
      if (!take(':')) return false;
      skip_space();
      const char* value = p_;
      if (!value_into(m.item)) return false;
      m.as_written = std::string_view(text).substr(static_cast<std::size_t>(value - base_),
                                                   static_cast<std::size_t>(p_ - value));
      members.push_back(m);
      skip_space();
      if (take(',')) {
        skip_space();
        continue;
      }
      if (p_ < end_ && *p_ == '}') return finish();
      return false;
    }
  }

  // Whether any space stood between the tokens.
  bool spaced() const { return spaced_; }

 private:
  bool take(char c) {
    if (p_ >= end_ || *p_ != c) return false;
    ++p_;
    return true;
  }

  void skip_space() {
    const char* from = p_;
    while (p_ < end_ && is_space(*p_)) ++p_;
    spaced_ = spaced_ || p_ != from;
  }

  // The closing brace at p_, then nothing but space.
  bool finish() {
    ++p_;
    skip_space();
    return p_ == end_;
  }

  // A string without escapes from the quote at p_: its text, ended in place.
  char* string_at() {
    if (p_ >= end_ || *p_ != '"') return nullptr;
    char* start = ++p_;
    while (p_ < end_ && *p_ != '"' && *p_ != '\\') ++p_;
    if (p_ >= end_ || *p_ != '"') return nullptr;
    *p_++ = '\0';
    return start;
  }

  bool value_into(cJSON& item) {
    if (p_ < end_ && *p_ == '"') {
      item.type = cJSON_String;
      item.valuestring = string_at();
      return item.valuestring != nullptr;
    }
    if (p_ < end_ && *p_ == '[') return list_into(item);
    if (const char* number = number_end(p_, end_); number != nullptr) return number_into(item, number);
    return word_into(item);
  }

  // A list of strings, linked as cJSON links an array's items (in a deque:
  // each stays where it was made while more are added).
  bool list_into(cJSON& item) {
    item.type = cJSON_Array;
    ++p_;
    skip_space();
    cJSON* last = nullptr;
    while (p_ < end_ && *p_ != ']') {
      char* element = string_at();
      if (element == nullptr) return false;
      cJSON& e = items_.emplace_back();
      e.type = cJSON_String;
      e.valuestring = element;
      if (last == nullptr) item.child = &e;
      else last->next = &e, e.prev = last;
      last = &e;
      skip_space();
      if (take(',')) {
        skip_space();
        if (p_ >= end_ || *p_ != '"') return false;
      } else if (p_ >= end_ || *p_ != ']') {
        return false;
      }
    }
    if (p_ >= end_) return false;
    if (last != nullptr) item.child->prev = last;
    ++p_;
    return true;
  }

  bool number_into(cJSON& item, const char* number) {
    double v = 0;
    const auto [stop, ec] = std::from_chars(p_, number, v);
    if (ec != std::errc() || stop != number) return false;  // out of a double's range: cJSON's way
    item.type = cJSON_Number;
    item.valuedouble = v;
    item.valueint = v >= INT_MAX ? INT_MAX : v <= static_cast<double>(INT_MIN) ? INT_MIN : static_cast<int>(v);
    p_ = const_cast<char*>(number);
    return true;
  }

  bool word_into(cJSON& item) {
    static constexpr std::pair<std::string_view, int> kWords[] = {
        {"null", cJSON_NULL}, {"true", cJSON_True}, {"false", cJSON_False}};
    for (const auto& [word, type] : kWords)
      if (static_cast<std::size_t>(end_ - p_) >= word.size() && std::string_view(p_, word.size()) == word) {
        item.type = type;
        item.valueint = type == cJSON_True;
        p_ += word.size();
        return true;
      }
    return false;
  }

  const char* base_;
  char* p_;
  char* const end_;
  std::deque<cJSON>& items_;
  bool spaced_ = false;
};

// What a record almost always is: one object whose members are strings
// without escapes, numbers, true, false, null and lists of such strings,
// each member handed over as the one-item tree cJSON would make of it.
// Anything else (an escape, a nested value, a stray byte) is left to cJSON:
// nullopt. Not reentrant (a member's reader must not read another record).
std::optional<std::string> read_flat(const std::string& text,
                                     const std::function<bool(const cJSON*, std::string_view, std::string*)>& member,
                                     bool* compact) {
  thread_local std::string copy;
  thread_local std::vector<FlatMember> members;
  thread_local std::deque<cJSON> items;
  copy.assign(text);
  members.clear();
  items.clear();
  FlatReader reader(copy, items);
  if (!reader.object(members, text)) return std::nullopt;
  // Read whole before any member is handed over: a record that is not flat
  // after all goes to cJSON without a member seen twice.
  if (compact != nullptr) *compact = !reader.spaced();
  std::string reason;
  for (const FlatMember& m : members)
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
