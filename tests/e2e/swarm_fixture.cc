#include "e2e/swarm_fixture.h"

#include "swarm/base/text.h"

#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <thread>

#include "kv/bucket.h"
#include "kv/connection.h"
#include "swarm/workspace/workspace.h"

namespace testing {

std::string swarm_binary() {
  const char* other = std::getenv("SWARM_TEST_BINARY");
  return other != nullptr && *other != '\0' ? other : SWARM_BINARY;
}

SwarmWorkspace::SwarmWorkspace(Options options) : dir_("swarm-cli"), root_(dir_.path() / "ws"), embedded_(options.embedded) {
  std::filesystem::create_directories(root_);
  if (options.git_repo) {
    git({"init", "-q", "-b", "trunk"});
    write_file(root_ / "README.txt", "the workspace's own file\n");
    git({"add", "README.txt"});
    git({"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "workspace commit"});
  }
  if (!embedded_ && options.own_server) server_.emplace();
  if (!options.up) return;
  std::vector<std::string> args = {"up"};
  if (server_) args.insert(args.end(), {"--nats-url", server_->url()});
  args.insert(args.end(), options.up_args.begin(), options.up_args.end());
  auto r = swarm(args);
  if (r.exit != 0) throw std::runtime_error("swarm up failed: " + r.err);
}

SwarmWorkspace::~SwarmWorkspace() {
  if (!embedded_) return;
  swarm({"down"});
  // Belt and braces: never leave a server behind, even if down failed.
  std::ifstream in(root_ / ".swarm/nats/nats.pid");
  long pid = 0;
  if (in >> pid && pid > 0) kill(static_cast<pid_t>(pid), SIGKILL);
}

Command SwarmWorkspace::command(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                                const std::filesystem::path& cwd) const {
  Command c;
  c.args = {swarm_binary()};
  c.args.insert(c.args.end(), args.begin(), args.end());
  c.env = env;
  c.env["SWARM_WORKSPACE"] = root_.string();
  c.env["HOME"] = dir_.path().string();  // no user git config, host-id file in the temp dir
  c.env["XDG_CONFIG_HOME"] = (dir_.path() / "config").string();
  c.env["NATS_URL"] = "";  // unset: the workspace's config decides
  c.cwd = cwd.empty() ? root_ : cwd;
  return c;
}

RunResult SwarmWorkspace::swarm(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                                const std::filesystem::path& cwd) const {
  return run(command(args, env, cwd));
}

void rewrite_the_cursor(SwarmWorkspace& ws, const std::string& pattern, const std::string& replacement) {
  auto nats = kv::Connection::connect({.urls = {ws.server()->url()}});
  auto cursors = kv::Bucket::open(nats, ws.names().cursors);
  auto keys = cursors.keys();
  if (keys.size() != 1) throw std::runtime_error("the workspace has " + std::to_string(keys.size()) + " cursors, not one");
  auto entry = cursors.get(keys[0]);
  if (!entry) throw std::runtime_error("the cursor " + keys[0] + " went away");
  const std::string rewritten = std::regex_replace(entry->value, std::regex(pattern), replacement);
  if (rewritten == entry->value) throw std::runtime_error("the cursor record has no " + pattern + ": " + entry->value);
  cursors.update(keys[0], rewritten, entry->revision);
}

void make_unnamed(const SwarmWorkspace& ws) {
  const auto file = ws.root() / ".swarm/config.json";
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  swarm::Json config = swarm::Json::parse(text);
  if (!config) throw std::runtime_error("make_unnamed: no config.json in " + ws.root().string());
  cJSON_DeleteItemFromObjectCaseSensitive(config.get(), "name");
  cJSON_DeleteItemFromObjectCaseSensitive(config.get(), "workspace_id");
  // Its hub never had the mark a named workspace's has.
  ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "update-ref", "-d", "refs/swarm/workspace"});
  config.set("bucket", swarm::kLegacySessionBucket)
      .set("lease_bucket", swarm::kLegacyLeaseBucket)
      .set("task_bucket", swarm::kLegacyTaskBucket);
  std::ofstream(file) << config.dump_pretty() << "\n";
}

swarm::WorkspaceNames SwarmWorkspace::names() const {
  return swarm::Workspace::at(root_).load_config().names();
}

RunResult SwarmWorkspace::git(const std::vector<std::string>& args, const std::filesystem::path& cwd) const {
  Command c;
  c.args = {"/usr/bin/git"};
  c.args.insert(c.args.end(), args.begin(), args.end());
  c.cwd = cwd.empty() ? root_ : cwd;
  c.env["HOME"] = dir_.path().string();
  return run(c);
}

RunResult up_on_cluster(const SwarmWorkspace& ws, const NatsCluster& cluster, const std::vector<std::string>& args,
                        const std::map<std::string, std::string>& host, const std::function<bool(int)>& retry) {
  std::vector<std::string> full = {"up", "--nats-url", cluster.urls()};
  full.insert(full.end(), args.begin(), args.end());
  // Replicas on a leg whose servers are older than 2.10 need saying so (the
  // refusal itself is Cluster_ReplicasNeedServers2_10UnlessAccepted's).
  if (kv::version_before(kv::server_version_at(cluster.url_list().front(), std::chrono::seconds(2)), 2, 10))
    full.push_back("--accept-unsafe-server");
  RunResult r;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
  do {
    r = ws.swarm(full, host);
    if (!retry(r.exit)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  } while (std::chrono::steady_clock::now() < deadline);
  return r;
}

swarm::Json json_of(const RunResult& r) { return swarm::Json::parse(r.out); }

std::string field(const swarm::Json& json, const char* name) {
  if (!json) return "";
  const cJSON* item = cJSON_GetObjectItemCaseSensitive(json.get(), name);
  return cJSON_IsString(item) ? item->valuestring : "";
}

double number(const swarm::Json& json, const char* name) {
  if (!json) return -1;
  const cJSON* item = cJSON_GetObjectItemCaseSensitive(json.get(), name);
  return cJSON_IsNumber(item) ? item->valuedouble : -1;
}

std::filesystem::path SwarmWorkspace::land_checkout(const std::string& branch) const {
  const std::string root = std::filesystem::weakly_canonical(root_).string();
  return home() / ".cache/swarm/land" / (root_.filename().string() + "-" + swarm::stable_hash_hex(root)) /
         ("onto-" + branch);
}

}  // namespace testing
