#include "swarm/base/names.h"

#include <string>

#include "swarm/base/error.h"
#include "swarm/base/text.h"

namespace swarm {

namespace {

constexpr std::size_t kMaxSlotName = 63;
constexpr std::size_t kMaxLeaseName = 255;
constexpr std::size_t kMaxTaskId = 255;

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// A bad name as an error shows it: escaped, it cannot drive the terminal.
std::string shown(std::string_view name) { return name.empty() ? "(empty)" : "'" + printable(name) + "'"; }

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
  // Well-formed UTF-8, and no control character: C0, DEL, or C1.
  return !id.empty() && id.size() <= kMaxTaskId && is_plain_text(id);
}

void require_task_id(std::string_view id) {
  if (!is_valid_task_id(id))
    throw Error(Errc::bad_input, "bad task id " + shown(id) +
                                     ": a task id is 1 to 255 bytes of UTF-8 text without control characters, "
                                     "e.g. T-42, gh#17 or acme/api#9");
}

}  // namespace swarm
