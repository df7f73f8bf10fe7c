// The nats-server a workspace runs on (adr/0052): `up` prefers the current
// release beside swarm over an older one on PATH, an explicit
// $SWARM_NATS_SERVER wins, and on an older server `up`, `swarm version` and
// `doctor` name what it lacks, never silently.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "e2e/swarm_fixture.h"

using namespace testing;

namespace {

const cJSON* member(const swarm::Json& doc, std::initializer_list<const char*> path) {
  const cJSON* at = doc.get();
  for (const char* name : path) at = cJSON_GetObjectItemCaseSensitive(at, name);
  return at;
}

std::string text_at(const swarm::Json& doc, std::initializer_list<const char*> path) {
  const cJSON* at = member(doc, path);
  return cJSON_IsString(at) ? at->valuestring : "";
}

std::vector<std::string> lacks_in(const cJSON* lacks) {
  std::vector<std::string> out;
  const cJSON* item = nullptr;
  cJSON_ArrayForEach(item, lacks) {
    const cJSON* what = cJSON_GetObjectItemCaseSensitive(item, "what");
    if (cJSON_IsString(what)) out.push_back(what->valuestring);
  }
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Debian's nats-server 2.9: the old server the setup installs.
std::string debian_server() {
  for (const char* p : {"/usr/sbin/nats-server", "/usr/bin/nats-server"})
    if (::access(p, X_OK) == 0) return p;
  return {};
}

// The release the setup builds beside the build tree's swarm.
std::filesystem::path release_beside_swarm() { return std::filesystem::path(SWARM_BINARY).parent_path() / "nats-server"; }

}  // namespace

TEST_CASE("ServerRelease_UpPrefersTheCurrentReleaseOverAnOlderOneOnPath") {
  if (::access(release_beside_swarm().c_str(), X_OK) != 0) {
    MESSAGE("skipped: no current release beside swarm (" << release_beside_swarm() << "): scripts/setup.sh builds it");
    return;
  }
  const std::string old = debian_server();
  REQUIRE_MESSAGE(!old.empty(), "Debian's nats-server is not installed");
  SwarmWorkspace ws({.embedded = true, .up = false});
  // PATH offers the old one first; nothing names a server explicitly.
  TempDir shims("swarm-old-path");
  std::filesystem::create_symlink(old, shims / "nats-server");
  std::map<std::string, std::string> env = kHostA;
  env["PATH"] = shims.path().string() + ":" + std::getenv("PATH");
  env["SWARM_NATS_SERVER"] = "";
  auto up = ws.swarm({"up", "--json"}, env);
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  auto doc = json_of(up);
  const std::string current = text_at(doc, {"server", "version"});
  CHECK(current != "");
  CHECK(current.rfind("2.9", 0) != 0);
  CHECK(text_at(doc, {"server", "sync"}) == "always");
  CHECK(text_at(doc, {"server", "program"}) == std::filesystem::canonical(release_beside_swarm()).string());
  CHECK(lacks_in(member(doc, {"server", "lacks"})).empty());
  CHECK(up.err.find("lacks") == std::string::npos);
  // `swarm version` says the same, and what up would start.
  auto version = ws.swarm({"--json", "version"}, env);
  REQUIRE_MESSAGE(version.exit == 0, version.err);
  auto v = json_of(version);
  CHECK(text_at(v, {"embedded_default", "from"}) == "beside swarm");
  CHECK(text_at(v, {"embedded_default", "version"}) == current);
  CHECK(text_at(v, {"current_nats_release"}) == current);
  CHECK(text_at(v, {"workspace", "server", "version"}) == current);
  auto doctor = ws.swarm({"--json", "doctor"}, env);
  CHECK_MESSAGE(doctor.exit == 0, (doctor.out + doctor.err));
  CHECK(text_at(json_of(doctor), {"durability", "level"}) == "synced");
  ws.swarm({"down", "--force"}, env);
}

TEST_CASE("ServerRelease_OnAnOlderServerUpVersionAndDoctorNameWhatItLacks") {
  const std::string old = debian_server();
  REQUIRE_MESSAGE(!old.empty(), "Debian's nats-server is not installed");
  SwarmWorkspace ws({.embedded = true, .up = false});
  std::map<std::string, std::string> env = kHostA;
  env["SWARM_NATS_SERVER"] = old;
  auto up = ws.swarm({"up", "--json"}, env);
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  auto doc = json_of(up);
  CHECK(text_at(doc, {"server", "version"}).rfind("2.9", 0) == 0);
  CHECK(text_at(doc, {"server", "sync"}) == "interval");
  const auto lacks = lacks_in(member(doc, {"server", "lacks"}));
  CHECK(has(lacks, "durability"));
  CHECK(has(lacks, "advisory"));
  CHECK(has(lacks, "expiry_markers"));
  CHECK(up.err.find("lacks durability") != std::string::npos);
  CHECK(up.err.find("syncs every write") != std::string::npos);  // the way out named
  auto version = ws.swarm({"version"}, env);
  REQUIRE_MESSAGE(version.exit == 0, version.err);
  CHECK(version.out.find("lacks durability") != std::string::npos);
  CHECK(version.out.find("synced about once a minute") != std::string::npos);
  auto doctor = ws.swarm({"--json", "doctor"}, env);
  auto d = json_of(doctor);
  CHECK(text_at(d, {"durability", "level"}) == "watermark");
  CHECK(has(lacks_in(member(d, {"durability", "lacks"})), "durability"));
  ws.swarm({"down", "--force"}, env);
}

TEST_CASE("ServerRelease_ABadServerVariableIsExit2BeforeAnythingIsMade") {
  SwarmWorkspace ws({.embedded = true, .up = false});
  std::map<std::string, std::string> env = kHostA;
  env["SWARM_NATS_SERVER"] = "/no/such/nats-server\x1b[31m";
  auto up = ws.swarm({"up"}, env);
  CHECK(up.exit == 2);
  CHECK(up.err.find("bad $SWARM_NATS_SERVER '/no/such/nats-server\\x1b[31m'") != std::string::npos);
  CHECK(up.err.find('\x1b') == std::string::npos);
  CHECK(!std::filesystem::exists(ws.root() / ".swarm"));
  // A folder is no program either.
  env["SWARM_NATS_SERVER"] = ws.root().string();
  CHECK(ws.swarm({"up"}, env).exit == 2);
  CHECK(!std::filesystem::exists(ws.root() / ".swarm"));
}

TEST_CASE("ServerRelease_AServerYouRunIsNamedWithWhatItsVersionLacks") {
  SwarmWorkspace ws({.up = false});  // a nats-server of its own, the leg's, given by --nats-url
  auto up = ws.swarm({"up", "--nats-url", ws.server()->url(), "--json"});
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  auto doc = json_of(up);
  const std::string version = text_at(doc, {"server", "version"});
  REQUIRE(version != "");
  CHECK(text_at(doc, {"server", "sync"}) == "unknown");
  CHECK(cJSON_IsNull(member(doc, {"server", "program"})));
  const bool old = version.rfind("2.9", 0) == 0;
  // Swarm cannot read a server's sync_interval: on 2.10+ that is no lack
  // (doctor says what to set); 2.9 cannot sync every write at all.
  CHECK(has(lacks_in(member(doc, {"server", "lacks"})), "durability") == old);
  CHECK((up.err.find("lacks durability") != std::string::npos) == old);
  auto doctor = ws.swarm({"--json", "doctor"});
  CHECK(text_at(json_of(doctor), {"durability", "level"}) == "unknown");
}

TEST_CASE("ServerRelease_AStoreANewerServerRanIsNeverGivenToAnOlderOne") {
  const std::string old = debian_server();
  if (::access(release_beside_swarm().c_str(), X_OK) != 0 || old.empty()) {
    MESSAGE("skipped: needs both the current release beside swarm and Debian's nats-server");
    return;
  }
  SwarmWorkspace ws({.embedded = true, .up = false});
  std::map<std::string, std::string> env = kHostA;
  env["SWARM_NATS_SERVER"] = release_beside_swarm().string();
  auto up = ws.swarm({"up"}, env);
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  REQUIRE(ws.swarm({"task", "add", "kept"}, env).exit == 0);
  REQUIRE(ws.swarm({"down", "--force"}, env).exit == 0);
  // The build tree gone, say: only the old server is there.
  env["SWARM_NATS_SERVER"] = old;
  auto older = ws.swarm({"up"}, env);
  CHECK(older.exit == 7);
  CHECK(older.err.find("last run by nats-server") != std::string::npos);
  CHECK(older.err.find("is older: it is not started on it") != std::string::npos);
  // The newer one takes it again, everything there.
  env["SWARM_NATS_SERVER"] = release_beside_swarm().string();
  auto again = ws.swarm({"up"}, env);
  REQUIRE_MESSAGE(again.exit == 0, again.err);
  CHECK(ws.swarm({"task", "list"}, env).out.find("kept") != std::string::npos);
  ws.swarm({"down", "--force"}, env);
}
