#include "swarm/base/workspace_names.h"

#include <cstdio>

#include "swarm/base/error.h"
#include "swarm/base/random.h"
#include "swarm/base/text.h"

namespace swarm {

namespace {

constexpr std::size_t kMaxWorkspaceName = 32;
constexpr std::size_t kMaxFolderPart = 24;

bool name_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

}  // namespace

WorkspaceNames WorkspaceNames::of(std::string_view name) {
  const std::string n(name);
  WorkspaceNames out;
  out.workspace = n;
  out.sessions = "swarm-" + n + "-sessions";
  out.leases = "swarm-" + n + "-leases";
  out.tasks = "swarm-" + n + "-tasks";
  out.cursors = "swarm-" + n + "-cursors";
  out.blobs = "swarm-" + n + "-blobs";
  out.events = "swarm-" + n + "-events";
  out.event_root = "swarm." + n + ".events.";
  out.bus = "swarm-" + n + "-bus";
  out.bus_root = "swarm." + n + ".bus.";
  return out;
}

WorkspaceNames WorkspaceNames::legacy(std::string sessions, std::string leases, std::string tasks) {
  WorkspaceNames out;
  out.sessions = std::move(sessions);
  out.leases = std::move(leases);
  out.tasks = std::move(tasks);
  out.cursors = kLegacyCursorBucket;
  out.blobs = kLegacyBlobStore;
  out.events = kLegacyEventsStream;
  out.event_root = "swarm.events.";
  out.bus = kLegacyBusStream;
  out.bus_root = "swarm.bus.";
  return out;
}

bool is_valid_workspace_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxWorkspaceName || !name_char(name.front())) return false;
  for (char c : name)
    if (!name_char(c) && c != '-') return false;
  return name != "events" && name != "bus";
}

void require_workspace_name(std::string_view name) {
  if (is_valid_workspace_name(name)) return;
  throw Error(Errc::bad_input, "bad workspace name '" + printable(name.substr(0, 80)) +
                                   "': a workspace name is 1 to 32 lowercase letters, digits or '-', starting with "
                                   "a letter or digit, and not 'events' or 'bus'");
}

std::string new_workspace_name(std::string_view folder_name) {
  std::string part;
  for (char c : folder_name) {
    if (part.size() == kMaxFolderPart) break;
    const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    if (name_char(lower)) part += lower;
    else if (!part.empty() && part.back() != '-') part += '-';
  }
  while (!part.empty() && part.back() == '-') part.pop_back();
  if (part.empty()) part = "ws";
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, "%06llx",
                static_cast<unsigned long long>(thread_random()() & 0xffffffULL));
  return part + "-" + suffix;
}

}  // namespace swarm
