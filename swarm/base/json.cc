#include "swarm/base/json.h"

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>

#include "swarm/base/text.h"

namespace swarm {

namespace {

// One block per thread, reused by every arena on it; big requests and
// overflow fall back to malloc (and are freed normally). Made on the
// thread's first arena, on the heap: a block in static TLS would be zeroed
// at the start of every thread the process makes (64 KiB, 16 page faults,
// for each of nats.c's threads, which never parse).
struct ArenaBlock {
  static constexpr std::size_t kSize = 64 * 1024;
  alignas(std::max_align_t) char bytes[kSize];
  std::size_t used = 0;
  bool active = false;

  bool owns(const void* p) const {
    auto* c = static_cast<const char*>(p);
    return c >= bytes && c < bytes + kSize;
  }
};

thread_local std::unique_ptr<ArenaBlock> t_block;

void* arena_malloc(std::size_t n) {
  constexpr std::size_t kAlign = alignof(std::max_align_t);
  ArenaBlock* block = t_block.get();
  if (block != nullptr && block->active) {
    std::size_t size = (n + kAlign - 1) / kAlign * kAlign;
    if (block->used + size <= ArenaBlock::kSize) {
      void* p = block->bytes + block->used;
      block->used += size;
      return p;
    }
  }
  return std::malloc(n);
}

void arena_free(void* p) {
  if (p == nullptr) return;
  const ArenaBlock* block = t_block.get();
  if (block != nullptr && block->owns(p)) return;  // arena memory goes with the arena
  std::free(p);
}

// Installed before main, before any cJSON tree exists.
const bool kHooksInstalled = [] {
  cJSON_Hooks hooks{arena_malloc, arena_free};
  cJSON_InitHooks(&hooks);
  return true;
}();

}  // namespace

JsonArena::JsonArena() {
  if (!t_block) t_block.reset(new ArenaBlock);  // not value-initialized: its bytes are touched as used
  owner_ = !t_block->active;
  if (!owner_) return;
  t_block->active = true;
  t_block->used = 0;
}

JsonArena::~JsonArena() {
  if (!owner_) return;
  t_block->active = false;
  t_block->used = 0;
}

Json Json::object() { return Json(cJSON_CreateObject()); }
Json Json::array() { return Json(cJSON_CreateArray()); }

Json Json::parse(std::string_view text) {
  return parse(std::string(text));
}

Json Json::parse(const std::string& text) {
  // Require the whole text to be one value: "{} trailing" is not valid JSON,
  // nor is a value with a NUL byte in it (cJSON would stop reading there),
  // raw or escaped.
  if (text.find('\0') != std::string::npos || has_escaped_nul(text)) return Json(nullptr);
  return Json(cJSON_ParseWithOpts(text.c_str(), nullptr, true));
}

Json Json::strings(const std::vector<std::string>& items) {
  Json out = array();
  for (const auto& item : items) cJSON_AddItemToArray(out.get(), cJSON_CreateString(valid_utf8(item).c_str()));
  return out;
}

Json& Json::add(const char* key, std::string_view value) {
  std::string copy = valid_utf8(value);
  cJSON_AddItemToObject(root_.get(), key, cJSON_CreateString(copy.c_str()));
  return *this;
}

Json& Json::add(const char* key, std::int64_t value) {
  cJSON_AddItemToObject(root_.get(), key, cJSON_CreateNumber(static_cast<double>(value)));
  return *this;
}

Json& Json::add(const char* key, Json child) {
  cJSON_AddItemToObject(root_.get(), key, child.release());
  return *this;
}

Json& Json::add_raw(const char* key, const std::string& json_text) {
  cJSON_AddRawToObject(root_.get(), key, json_text.c_str());
  return *this;
}

Json& Json::adopt_members(Json other, std::string_view skip) {
  for (cJSON* item = other.get()->child; item != nullptr;) {
    cJSON* next = item->next;
    cJSON* detached = cJSON_DetachItemViaPointer(other.get(), item);
    if (detached->string != nullptr && detached->string == skip) cJSON_Delete(detached);
    else cJSON_AddItemToObject(root_.get(), detached->string, detached);
    item = next;
  }
  return *this;
}

Json& Json::set(const char* key, std::string_view value) {
  std::string copy = valid_utf8(value);
  cJSON_DeleteItemFromObjectCaseSensitive(root_.get(), key);
  cJSON_AddItemToObject(root_.get(), key, cJSON_CreateString(copy.c_str()));
  return *this;
}

Json& Json::set(const char* key, std::int64_t value) {
  // cJSON keeps numbers as doubles: exact up to 2^53, far beyond pids and revisions.
  cJSON_DeleteItemFromObjectCaseSensitive(root_.get(), key);
  cJSON_AddItemToObject(root_.get(), key, cJSON_CreateNumber(static_cast<double>(value)));
  return *this;
}

Json& Json::set(const char* key, std::uint64_t value) { return set(key, static_cast<std::int64_t>(value)); }

Json& Json::set(const char* key, double value) {
  cJSON_DeleteItemFromObjectCaseSensitive(root_.get(), key);
  cJSON_AddItemToObject(root_.get(), key, cJSON_CreateNumber(value));
  return *this;
}

Json& Json::set(const char* key, bool value) {
  cJSON_DeleteItemFromObjectCaseSensitive(root_.get(), key);
  cJSON_AddItemToObject(root_.get(), key, cJSON_CreateBool(value));
  return *this;
}

Json& Json::set_null(const char* key) {
  cJSON_DeleteItemFromObjectCaseSensitive(root_.get(), key);
  cJSON_AddItemToObject(root_.get(), key, cJSON_CreateNull());
  return *this;
}

Json& Json::set(const char* key, Json child) {
  cJSON_DeleteItemFromObjectCaseSensitive(root_.get(), key);
  cJSON_AddItemToObject(root_.get(), key, child.release());
  return *this;
}

Json& Json::push(Json child) {
  cJSON_AddItemToArray(root_.get(), child.release());
  return *this;
}

namespace {
constexpr int kPrintBuffer = 512;  // a session record fits: no regrowth

std::string printed(cJSON* root, bool pretty) {
  char* text = pretty ? cJSON_Print(root) : cJSON_PrintBuffered(root, kPrintBuffer, false);
  if (text == nullptr) return {};
  std::string out(text);
  cJSON_free(text);
  return out;
}
}  // namespace

std::string Json::dump() const { return printed(root_.get(), false); }
std::string Json::dump_pretty() const { return printed(root_.get(), true); }

void append_quoted(std::string& out, std::string_view text) {
  // Output is always valid UTF-8: ill-formed bytes become U+FFFD.
  if (!is_valid_utf8(text)) {
    append_quoted(out, valid_utf8(text));
    return;
  }
  // cJSON's escapes exactly (print_string_ptr): a record written either way
  // has the same bytes. Text stops at a NUL, as a C string would.
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  std::size_t run = 0;  // the start of the bytes not yet appended, which need no escape
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    auto u = static_cast<unsigned char>(c);
    if (u >= 32 && c != '"' && c != '\\') continue;
    out.append(text.data() + run, i - run);
    run = i + 1;
    if (u == 0) {
      run = text.size();
      break;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out += kHex[u >> 4];
        out += kHex[u & 15];
    }
  }
  out.append(text.data() + run, text.size() - run);
  out += '"';
}

std::string quoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  append_quoted(out, text);
  return out;
}

bool has_escaped_nul(std::string_view text) {
  // Nearly every text has no such escape at all: one fast search says so.
  if (text.find("\\u0000") == std::string_view::npos) return false;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (!in_string) {
      in_string = c == '"';
      continue;
    }
    if (c == '"') {
      in_string = false;
    } else if (c == '\\') {
      if (text.substr(i + 1, 5) == "u0000") return true;
      ++i;  // the escaped character, whatever it is
    }
  }
  return false;
}

namespace {

// What cJSON skips between tokens: every byte up to the space, not only the
// four JSON names (it validated the text, so this must agree with it).
bool is_space(char c) { return static_cast<unsigned char>(c) <= 32; }

std::size_t skip_space(std::string_view t, std::size_t i) {
  while (i < t.size() && is_space(t[i])) ++i;
  return i;
}

// The index just past the string that starts at t[i] == '"'.
std::size_t skip_string(std::string_view t, std::size_t i) {
  for (++i; i < t.size(); ++i) {
    if (t[i] == '\\') ++i;
    else if (t[i] == '"') return i + 1;
  }
  return t.size();
}

// The index just past the value that starts at t[i].
std::size_t skip_value(std::string_view t, std::size_t i) {
  if (i < t.size() && t[i] == '"') return skip_string(t, i);
  if (i < t.size() && (t[i] == '{' || t[i] == '[')) {
    int depth = 0;
    while (i < t.size()) {
      char c = t[i];
      if (c == '"') {
        i = skip_string(t, i);
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if ((c == '}' || c == ']') && --depth == 0) return i + 1;
      ++i;
    }
    return t.size();
  }
  while (i < t.size() && t[i] != ',' && t[i] != '}' && t[i] != ']' && !is_space(t[i]))
    ++i;  // a number, true, false or null
  return i;
}

}  // namespace

std::vector<std::string_view> member_value_texts(std::string_view t) {
  std::vector<std::string_view> out;
  std::size_t i = skip_space(t, 0);
  if (i >= t.size() || t[i] != '{') return out;
  i = skip_space(t, i + 1);
  while (i < t.size() && t[i] == '"') {
    i = skip_space(t, skip_string(t, i));  // the name
    if (i >= t.size() || t[i] != ':') break;
    std::size_t start = skip_space(t, i + 1);
    std::size_t end = skip_value(t, start);
    out.push_back(t.substr(start, end - start));
    i = skip_space(t, end);
    if (i < t.size() && t[i] == ',') i = skip_space(t, i + 1);
  }
  return out;
}

}  // namespace swarm
