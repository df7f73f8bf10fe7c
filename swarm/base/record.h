// The one record layer every record swarm keeps in KV is read and written
// through (sessions, leases, places in a lease's line): a record type is a
// table of its fields (Schema<T>), and one reader and one writer serve every
// table. A value that cannot be read is corrupt with a plain reason, never an
// exception; a required field missing is named the same way for every type;
// a field this version does not know is kept and written back as it was
// written; a time is written back as it was read while it is unchanged.
// Additive evolution (the contract) rests on these.
#pragma once

#include <cJSON.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "swarm/base/clock.h"
#include "swarm/base/json.h"

namespace swarm::record {

// Fields a reader does not know, as (name, JSON text as written), in order.
using UnknownFields = std::vector<std::pair<std::string, std::string>>;

// Reads `text` as a JSON object and hands each member (with the text of its
// value as written, at least for the members `is_known` does not know; ""
// for others) to `member`, which returns false with a reason when the member
// is wrong. Returns the reason the value is corrupt, or "". A record of flat
// members (strings without escapes, numbers, true, false, null) is read by
// hand, as cJSON would read it; any other through cJSON's tree. `compact`
// says whether it was read by hand and had no whitespace between its tokens.
std::string read_object(const std::string& text, const std::function<bool(const char* name)>& is_known,
                        const std::function<bool(const cJSON* item, std::string_view as_written, std::string* reason)>&
                            member,
                        bool* compact = nullptr);
namespace detail {
// The same through cJSON's tree, whatever the record: what the hand-read
// path must agree with (tested side by side).
std::string read_object_tree(const std::string& text, const std::function<bool(const char* name)>& is_known,
                             const std::function<bool(const cJSON* item, std::string_view as_written,
                                                      std::string* reason)>& member);
}  // namespace detail

// Typed readers of one member: false (with `reason`) when its type is wrong.
// null reads as absent.
bool read_string(const cJSON* item, std::string* out, std::string* reason);
// An RFC 3339 time a time_point can hold; `text` keeps it as written.
bool read_time(const cJSON* item, std::optional<TimePoint>* out, std::string* text, std::string* reason);
// A whole number from 0 to `max`, named `what` in the reason.
bool read_count(const cJSON* item, std::uint64_t max, std::uint64_t* out, std::string* reason, const char* what);

// An array of strings (null: empty); an object, as its compact text (null: "").
bool read_list(const cJSON* item, std::vector<std::string>* out, std::string* reason);
bool read_object_text(const cJSON* item, std::string* out, std::string* reason);
void append_list(std::string& out, const std::vector<std::string>& list);

// A time as read when it still says `t`, else `t` in swarm's own form.
std::string time_text(TimePoint t, const std::string& as_read);

// Adds the unknown fields, as they were written, except names `is_known`
// claims (those always come from the record's own fields).
void add_unknown(Json& json, const UnknownFields& unknown, const std::function<bool(const char*)>& is_known);
// The same, appended to the text of an object being written by hand (after
// its last member, before its closing brace).
void append_unknown(std::string& object, const UnknownFields& unknown, const std::function<bool(const char*)>& is_known);

// "field 'NAME' is missing".
std::string missing(const char* name);

// One known field of a record type T: its name in the JSON, where it lives
// in a T, how it is read (its kind, its range) and whether a record without
// it is corrupt. Written in the table's order.
template <typename T>
struct Field {
  // list: an array of strings; object: a JSON object kept as its text
  // (compact), read by its own schema where it is used.
  enum class Kind { text, time, count, signed_count, millis, list, object };
  const char* name;
  Kind kind;
  std::string T::*text = nullptr;                  // text; time: the text as read
  std::optional<TimePoint> T::*time = nullptr;     // time
  std::uint64_t T::*count = nullptr;               // count
  std::int64_t T::*signed_count = nullptr;         // signed_count (0 to max)
  std::chrono::milliseconds T::*millis = nullptr;  // millis
  std::vector<std::string> T::*list = nullptr;     // list
  std::uint64_t min = 0, max = 0;                  // counts and millis: the range
  const char* what = "";                           // "a process id": named when out of range
  bool required = false;
  bool always = false;  // written even when empty or 0
};

template <typename T>
Field<T> text(const char* name, std::string T::*m, bool required = false) {
  return {.name = name, .kind = Field<T>::Kind::text, .text = m, .required = required, .always = required};
}
template <typename T>
Field<T> time(const char* name, std::optional<TimePoint> T::*m, std::string T::*as_read) {
  return {.name = name, .kind = Field<T>::Kind::time, .text = as_read, .time = m};
}
template <typename T>
Field<T> count(const char* name, std::uint64_t T::*m, std::uint64_t max, const char* what, bool always = false) {
  return {.name = name, .kind = Field<T>::Kind::count, .count = m, .max = max, .what = what, .always = always};
}
template <typename T>
Field<T> signed_count(const char* name, std::int64_t T::*m, std::uint64_t max, const char* what) {
  return {.name = name, .kind = Field<T>::Kind::signed_count, .signed_count = m, .max = max, .what = what};
}
template <typename T>
Field<T> list(const char* name, std::vector<std::string> T::*m, bool always = false) {
  return {.name = name, .kind = Field<T>::Kind::list, .list = m, .always = always};
}
template <typename T>
Field<T> object(const char* name, std::string T::*m) {
  return {.name = name, .kind = Field<T>::Kind::object, .text = m};
}
template <typename T>
Field<T> millis(const char* name, std::chrono::milliseconds T::*m, std::uint64_t min, std::uint64_t max,
                const char* what) {
  return {.name = name, .kind = Field<T>::Kind::millis, .millis = m, .min = min, .max = max, .what = what,
          .required = true, .always = true};
}

// Milliseconds that may be absent (0), unlike a TTL.
template <typename T>
Field<T> optional_millis(const char* name, std::chrono::milliseconds T::*m, std::uint64_t max, const char* what) {
  return {.name = name, .kind = Field<T>::Kind::millis, .millis = m, .min = 0, .max = max, .what = what};
}

// A record type's fields, and where its unknown ones are kept.
template <typename T>
struct Schema {
  std::vector<Field<T>> fields;
  UnknownFields T::*unknown;

  const Field<T>* find(const char* name) const {
    std::size_t next = fields.size();
    return find(name, &next);
  }
  // The same, looking at `*next` first and leaving it after the field found:
  // a record is written in the table's order, so each member of one is found
  // at the first comparison (status reads 10,000 records).
  const Field<T>* find(const char* name, std::size_t* next) const {
    if (*next < fields.size() && std::strcmp(fields[*next].name, name) == 0) return &fields[(*next)++];
    for (std::size_t i = 0; i < fields.size(); ++i)
      if (std::strcmp(fields[i].name, name) == 0) {
        *next = i + 1;
        return &fields[i];
      }
    return nullptr;
  }
  bool known(const char* name) const { return find(name) != nullptr; }
};

template <typename T>
bool read_field(const Field<T>& f, const cJSON* item, T* out, std::string* reason) {
  using Kind = typename Field<T>::Kind;
  std::uint64_t n = 0;
  switch (f.kind) {
    case Kind::text: return read_string(item, &(out->*f.text), reason);
    case Kind::time: return read_time(item, &(out->*f.time), &(out->*f.text), reason);
    case Kind::count: return read_count(item, f.max, &(out->*f.count), reason, f.what);
    case Kind::signed_count:
      if (!read_count(item, f.max, &n, reason, f.what)) return false;
      out->*f.signed_count = static_cast<std::int64_t>(n);
      return true;
    case Kind::millis:
      if (!read_count(item, f.max, &n, reason, f.what)) return false;
      if (!cJSON_IsNull(item) && n < f.min) {
        *reason = std::string("field '") + f.name + "' is not " + f.what;
        return false;
      }
      out->*f.millis = std::chrono::milliseconds(n);
      return true;
    case Kind::list: return read_list(item, &(out->*f.list), reason);
    case Kind::object: return read_object_text(item, &(out->*f.text), reason);
  }
  return true;
}

template <typename T>
bool present(const Field<T>& f, const T& r) {
  using Kind = typename Field<T>::Kind;
  switch (f.kind) {
    case Kind::text: return !(r.*f.text).empty();
    case Kind::time: return (r.*f.time).has_value();
    case Kind::count: return r.*f.count != 0;
    case Kind::signed_count: return r.*f.signed_count != 0;
    case Kind::millis: return (r.*f.millis).count() != 0;
    case Kind::list: return !(r.*f.list).empty();
    case Kind::object: return !(r.*f.text).empty();
  }
  return false;
}

template <typename T>
void write_field(const Field<T>& f, const T& r, std::string& out) {
  using Kind = typename Field<T>::Kind;
  if (!f.always && !present(f, r)) return;
  out += out.empty() ? "{\"" : ",\"";
  out += f.name;
  out += "\":";
  switch (f.kind) {
    case Kind::text: append_quoted(out, r.*f.text); break;
    case Kind::time: append_quoted(out, time_text(*(r.*f.time), r.*f.text)); break;
    case Kind::count: out += std::to_string(r.*f.count); break;
    case Kind::signed_count: out += std::to_string(r.*f.signed_count); break;
    case Kind::millis: out += std::to_string((r.*f.millis).count()); break;
    case Kind::list: append_list(out, r.*f.list); break;
    case Kind::object: out += (r.*f.text).empty() ? std::string("{}") : r.*f.text; break;
  }
}

// Whether a member read as `item` (written `as_written`) is written back the
// same by write_field: a value write_field writes (not null, not an empty
// text or a 0 it leaves out), in the form it writes it.
template <typename T>
bool written_as_read(const Field<T>& f, const cJSON* item, std::string_view as_written) {
  using Kind = typename Field<T>::Kind;
  if (f.kind == Kind::text || f.kind == Kind::time)
    return cJSON_IsString(item) && (f.always || item->valuestring[0] != '\0');
  if (f.kind == Kind::list || f.kind == Kind::object) return false;  // written again, not kept as read
  const double v = cJSON_IsNumber(item) ? item->valuedouble : -1;
  // (Out of a count's range it is corrupt anyway: read_field says why.)
  if (!(v >= 0 && v <= static_cast<double>(f.max)) || (!f.always && v == 0)) return false;
  char digits[24];
  const auto n = static_cast<std::uint64_t>(v);
  const auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
  return as_written == std::string_view(digits, static_cast<std::size_t>(end - digits));
}

// Reads `text` into `out` by `schema`: the reason it is corrupt, or "".
// With `as_written`: whether `text` is byte for byte what write() writes of
// `out` (a record swarm wrote): its known fields only, once each, in the
// table's order, in write()'s form, with no space between its tokens.
template <typename T>
std::string read(const std::string& text, const Schema<T>& schema, T* out, bool* as_written = nullptr) {
  std::size_t known_next = 0, read_next = 0;
  bool same = as_written != nullptr;
  std::size_t after = 0;  // the table index a member must come at or after to keep the order
  std::uint64_t seen = 0;
  bool compact = false;
  std::string why = read_object(
      text, [&](const char* name) { return schema.find(name, &known_next) != nullptr; },
      [&](const cJSON* item, std::string_view written, std::string* reason) {
        const Field<T>* f = schema.find(item->string, &read_next);
        if (f == nullptr) {
          (out->*schema.unknown).emplace_back(item->string, std::string(written));
          same = false;
          return true;
        }
        if (same) {
          const auto index = static_cast<std::size_t>(f - schema.fields.data());
          same = index >= after && index < 64 && written_as_read(*f, item, written);
          after = index + 1;
          if (same) seen |= std::uint64_t{1} << index;
        }
        return read_field(*f, item, out, reason);
      },
      same ? &compact : nullptr);
  if (!why.empty()) return why;
  for (const auto& f : schema.fields)
    if (f.required && !present(f, *out)) return missing(f.name);
  if (as_written != nullptr) {
    for (std::size_t i = 0; same && i < schema.fields.size(); ++i)
      same = !schema.fields[i].always || (seen >> i & 1) != 0;
    *as_written = same && compact;
  }
  return {};
}

// The same into an optional: set when `text` reads, else the reason.
template <typename T>
std::string read(const std::string& text, const Schema<T>& schema, std::optional<T>* out,
                 bool* as_written = nullptr) {
  T record;
  std::string why = read(text, schema, &record, as_written);
  if (why.empty()) *out = std::move(record);
  return why;
}

// Why a record stored under `key` is corrupt, "" when it is not, the same
// way for every kind: a key that is no valid `kind` name (`valid_key` false:
// written by something else, a raw NATS client; no verb can name it), a
// value that did not read (`unreadable`, read's reason), or a record whose
// field `field` names another key (`named`, null when it did not read).
std::string keyed_reason(const std::string& key, bool valid_key, std::string_view kind, const std::string& unreadable,
                         std::string_view field, const std::string* named);

// The JSON text of `record` by `schema`, written by hand member by member
// (the bytes cJSON would print: status writes 10,000 of these, and every
// renewal one), its unknown fields after its own.
template <typename T>
std::string write(const T& record, const Schema<T>& schema) {
  std::string out;
  out.reserve(256);
  for (const auto& f : schema.fields) write_field(f, record, out);
  if (out.empty()) out.push_back('{');
  const auto& unknown = record.*schema.unknown;
  if (!unknown.empty()) append_unknown(out, unknown, [&](const char* name) { return schema.known(name); });
  out += '}';
  return out;
}

}  // namespace swarm::record
