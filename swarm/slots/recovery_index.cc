#include "swarm/slots/recovery_index.h"

#include <algorithm>
#include <ctime>
#include <map>

#include "swarm/base/names.h"
#include "swarm/git/backend.h"

namespace swarm {

namespace {

constexpr std::string_view kRefsPrefix = "refs/recovery/";
constexpr std::size_t kStampSize = 20;  // 20261122T100000.123Z

bool digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::optional<RecoveryName> parse_recovery_name(std::string_view name) {
  // An -N after the stamp: a prefix that was taken.
  if (auto dash = name.rfind('-'); dash != std::string_view::npos && digits(name.substr(dash + 1)) &&
                                     name.size() > kStampSize + 2 && name[dash - 1] == 'Z')
    name = name.substr(0, dash);
  if (name.size() < kStampSize + 2 || name[name.size() - kStampSize - 1] != '-') return std::nullopt;
  const std::string_view slot = name.substr(0, name.size() - kStampSize - 1);
  const std::string_view stamp = name.substr(name.size() - kStampSize);
  if (!is_valid_slot_name(slot)) return std::nullopt;
  if (!digits(stamp.substr(0, 8)) || stamp[8] != 'T' || !digits(stamp.substr(9, 6)) || stamp[15] != '.' ||
      !digits(stamp.substr(16, 3)) || stamp[19] != 'Z')
    return std::nullopt;
  std::tm tm{};
  auto number = [&](std::size_t at, std::size_t n) { return std::stoi(std::string(stamp.substr(at, n))); };
  tm.tm_year = number(0, 4) - 1900;
  tm.tm_mon = number(4, 2) - 1;
  tm.tm_mday = number(6, 2);
  tm.tm_hour = number(9, 2);
  tm.tm_min = number(11, 2);
  tm.tm_sec = number(13, 2);
  const std::time_t seconds = ::timegm(&tm);
  if (seconds < 0) return std::nullopt;
  return RecoveryName{std::string(slot), std::chrono::system_clock::from_time_t(seconds) +
                                             std::chrono::milliseconds(number(16, 3))};
}

std::vector<RecoveryItem> list_recovery(const Workspace& ws, const HubLocation& hub, bool with_hub) {
  std::map<std::string, RecoveryItem> items;
  auto item = [&](const std::string& name) -> RecoveryItem* {
    auto parsed = parse_recovery_name(name);
    if (!parsed) return nullptr;
    auto [it, made] = items.try_emplace(name);
    if (made) {
      it->second.name = name;
      it->second.slot = parsed->slot;
      it->second.time = parsed->time;
    }
    return &it->second;
  };
  // A link in place of .swarm/recovery/ is refused (bad_input), never listed.
  if (auto folder = ws.folder_if_exists(kRecoveryFolder))
    for (const auto& name : folder->subfolders())
      if (auto* i = item(name)) i->folder = true;
  if (with_hub)
    for (auto& [ref, id] : git_backend().list_refs(hub.text, std::string(kRefsPrefix))) {
      const std::string rest = ref.substr(kRefsPrefix.size());
      if (auto* i = item(rest.substr(0, rest.find('/')))) i->refs.emplace_back(ref, id);
    }
  std::vector<RecoveryItem> out;
  for (auto& [name, i] : items) out.push_back(std::move(i));
  std::stable_sort(out.begin(), out.end(), [](const RecoveryItem& a, const RecoveryItem& b) { return a.time < b.time; });
  return out;
}

PruneResult prune_recovery(const Workspace& ws, const HubLocation& hub, TimePoint before, bool dry_run) {
  PruneResult out;
  std::vector<std::pair<std::string, std::string>> refs;
  for (const auto& i : list_recovery(ws, hub)) {
    if (i.time >= before) continue;  // younger: kept
    if (i.folder) {
      if (!dry_run) ws.folder_if_exists(kRecoveryFolder)->remove_tree(i.name);
      out.folders.push_back(i.name);
    }
    refs.insert(refs.end(), i.refs.begin(), i.refs.end());
  }
  if (dry_run) {
    for (const auto& [ref, id] : refs) out.refs.push_back(ref);
  } else {
    out.refs = git_backend().delete_refs(hub.text, refs);
  }
  return out;
}

}  // namespace swarm
