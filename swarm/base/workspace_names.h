// Where one workspace's records live on its NATS server: every bucket,
// stream and subject root it uses (adr/0049). A workspace made since names
// (config.json's "name") has its own of each, so several workspaces on one
// server and account see nothing of each other; one made before keeps the
// shared names it was made with, read as they are, never moved.
#pragma once

#include <string>
#include <string_view>

namespace swarm {

// The names made before workspaces had their own: the session bucket may be
// another (`--bucket`); streams, the cursor bucket and the blob store are
// shared by every such workspace of the server.
inline constexpr const char* kLegacySessionBucket = "swarm-sessions";
inline constexpr const char* kLegacyLeaseBucket = "swarm-leases";
inline constexpr const char* kLegacyTaskBucket = "swarm-tasks";
inline constexpr const char* kLegacyEventsStream = "swarm-events";
inline constexpr const char* kLegacyBusStream = "swarm-bus";
inline constexpr const char* kLegacyCursorBucket = "swarm-cursors";
inline constexpr const char* kLegacyBlobStore = "swarm-blobs";

struct WorkspaceNames {
  std::string workspace;  // "" for a workspace made before names
  std::string sessions;   // KV buckets
  std::string leases;
  std::string tasks;
  std::string cursors;
  std::string blobs;       // the object store
  std::string events;      // the journal's stream
  std::string event_root;  // its subjects' start, ending in '.': "swarm.events." or "swarm.<name>.events."
  std::string bus;         // the message bus's stream
  std::string bus_root;    // "swarm.bus." or "swarm.<name>.bus."

  bool named() const { return !workspace.empty(); }
  // The subjects each stream takes (root + ">").
  std::string event_subjects() const { return event_root + ">"; }
  std::string bus_subjects() const { return bus_root + ">"; }

  // A named workspace's: swarm-<name>-sessions, ..., streams swarm-<name>-events
  // on swarm.<name>.events.> and swarm-<name>-bus on swarm.<name>.bus.>.
  static WorkspaceNames of(std::string_view name);
  // A workspace made before names: its buckets as its config names them,
  // the rest shared.
  static WorkspaceNames legacy(std::string sessions, std::string leases, std::string tasks);
  // The legacy names with the default buckets: what verbs that need no
  // workspace use (`lease`, `lock` on --nats-url's server).
  static WorkspaceNames unnamed() { return legacy(kLegacySessionBucket, kLegacyLeaseBucket, kLegacyTaskBucket); }
};

// ^[a-z0-9][a-z0-9-]{0,31}$, and neither "events" nor "bus" (the second
// token of the shared streams' subjects: a workspace so named would overlap
// them). Lowercase: one store folder per stream, whatever the file system.
bool is_valid_workspace_name(std::string_view name);
// bad_input naming the value and the rule.
void require_workspace_name(std::string_view name);
// A name for a new workspace in folder `folder_name`: its letters and digits,
// lowercased (others as '-', at most 24), then '-' and 6 random hex digits,
// so two folders called alike on one server are still two workspaces.
std::string new_workspace_name(std::string_view folder_name);

}  // namespace swarm
