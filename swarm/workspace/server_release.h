// Which nats-server a workspace runs on, and what swarm cannot have there.
// `up` starts the newest nats-server it can find (the current release, which
// the setup builds beside swarm, before an older one on PATH), and `up`,
// `swarm version` and `doctor` name what an older or foreign server lacks:
// never silently weaker (adr/0052).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kv {
class Connection;
}

namespace swarm {

// The release the setup builds and the tests run as their default leg
// (scripts/nats-server.version), without its "v": "2.15.2".
std::string_view current_nats_release();

// Whether `version` ("2.9.10") is older than major.minor.patch; false when it
// cannot be read.
bool release_before(const std::string& version, int major, int minor, int patch = 0);
// Whether release `a` is older than release `b`; false when either cannot be read.
bool release_older(const std::string& a, const std::string& b);

// One thing swarm cannot have on a server: `what` is a fixed word scripts may
// match ("durability", "replicated_cas", "advisory"), `detail` says what it
// means for the workspace.
struct ServerLack {
  std::string what;
  std::string detail;
};

// How the server's writes reach its disk, as far as swarm can know it.
enum class ServerSync {
  always,   // the embedded server, started with `sync_interval: always`
  interval, // the embedded server on a release that cannot sync every write
  unknown,  // a server the user runs: its own configuration says
};

// What a workspace on nats-server `version` lacks ("" unknown: nothing said
// but durability, when swarm knows the server cannot sync every write).
std::vector<ServerLack> server_lacks(const std::string& version, ServerSync sync);

// A nats-server program `up` may start.
struct ServerProgram {
  std::string path;     // its real path
  std::string version;  // what its --version says ("" when it says nothing)
  std::string from;     // "$SWARM_NATS_SERVER", "beside swarm" or "PATH"
};

// What `program --version` says ("2.9.10"), "" when it does not say it within
// ten seconds.
std::string nats_server_version(const std::string& program);

// Refuses (bad_input, naming it) a $SWARM_NATS_SERVER that is set but names
// no program: `up` asks before it makes anything.
void require_valid_nats_server_variable();

// The nats-server `up` starts: $SWARM_NATS_SERVER when set (exit 2 naming it
// when it is no program), else the newest of the one beside swarm (its
// private folder, or the build tree's link) and the first on PATH; nullopt
// when there is none.
std::optional<ServerProgram> choose_nats_server();

// The server a workspace runs on, as `up`, `swarm version` and `doctor` show it.
struct WorkspaceServer {
  std::string version;  // what the server's greeting says
  std::string program;  // the embedded server's executable ("" for one the user runs)
  ServerSync sync = ServerSync::unknown;
  std::vector<ServerLack> lacks;
};

// What `nats` (connected to the workspace's server) runs; `embedded_dir` is
// the workspace's .swarm/nats when its server is the embedded one, else empty.
WorkspaceServer workspace_server(const kv::Connection& nats, const std::filesystem::path& embedded_dir);

}  // namespace swarm
