#include "swarm/workspace/workspace.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "kv/bucket.h"
#include "kv/connection.h"
#include "swarm/base/error.h"
#include "swarm/base/json.h"
#include "swarm/base/text.h"
#include "swarm/base/words.h"

namespace swarm {

namespace fs = std::filesystem;

namespace {

fs::path absolute_clean(const fs::path& p) { return fs::weakly_canonical(fs::absolute(p)); }

// A config.json larger than this is not one swarm wrote.
constexpr std::size_t kMaxConfigBytes = 64 * 1024;

}  // namespace

std::optional<fs::path> current_folder() {
  std::error_code ec;
  fs::path here = fs::current_path(ec);
  if (ec || here.empty()) return std::nullopt;
  return here;
}

namespace {

// Where a workspace comes from, said without telling an agent to make one.
constexpr const char* kMadeBy = "(a workspace is made once, in its folder, by whoever runs the fleet: `swarm up`)";

// Where a verb run in a removed folder stands, and what it can do.
constexpr const char* kNoFolder =
    "the current folder no longer exists (a worktree `swarm close` removed?): cd to the workspace, or pass "
    "--workspace DIR or set SWARM_WORKSPACE";

}  // namespace

Workspace Workspace::find(const std::string& explicit_dir, const std::optional<fs::path>& cwd) {
  // A .swarm/ that is a link or another user's is refused (exit 2), never used.
  if (!explicit_dir.empty()) {
    const fs::path given(explicit_dir);
    if (given.is_relative() && !cwd)
      throw Error(Errc::not_bootstrapped, std::string("--workspace ") + explicit_dir + " is relative, and " + kNoFolder);
    fs::path root = absolute_clean(given.is_relative() ? *cwd / given : given);
    if (!SafeDir::open_if_exists(root / ".swarm"))
      throw Error(Errc::not_bootstrapped, "no swarm workspace at " + root.string() + ": it has no .swarm/ folder " +
                                              kMadeBy);
    return Workspace(root);
  }
  if (!cwd) throw Error(Errc::not_bootstrapped, std::string("no swarm workspace here: ") + kNoFolder);
  fs::path start = absolute_clean(*cwd);
  for (fs::path dir = start;; dir = dir.parent_path()) {
    if (SafeDir::open_if_exists(dir / ".swarm")) return Workspace(dir);
    if (dir == dir.root_path() || dir.parent_path() == dir) break;
  }
  throw Error(Errc::not_bootstrapped, "no swarm workspace here: no .swarm/ folder in " + start.string() +
                                          " or any parent; pass --workspace DIR or set SWARM_WORKSPACE to the "
                                          "workspace's folder " + kMadeBy);
}

Workspace Workspace::at(const fs::path& root) { return Workspace(absolute_clean(root)); }

SafeDir Workspace::swarm_folder() const {
  auto dir = SafeDir::open_if_exists(swarm_dir());
  if (!dir) throw Error(Errc::not_bootstrapped, "workspace " + root_.string() + " has no .swarm/ folder");
  return std::move(*dir);
}

SafeDir Workspace::make_folder(const char* name, mode_t mode) const { return swarm_folder().make_folder(name, mode); }

std::optional<SafeDir> Workspace::folder_if_exists(const char* name) const {
  return swarm_folder().folder_if_exists(name);
}

std::optional<SafeDir> Workspace::slot_folder(const std::string& slot) const {
  auto slots = folder_if_exists(kSlotsFolder);
  if (!slots) return std::nullopt;
  return slots->folder_if_exists(slot);
}

std::vector<std::string> WorkspaceConfig::check_command() const {
  if (check.empty()) return {};
  return split_words(check, "check");
}

WorkspaceNames WorkspaceConfig::names() const {
  WorkspaceNames out = name.empty() ? WorkspaceNames::legacy(bucket, lease_bucket, task_bucket) : WorkspaceNames::of(name);
  // A named workspace's buckets are its own; --bucket still names another
  // session bucket within its streams.
  out.sessions = bucket;
  out.leases = lease_bucket;
  out.tasks = task_bucket;
  return out;
}

void WorkspaceConfig::take_name(const std::string& workspace_name) {
  require_workspace_name(workspace_name);
  const WorkspaceNames own = WorkspaceNames::of(workspace_name);
  name = workspace_name;
  bucket = own.sessions;
  lease_bucket = own.leases;
  task_bucket = own.tasks;
}

namespace {

// Where config.json's hub is kept for a workspace whose own hub is at
// <root>/.swarm/hub.git: a path inside the workspace relative to it.
constexpr const char* kOwnHub = ".swarm/hub.git";

}  // namespace

std::shared_ptr<const TokenWatermark> Workspace::token_watermark() const {
  return std::make_shared<const TokenWatermark>(swarm_folder(), make_folder(kLocksFolder));
}

namespace {

// The config's members, each checked as it is read: a problem found, or "".
std::string read_members(const Json& json, WorkspaceConfig& config) {
  std::string problem;
  auto str = [&](const char* name, std::string* value) {
    const cJSON* item = cJSON_GetObjectItemCaseSensitive(json.get(), name);
    if (item == nullptr) return;
    if (!cJSON_IsString(item)) problem = std::string("'") + name + "' is not a string";
    else *value = item->valuestring;
  };
  str("nats_url", &config.nats_url);
  str("name", &config.name);
  str("workspace_id", &config.workspace_id);
  if (!config.name.empty()) {
    // Its buckets default to its own names (a config that lists them says the same).
    if (!is_valid_workspace_name(config.name)) return "'name' is not a workspace name";
    config.take_name(config.name);
  }
  str("bucket", &config.bucket);
  str("hub", &config.hub);
  str("lease_bucket", &config.lease_bucket);
  str("task_bucket", &config.task_bucket);
  str("check", &config.check);
  if (const cJSON* item = cJSON_GetObjectItemCaseSensitive(json.get(), "require_review")) {
    if (!cJSON_IsBool(item)) problem = "'require_review' is not true or false";
    else config.require_review = cJSON_IsTrue(item);
  }
  if (const cJSON* item = cJSON_GetObjectItemCaseSensitive(json.get(), "holds")) {
    if (!cJSON_IsString(item) || (std::string_view(item->valuestring) != "warn" &&
                                  std::string_view(item->valuestring) != "refuse"))
      problem = "'holds' is not \"warn\" or \"refuse\"";
    else config.holds = parse_hold_policy(item->valuestring);
  }
  for (const auto& [key, value] : {std::pair<const char*, std::uint64_t*>{"blob_max_bytes", &config.blob_max_bytes},
                                    {"blob_store_max_bytes", &config.blob_store_max_bytes}})
    if (const cJSON* item = cJSON_GetObjectItemCaseSensitive(json.get(), key)) {
      if (!cJSON_IsNumber(item) || item->valuedouble < 1 || item->valuedouble > 9.0e15)
        problem = std::string("'") + key + "' is not a positive whole number";
      else *value = static_cast<std::uint64_t>(item->valuedouble);
    }
  if (!problem.empty()) return problem;
  try {
    config.check_command();
  } catch (const Error& e) {
    return std::string("'check': ") + e.what();
  }
  if (const cJSON* item = cJSON_GetObjectItemCaseSensitive(json.get(), "embedded")) {
    if (!cJSON_IsBool(item)) return "'embedded' is not true or false";
    config.embedded = cJSON_IsTrue(item);
  }
  // Numbers are range-checked before they are converted: 1e300 is no TTL.
  const double min_ttl = std::chrono::duration<double, std::milli>(kMinSessionTtl).count();
  const double max_ttl = std::chrono::duration<double, std::milli>(kMaxSessionTtl).count();
  if (const cJSON* item = cJSON_GetObjectItemCaseSensitive(json.get(), "ttl_ms")) {
    if (!cJSON_IsNumber(item) || !(item->valuedouble >= min_ttl && item->valuedouble <= max_ttl) ||
        item->valuedouble != std::floor(item->valuedouble))
      return "'ttl_ms' is not a whole number of milliseconds from 1s to 1h";
    config.ttl = std::chrono::milliseconds(static_cast<long long>(item->valuedouble));
  }
  if (const cJSON* item = cJSON_GetObjectItemCaseSensitive(json.get(), "replicas")) {
    if (!cJSON_IsNumber(item) || !(item->valuedouble >= 1 && item->valuedouble <= 5) ||
        item->valuedouble != std::floor(item->valuedouble))
      return "'replicas' is not 1 to 5";
    config.replicas = static_cast<int>(item->valuedouble);
  }
  if (const cJSON* item = cJSON_GetObjectItemCaseSensitive(json.get(), "ports")) {
    try {
      if (!cJSON_IsString(item)) throw Error(Errc::bad_input, "'ports' is not a string");
      config.ports = parse_port_range(item->valuestring, "'ports'");
    } catch (const Error& e) {
      return e.what();
    }
  }
  return {};
}

// Where the config points: its NATS, its buckets' names, and its hub (a
// relative path is inside the workspace, wherever it now is). The problem, or "".
std::string resolve_places(WorkspaceConfig& config, const std::filesystem::path& root) {
  if (config.nats_url.empty()) return "'nats_url' is missing";
  try {
    kv::require_valid_urls(config.nats_url);
    kv::require_valid_bucket_name(config.bucket);
    kv::require_valid_bucket_name(config.lease_bucket);
    kv::require_valid_bucket_name(config.task_bucket);
  } catch (const kv::Error& e) {
    return e.what();
  }
  if (config.hub.empty()) config.hub = kOwnHub;
  try {
    if (!config.hub_location().remote() && fs::path(config.hub).is_relative()) {
      // Inside the workspace, wherever it now is.
      const fs::path relative = fs::path(config.hub).lexically_normal();
      if (relative.empty() || *relative.begin() == "..")
        return "'hub' is a relative path that leads out of the workspace";
      config.hub = (root / relative).string();
    }
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

Workspace::ConfigFile parse_config(const std::string& text, const std::string& file,
                                   const std::filesystem::path& root) {
  using State = Workspace::ConfigFile::State;
  Workspace::ConfigFile out;
  out.state = State::corrupt;
  auto bad = [&](const std::string& why) {
    out.problem = "the workspace config " + file + " is corrupt: " + why;
    return out;
  };
  // JSON is UTF-8: a config that is not would not be written back as it was.
  if (auto problem = strict_json_problem(text); !problem.empty()) return bad(problem);
  Json json = Json::parse(text);
  if (!json || !cJSON_IsObject(json.get())) return bad("not a JSON object");
  WorkspaceConfig& config = out.config;
  if (auto problem = read_members(json, config); !problem.empty()) return bad(problem);
  if (auto problem = resolve_places(config, root); !problem.empty()) return bad(problem);
  out.state = State::good;
  out.problem.clear();
  return out;
}

Workspace::ConfigFile Workspace::read_config() const {
  using State = ConfigFile::State;
  ConfigFile out;
  const std::string file = config_file().string();
  SafeDir dir = swarm_folder();
  if (dir.kind(kConfigName) == EntryKind::missing) {
    out.problem = "workspace " + root_.string() + " is not set up: " + file + " is missing";
    return out;
  }
  std::string why;
  auto text = dir.read_file(kConfigName, kMaxConfigBytes, &why);
  if (!text) {
    out.state = State::unreadable;
    out.problem = "cannot read the workspace config " + file + ": " + why;
    return out;
  }
  out = parse_config(*text, file, root_);
  // A config written before hubs were named relative to the workspace: a
  // hub of .swarm/hub.git that is not there (the workspace was moved) is
  // this workspace's own, when it has one.
  std::error_code ec;
  if (out.state == ConfigFile::State::good && !out.config.hub_location().remote()) {
    const fs::path hub(out.config.hub);
    if (hub != hub_dir() && hub.filename() == "hub.git" && hub.parent_path().filename() == ".swarm" &&
        !fs::exists(hub, ec) && fs::exists(hub_dir(), ec))
      out.config.hub = hub_dir().string();
  }
  return out;
}

WorkspaceConfig Workspace::load_config() const {
  ConfigFile file = read_config();
  if (file.state != ConfigFile::State::good) throw Error(Errc::not_bootstrapped, file.problem);
  return file.config;
}

void Workspace::save_config(const WorkspaceConfig& config) const {
  Json json = Json::object();
  json.set("nats_url", config.nats_url);
  if (!config.name.empty()) json.set("name", config.name);
  if (!config.workspace_id.empty()) json.set("workspace_id", config.workspace_id);
  json.set("bucket", config.bucket);
  // The workspace's own hub by its place in the workspace: a moved or
  // copied workspace keeps using its own.
  const fs::path hub_path(config.hub);
  const bool own = !config.hub_location().remote() && hub_path.is_absolute() &&
                   hub_path.lexically_normal() == hub_dir().lexically_normal();
  json.set("hub", own ? std::string(kOwnHub) : config.hub);
  json.set("embedded", config.embedded);
  json.set("ttl_ms", static_cast<std::int64_t>(config.ttl.count()));
  json.set("replicas", config.replicas);
  json.set("lease_bucket", config.lease_bucket);
  json.set("task_bucket", config.task_bucket);
  if (config.require_review) json.set("require_review", true);
  if (config.blob_max_bytes > 0) json.set("blob_max_bytes", config.blob_max_bytes);
  if (config.blob_store_max_bytes > 0) json.set("blob_store_max_bytes", config.blob_store_max_bytes);
  if (config.holds != HoldPolicy::warn) json.set("holds", to_string(config.holds));
  if (config.ports) json.set("ports", config.ports->text());
  if (!config.check.empty()) json.set("check", config.check);
  // A URL with a password or token in it is for this user's eyes only.
  HubLocation hub = config.hub_location();
  const bool secret = hub.shown() != hub.text || kv::redact_urls(config.nats_url) != config.nats_url;
  // Synced: a crash must not leave a new workspace with an empty config.json.
  swarm_folder().write_file(kConfigName, json.dump_pretty() + "\n", secret ? 0600 : 0644, true);
}

std::string_view to_string(HoldPolicy policy) { return policy == HoldPolicy::refuse ? "refuse" : "warn"; }

HoldPolicy parse_hold_policy(std::string_view text) {
  if (text == "warn") return HoldPolicy::warn;
  if (text == "refuse") return HoldPolicy::refuse;
  throw Error(Errc::bad_input, "bad --holds '" + printable(text.substr(0, 40)) + "': use warn or refuse");
}

}  // namespace swarm
