// What salvage kept, listed and pruned (`swarm recovery list|prune`): the
// folders of .swarm/recovery/ and the hub's refs/recovery/ prefixes, each
// named <slot>-<time> (-2, -3... when taken). Only what has exactly that
// shape is ever listed or removed; anything else there is someone's.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "swarm/base/clock.h"
#include "swarm/git/hub_location.h"
#include "swarm/workspace/workspace.h"

namespace swarm {

struct RecoveryName {
  std::string slot;
  TimePoint time;
};
// The slot and time of "<slot>-20261122T100000.123Z" (or "...Z-2"); nullopt otherwise.
std::optional<RecoveryName> parse_recovery_name(std::string_view name);

struct RecoveryItem {
  std::string name;  // <slot>-<time>[-N]
  std::string slot;
  TimePoint time;
  bool folder = false;                                     // .swarm/recovery/<name>/
  std::vector<std::pair<std::string, std::string>> refs;  // refs/recovery/<name>/... in the hub, with their ids
};

// Everything kept, oldest first. The hub is read unless `with_hub` is false.
std::vector<RecoveryItem> list_recovery(const Workspace& ws, const HubLocation& hub, bool with_hub = true);

struct PruneResult {
  std::vector<std::string> folders;  // removed (or, dry run, that would be)
  std::vector<std::string> refs;
};
// Removes what is older than `before`: its folder (never through a link)
// and its hub refs (each only while it still points where it was listed).
PruneResult prune_recovery(const Workspace& ws, const HubLocation& hub, TimePoint before, bool dry_run);

}  // namespace swarm
