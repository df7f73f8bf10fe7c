#include "swarm/names.h"

#include <cstdint>
#include <string>

#include "swarm/error.h"

namespace swarm {

namespace {

constexpr std::size_t kMaxSlotName = 63;
constexpr std::size_t kMaxLeaseName = 255;
constexpr std::size_t kMaxTaskId = 255;

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

std::string shown(std::string_view name) { return name.empty() ? "(empty)" : "'" + std::string(name) + "'"; }

}  // namespace

bool is_valid_slot_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxSlotName || !is_alnum(name.front())) return false;
  for (char c : name)
    if (!is_alnum(c) && c != '_' && c != '-') return false;
  return true;
}

bool is_valid_lease_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxLeaseName) return false;
  std::size_t start = 0;
  while (true) {
    auto dot = name.find('.', start);
    auto token = name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (!is_valid_slot_name(token)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

void require_slot_name(std::string_view name) {
  if (!is_valid_slot_name(name))
    throw Error(Errc::bad_input, "bad slot name " + shown(name) +
                                     ": a slot name is 1 to 63 letters, digits, '_' or '-', starting with a "
                                     "letter or digit");
}

void require_lease_name(std::string_view name) {
  if (!is_valid_lease_name(name))
    throw Error(Errc::bad_input, "bad lease name " + shown(name) +
                                     ": use tokens of letters, digits, '_' or '-' (each starting with a letter "
                                     "or digit) joined by '.', e.g. task.T-42");
}

bool is_valid_task_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxTaskId) return false;
  // Well-formed UTF-8 (no overlong forms, no surrogates), and no control
  // character: C0, DEL, or C1 (U+0080 to U+009F).
  for (std::size_t i = 0; i < id.size();) {
    auto c = static_cast<unsigned char>(id[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) return false;
      ++i;
      continue;
    }
    std::size_t length = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
    if (length == 0 || c > 0xf4 || i + length > id.size()) return false;
    std::uint32_t code = c & (0xff >> (length + 1));
    for (std::size_t k = 1; k < length; ++k) {
      auto next = static_cast<unsigned char>(id[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      code = (code << 6) | (next & 0x3f);
    }
    static const std::uint32_t kShortest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kShortest[length] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff) ||
        (code >= 0x80 && code <= 0x9f))
      return false;
    i += length;
  }
  return true;
}

void require_task_id(std::string_view id) {
  if (!is_valid_task_id(id))
    throw Error(Errc::bad_input, "bad task id " + shown(id) +
                                     ": a task id is 1 to 255 bytes of UTF-8 text without control characters, "
                                     "e.g. T-42, gh#17 or acme/api#9");
}

}  // namespace swarm
