#include "swarm/workspace.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "swarm/error.h"
#include "swarm/json.h"

namespace swarm {

namespace fs = std::filesystem;

namespace {

fs::path absolute_clean(const fs::path& p) { return fs::weakly_canonical(fs::absolute(p)); }

}  // namespace

Workspace Workspace::find(const std::string& explicit_dir, const fs::path& cwd) {
  if (!explicit_dir.empty()) {
    fs::path root = absolute_clean(explicit_dir);
    if (!fs::is_directory(root / ".swarm"))
      throw Error(Errc::not_bootstrapped,
                  "no swarm workspace at " + root.string() + ": it has no .swarm/ folder");
    return Workspace(root);
  }
  fs::path start = absolute_clean(cwd);
  for (fs::path dir = start;; dir = dir.parent_path()) {
    if (fs::is_directory(dir / ".swarm")) return Workspace(dir);
    if (dir == dir.root_path() || dir.parent_path() == dir) break;
  }
  throw Error(Errc::not_bootstrapped, "no swarm workspace here: no .swarm/ folder in " + start.string() +
                                          " or any parent; pass --workspace DIR or set SWARM_WORKSPACE to the "
                                          "workspace's folder");
}

Workspace Workspace::at(const fs::path& root) { return Workspace(absolute_clean(root)); }

bool Workspace::has_config() const { return fs::exists(config_file()); }

WorkspaceConfig Workspace::load_config() const {
  std::ifstream in(config_file());
  if (!in)
    throw Error(Errc::not_bootstrapped, "workspace " + root_.string() + " is not set up: " +
                                            config_file().string() + " is missing");
  std::stringstream text;
  text << in.rdbuf();
  Json json = Json::parse(text.str());
  auto bad = [&](const std::string& why) {
    return Error(Errc::not_bootstrapped, "workspace config " + config_file().string() + " is unreadable: " + why);
  };
  if (!json || !cJSON_IsObject(json.get())) throw bad("not a JSON object");
  WorkspaceConfig config;
  auto str = [&](const char* name, std::string* out) {
    const cJSON* item = cJSON_GetObjectItemCaseSensitive(json.get(), name);
    if (item == nullptr) return;
    if (!cJSON_IsString(item)) throw bad(std::string("'") + name + "' is not a string");
    *out = item->valuestring;
  };
  str("nats_url", &config.nats_url);
  str("bucket", &config.bucket);
  str("hub", &config.hub);
  str("lease_bucket", &config.lease_bucket);
  if (const cJSON* item = cJSON_GetObjectItemCaseSensitive(json.get(), "embedded")) {
    if (!cJSON_IsBool(item)) throw bad("'embedded' is not true or false");
    config.embedded = cJSON_IsTrue(item);
  }
  if (const cJSON* item = cJSON_GetObjectItemCaseSensitive(json.get(), "ttl_ms")) {
    if (!cJSON_IsNumber(item) || item->valuedouble < 1000) throw bad("'ttl_ms' is not a TTL of 1s or more");
    config.ttl = std::chrono::milliseconds(static_cast<long long>(item->valuedouble));
  }
  if (const cJSON* item = cJSON_GetObjectItemCaseSensitive(json.get(), "replicas")) {
    if (!cJSON_IsNumber(item) || item->valuedouble < 1 || item->valuedouble > 5) throw bad("'replicas' is not 1 to 5");
    config.replicas = static_cast<int>(item->valuedouble);
  }
  if (config.nats_url.empty()) throw bad("'nats_url' is missing");
  if (config.hub.empty()) config.hub = hub_dir().string();
  return config;
}

void Workspace::save_config(const WorkspaceConfig& config) const {
  Json json = Json::object();
  json.set("nats_url", config.nats_url);
  json.set("bucket", config.bucket);
  json.set("hub", config.hub);
  json.set("embedded", config.embedded);
  json.set("ttl_ms", static_cast<std::int64_t>(config.ttl.count()));
  json.set("replicas", config.replicas);
  json.set("lease_bucket", config.lease_bucket);
  write_file_atomically(config_file(), json.dump_pretty() + "\n");
}

void write_file_atomically(const fs::path& path, const std::string& text) {
  fs::path temp = path;
  temp += ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw Error(Errc::internal, "cannot write " + temp.string());
  }
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (ec) {
    fs::remove(temp, ec);
    throw Error(Errc::internal, "cannot replace " + path.string() + ": " + ec.message());
  }
}

}  // namespace swarm
