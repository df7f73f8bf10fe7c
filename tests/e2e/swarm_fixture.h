// A workspace driven through the real `swarm` binary, as separate processes.
// By default it runs on a nats-server of the test's own (killed with the test);
// `embedded` makes `swarm up` start its own, stopped again by `swarm down`.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/nats_server.h"
#include "support/process.h"
#include "support/temp_dir.h"
#include "swarm/base/json.h"
#include "swarm/base/workspace_names.h"

namespace testing {

inline const std::map<std::string, std::string> kHostA = {{"SWARM_HOST", "host-a"}, {"SWARM_HOST_ID", "id-a"}};
inline const std::map<std::string, std::string> kHostB = {{"SWARM_HOST", "host-b"}, {"SWARM_HOST_ID", "id-b"}};

// The swarm binary the tests run: the build's, or $SWARM_TEST_BINARY (an
// older build, to see a new test fail on the code it was written against).
std::string swarm_binary();

class SwarmWorkspace {
 public:
  struct Options {
    bool embedded = false;
    bool up = true;              // run `swarm up` in the constructor
    std::vector<std::string> up_args;  // e.g. {"--ttl", "3s"}
    bool git_repo = false;       // make the workspace folder a git repository first
    bool own_server = true;      // start a nats-server of its own (not embedded): false for a cluster's
  };

  SwarmWorkspace() : SwarmWorkspace(Options{}) {}
  explicit SwarmWorkspace(Options options);
  ~SwarmWorkspace();

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path worktree(const std::string& slot) const { return root_ / ".swarm/slots" / slot / "wt"; }
  NatsServer* server() { return server_ ? &*server_ : nullptr; }
  // $HOME of every process it runs (its ~/.ssh, its git config).
  const std::filesystem::path& home() const { return dir_.path(); }
  // The checkout land checks onto `branch` run in: outside the workspace,
  // in the cache of its processes' $HOME (swarm/landing/check.h).
  std::filesystem::path land_checkout(const std::string& branch = "main") const;

  // Runs `swarm ARGS...` as host A (or with `env` on top), in `cwd` (default: the root).
  RunResult swarm(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = kHostA,
                  const std::filesystem::path& cwd = {}) const;
  Command command(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = kHostA,
                  const std::filesystem::path& cwd = {}) const;

  // Where the workspace's records live on its server (from its config.json):
  // tests that plant or read raw records use these names.
  swarm::WorkspaceNames names() const;

  // `git ARGS...` (the real git CLI) with stdout.
  RunResult git(const std::vector<std::string>& args, const std::filesystem::path& cwd = {}) const;

 private:
  TempDir dir_;
  std::filesystem::path root_;
  std::optional<NatsServer> server_;
  bool embedded_;
};

// Makes `ws` (set up) a workspace as swarm made them before names: its
// config.json without "name", on the shared buckets and streams (the next
// `swarm up` makes them). What an upgrade starts from.
void make_unnamed(const SwarmWorkspace& ws);

// `swarm up --nats-url <the cluster's URLs> ARGS...` as `host`, tried again
// every 500 ms for up to 40 s while a fresh cluster elects its JetStream
// leader, that is while `retry(exit)` says so (by default: any failure).
RunResult up_on_cluster(
    const SwarmWorkspace& ws, const NatsCluster& cluster, const std::vector<std::string>& args,
    const std::map<std::string, std::string>& host = kHostA,
    const std::function<bool(int)>& retry = [](int exit) { return exit != 0; });

// Rewrites the workspace's one inbox cursor record as a raw client could:
// `pattern` (a regex over its JSON) replaced by `replacement`, by CAS on the
// revision read. Throws unless there is exactly one cursor and the pattern matched.
void rewrite_the_cursor(SwarmWorkspace& ws, const std::string& pattern, const std::string& replacement);

// Parses stdout as one JSON document (empty Json when it is not).
swarm::Json json_of(const RunResult& r);
// A string field of a JSON object ("" when absent).
std::string field(const swarm::Json& json, const char* name);
double number(const swarm::Json& json, const char* name);

}  // namespace testing
