// A workspace: a folder with a .swarm/ in it, its config.json, and where each
// thing lives under .swarm/ (see adr/0006-workspace-layout.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "swarm/base/port_range.h"
#include "swarm/base/safe_dir.h"
#include "swarm/base/token_watermark.h"
#include "swarm/base/workspace_names.h"
#include "swarm/git/hub_location.h"
#include "swarm/lease/lease.h"
#include "swarm/tasks/task.h"

namespace swarm {

// The session bucket and its TTL when `up` is not told otherwise.
inline constexpr const char* kDefaultSessionBucket = kLegacySessionBucket;
inline constexpr std::chrono::minutes kDefaultSessionTtl{5};
// A session TTL outside these is a typo: a dead agent would hold its slot
// (and its task lease, which has the session's TTL) for more than an hour,
// or a live one lose it between two renewals.
inline constexpr std::chrono::seconds kMinSessionTtl{1};
inline constexpr std::chrono::hours kMaxSessionTtl{1};

// What one blob (swarm blob put, a long message) may weigh unless `up
// --blob-max-bytes` says otherwise.
inline constexpr std::uint64_t kDefaultBlobMaxBytes = std::uint64_t(1) << 30;

// .swarm/config.json, written by `swarm up`. Zero values are the defaults.
enum class HoldPolicy { warn, refuse };
std::string_view to_string(HoldPolicy policy);
// "warn" or "refuse"; else bad_input naming it.
HoldPolicy parse_hold_policy(std::string_view text);

struct WorkspaceConfig {
  std::string nats_url;  // one URL or several, comma-separated
  // The workspace's own name on its server (`up --name`; adr/0049): every
  // bucket, stream and subject root it uses carries it. "" for a workspace
  // made before names, which keeps the shared names it was made with.
  std::string name;
  // What tells two workspaces that took one name apart: its hub's mark
  // (refs/swarm/workspace) and its task bucket's `_workspace` key hold it.
  std::string workspace_id;
  std::string bucket = kDefaultSessionBucket;
  // The hub: its absolute path, or its URL (checked by parse_config). A hub
  // inside the workspace is stored relative to it (a moved or copied
  // workspace keeps its own) and read back absolute.
  std::string hub;
  bool embedded = false;  // true when `swarm up` started the nats-server itself
  std::chrono::milliseconds ttl = kDefaultSessionTtl;
  int replicas = 1;
  std::string lease_bucket = kDefaultLeaseBucket;
  std::optional<PortRange> ports;  // `up --ports A-B`: what `join --ports K` takes blocks from
  // `up --check 'CMD ...'`: the check every land runs (unless --no-check),
  // as written; "" when none. Its words: check_command().
  std::string check;
  // The task queue's bucket (`swarm task`, `join --next`), and whether a
  // task closed `success` waits for a review before it lands
  // (`up --require-review`).
  std::string task_bucket = kDefaultTaskBucket;
  bool require_review = false;
  // What one blob (`swarm blob put`, a long message) may weigh
  // (`up --blob-max-bytes`); 0: the default, kDefaultBlobMaxBytes.
  std::uint64_t blob_max_bytes = 0;
  // What the blob store may hold in all (`up --blob-store-max-bytes`; set
  // by `up` to a share of the server's store when not given: adr/0051);
  // 0: none set (a workspace before the limit, until its next `up`).
  std::uint64_t blob_store_max_bytes = 0;
  std::uint64_t blob_max() const {
    const std::uint64_t each = blob_max_bytes > 0 ? blob_max_bytes : kDefaultBlobMaxBytes;
    return blob_store_max_bytes > 0 ? std::min(each, blob_store_max_bytes) : each;
  }
  // What `commit` does with paths another live slot holds exclusively
  // (`up --holds`): says so and journals it (warn), or commits nothing (refuse).
  HoldPolicy holds = HoldPolicy::warn;

  std::vector<std::string> check_command() const;
  // Where its records live on the server: its own names, or (made before
  // names) the buckets above and the shared streams.
  WorkspaceNames names() const;
  // Names the workspace `name` and its buckets after it.
  void take_name(const std::string& workspace_name);

  HubLocation hub_location() const { return parse_hub_location(hub, "/"); }
};

// The folders swarm keeps in .swarm/ (each a real directory of this user,
// reached through SafeDir: adr/0018).
inline constexpr const char* kSlotsFolder = "slots";
inline constexpr const char* kTrashFolder = "trash";
inline constexpr const char* kRecoveryFolder = "recovery";
inline constexpr const char* kLocksFolder = "locks";
inline constexpr const char* kNatsFolder = "nats";
// swarm serve's secret (0600): every request must carry it (adr/0025).
inline constexpr const char* kServeFolder = "serve";
inline constexpr const char* kServeTokenName = "token";
inline constexpr const char* kConfigName = "config.json";
// A slot folder's worktree.
inline constexpr const char* kWorktreeName = "wt";

// The crumbs swarm keeps in a slot folder beside its worktree (they hold no
// work: salvage leaves them out).
inline constexpr const char* kLeafPidName = "leaf.pid";
inline constexpr const char* kSessionBaseName = "session-base";
inline constexpr const char* kSalvageMarkName = "salvaging";

// The current folder, or none when it was removed (a shell left in a
// worktree that `swarm close` took away), never an exception.
std::optional<std::filesystem::path> current_folder();

class Workspace {
 public:
  // `explicit_dir` (from --workspace or $SWARM_WORKSPACE) when given, else the
  // nearest folder from `cwd` upwards that has a .swarm/. Throws
  // not_bootstrapped when there is none, or when `cwd` is none (the current
  // folder was removed: by `swarm close` of the worktree it was in, say).
  static Workspace find(const std::string& explicit_dir, const std::optional<std::filesystem::path>& cwd);
  // The workspace rooted at `root`, whether or not it exists yet (for `up`).
  static Workspace at(const std::filesystem::path& root);

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path swarm_dir() const { return root_ / ".swarm"; }
  std::filesystem::path config_file() const { return swarm_dir() / "config.json"; }
  std::filesystem::path hub_dir() const { return swarm_dir() / "hub.git"; }
  std::filesystem::path nats_dir() const { return swarm_dir() / "nats"; }
  std::filesystem::path slots_dir() const { return swarm_dir() / "slots"; }
  std::filesystem::path slot_dir(const std::string& slot) const { return slots_dir() / slot; }
  std::filesystem::path worktree(const std::string& slot) const { return slot_dir(slot) / "wt"; }
  std::filesystem::path pid_file(const std::string& slot) const { return slot_dir(slot) / kLeafPidName; }
  // The commit swarm/<slot> was at when the slot's current run of work began
  // (a join that made its worktree): close's artifact gate asks whether the
  // slot committed since.
  std::filesystem::path session_base(const std::string& slot) const { return slot_dir(slot) / kSessionBaseName; }
  // Made before a salvage starts moving the worktree's files out (adr/0016):
  // a worktree with it is half salvaged, never to be resumed.
  std::filesystem::path salvage_mark(const std::string& slot) const { return slot_dir(slot) / kSalvageMarkName; }
  std::filesystem::path recovery_dir() const { return swarm_dir() / "recovery"; }
  // Lock files (adr/0009): one per slot, for local work on its folder, and
  // one for `swarm up`. Slot names have no '.', so the two never collide.
  std::filesystem::path locks_dir() const { return swarm_dir() / "locks"; }
  std::filesystem::path slot_lock(const std::string& slot) const { return locks_dir() / ("slot." + slot); }
  std::filesystem::path up_lock() const { return locks_dir() / "up"; }
  // Where a slot folder goes, by one rename, once it is salvaged: removing
  // it from there may be interrupted, and is finished by anyone later.
  std::filesystem::path trash_dir() const { return swarm_dir() / "trash"; }

  // The paths above name things in messages, and are handed to programs
  // that take paths (libgit2, nats-server) once the folders on the way are
  // checked. Everything swarm itself opens, writes, moves or deletes in
  // .swarm/ goes through these (adr/0018).
  //
  // .swarm/ itself: not_bootstrapped when it is missing, bad_input when it
  // is a link or another user's.
  SafeDir swarm_folder() const;
  // A folder swarm keeps directly in .swarm/ (kSlotsFolder, ...): made when
  // missing, or nullopt when missing.
  SafeDir make_folder(const char* name, mode_t mode = 0755) const;
  std::optional<SafeDir> folder_if_exists(const char* name) const;
  // .swarm/slots/<slot>, nullopt when it is missing.
  std::optional<SafeDir> slot_folder(const std::string& slot) const;
  // .swarm/tokens.json: the ceiling of the tokens this host handed out
  // (see token_watermark.h), for the stores of every verb that grants.
  std::shared_ptr<const TokenWatermark> token_watermark() const;

  // config.json as it is on disk: there and good, missing, unreadable (the
  // file cannot be read), or corrupt (read, but not a config).
  struct ConfigFile {
    enum class State { good, missing, unreadable, corrupt } state = State::missing;
    WorkspaceConfig config;  // when good
    std::string problem;     // one sentence, naming the file, when not good
  };
  ConfigFile read_config() const;
  // The config when it is good; throws not_bootstrapped with the problem otherwise.
  WorkspaceConfig load_config() const;
  // Writes config.json atomically (temp file and rename), mode 0600 from
  // its first byte when it holds a secret.
  void save_config(const WorkspaceConfig& config) const;

 private:
  explicit Workspace(std::filesystem::path root) : root_(std::move(root)) {}
  std::filesystem::path root_;
};

// config.json's text read as a config (good or corrupt, with why); `file`
// names it in the problem, `root` is the workspace's folder: a relative hub
// is below it, and its .swarm/hub.git is the hub when the config names none.
Workspace::ConfigFile parse_config(const std::string& text, const std::string& file,
                                   const std::filesystem::path& root);

}  // namespace swarm
