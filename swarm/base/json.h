// A thin owner of cJSON trees: building documents for output and reading
// fields with their types checked. swarm/ and cli/ free cJSON objects only
// through it (kv/ has its own small owner: it sits below swarm/).
#pragma once

#include <cJSON.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace swarm {

class Json {
 public:
  Json() = default;  // no tree
  static Json object();
  static Json array();
  // An array of strings, each made valid UTF-8 as set() makes a value.
  static Json strings(const std::vector<std::string>& items);
  // Parses text; an empty Json (no tree) when it is not valid JSON.
  static Json parse(std::string_view text);
  // The same without copying: a std::string is already NUL-terminated.
  static Json parse(const std::string& text);
  static Json parse(const char* text) { return parse(std::string_view(text)); }
  // A deep copy of a node of another tree.
  static Json copy(const cJSON* node) { return Json(cJSON_Duplicate(node, true)); }

  explicit operator bool() const { return root_ != nullptr; }
  cJSON* get() const { return root_.get(); }
  // Gives up ownership, e.g. to attach the tree to a parent.
  cJSON* release() { return root_.release(); }

  // set() replaces a member of that name; add() appends, for keys the caller
  // knows are new (no search: building a record is on every renewal's path).
  Json& add(const char* key, std::string_view value);
  Json& add(const char* key, std::int64_t value);
  Json& add(const char* key, Json child);
  // Appends text that is already valid JSON, printed as is.
  Json& add_raw(const char* key, const std::string& json_text);
  Json& set(const char* key, std::string_view value);
  Json& set(const char* key, const char* value) { return set(key, std::string_view(value)); }
  Json& set(const char* key, std::int64_t value);
  Json& set(const char* key, int value) { return set(key, static_cast<std::int64_t>(value)); }
  Json& set(const char* key, std::uint64_t value);
  Json& set(const char* key, double value);
  Json& set(const char* key, bool value);
  Json& set_null(const char* key);
  Json& set(const char* key, Json child);
  Json& push(Json child);  // appends to an array
  // Moves every member of `other` (an object) to the end of this one, but
  // the one named `skip`.
  Json& adopt_members(Json other, std::string_view skip = {});

  std::string dump() const;         // compact, one line
  std::string dump_pretty() const;  // indented

 private:
  struct Deleter {
    void operator()(cJSON* p) const { cJSON_Delete(p); }
  };
  explicit Json(cJSON* root) : root_(root) {}
  std::unique_ptr<cJSON, Deleter> root_;
};

// A JSON string's text with its quotes and escapes, for building by hand
// (the same bytes as cJSON prints).
std::string quoted(std::string_view text);
void append_quoted(std::string& out, std::string_view text);

// Whether `text` has a \u0000 escape inside a string: cJSON would cut the
// string there, so such a value is never read as if it were shorter.
bool has_escaped_nul(std::string_view text);

// The text of each top-level member's value of a JSON object, as written, in
// order (for a value already parsed as an object). Lets a writer keep a field
// it does not know byte for byte: cJSON would print a number it read anew.
std::vector<std::string_view> member_value_texts(std::string_view object_text);

// While one lives, cJSON trees made on this thread are carved out of a
// reusable block instead of one malloc per node, and freeing them costs
// nothing. Every tree made under it must be freed before it ends. Reading
// 10,000 records spends most of its time in cJSON's allocations otherwise.
// An arena opened while another is active on the thread does nothing, so the
// outer one's trees are never overwritten.
class JsonArena {
 public:
  JsonArena();
  ~JsonArena();
  JsonArena(const JsonArena&) = delete;
  JsonArena& operator=(const JsonArena&) = delete;

 private:
  bool owner_ = false;  // false when nested inside another arena
};

}  // namespace swarm
