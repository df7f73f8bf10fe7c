// config.json read as a workspace's config (swarm/workspace/workspace.h's
// parse_config): what a good one gives, and each way it can be corrupt,
// named with the member at fault. No server, no folder: a pure function of
// the text and the workspace's root.
#include "swarm/workspace/workspace.h"

#include <doctest/doctest.h>

using namespace swarm;
using State = Workspace::ConfigFile::State;

namespace {

const std::filesystem::path kRoot = "/work/ws";

Workspace::ConfigFile parsed(const std::string& members) {
  return parse_config("{\"nats_url\":\"nats://127.0.0.1:4222\"" + members + "}", "/work/ws/.swarm/config.json", kRoot);
}

}  // namespace

TEST_CASE("Config_AGoodOneGivesItsValuesAndTheDefaults") {
  const auto file = parsed(",\"name\":\"app-1a2b3c\",\"ttl_ms\":120000,\"replicas\":3,\"embedded\":false,"
                           "\"require_review\":true,\"holds\":\"refuse\",\"ports\":\"20000-20999\","
                           "\"check\":\"make test\",\"blob_max_bytes\":1048576,\"hub\":\"hubs/app.git\"");
  REQUIRE_MESSAGE(file.state == State::good, file.problem);
  const WorkspaceConfig& c = file.config;
  CHECK(c.name == "app-1a2b3c");
  CHECK(c.ttl == std::chrono::minutes(2));
  CHECK(c.replicas == 3);
  CHECK_FALSE(c.embedded);
  CHECK(c.require_review);
  CHECK(c.check == "make test");
  CHECK(c.blob_max_bytes == 1048576);
  REQUIRE(c.ports);
  // A named workspace's buckets are its own; a relative hub is inside it.
  CHECK(c.bucket.find("app-1a2b3c") != std::string::npos);
  CHECK(c.hub == (kRoot / "hubs/app.git").string());
  // None named: the workspace's own hub.
  const auto plain = parsed("");
  REQUIRE_MESSAGE(plain.state == State::good, plain.problem);
  CHECK(plain.config.hub.find("hub.git") != std::string::npos);
  CHECK(plain.problem.empty());
}

TEST_CASE("Config_EachCorruptMemberIsNamed") {
  struct Case {
    std::string members, names;
  };
  const Case cases[] = {
      {",\"bucket\":7", "'bucket' is not a string"},
      {",\"name\":\"Not A Name\"", "'name'"},
      {",\"require_review\":\"yes\"", "'require_review'"},
      {",\"holds\":\"maybe\"", "'holds'"},
      {",\"blob_max_bytes\":0", "'blob_max_bytes'"},
      {",\"blob_store_max_bytes\":1e300", "'blob_store_max_bytes'"},
      {",\"check\":\"make 'test\"", "'check'"},
      {",\"embedded\":1", "'embedded'"},
      {",\"ttl_ms\":500", "'ttl_ms'"},
      {",\"ttl_ms\":1e300", "'ttl_ms'"},
      {",\"ttl_ms\":1500.5", "'ttl_ms'"},
      {",\"replicas\":6", "'replicas'"},
      {",\"ports\":\"9-1\"", "ports"},
      {",\"ports\":20", "'ports' is not a string"},
      {",\"lease_bucket\":\"a b\"", "a b"},
      {",\"hub\":\"../elsewhere.git\"", "leads out of the workspace"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.members);
    const auto file = parsed(c.members);
    CHECK(file.state == State::corrupt);
    CHECK(file.problem.find("/work/ws/.swarm/config.json is corrupt") != std::string::npos);
    CHECK(file.problem.find(c.names) != std::string::npos);
  }
  for (const char* text : {"", "[]", "{\"nats_url\":\"nats://a\"", "{\"bucket\":\"b\"}", "{\"nats_url\":\"\xff\"}"}) {
    CAPTURE(text);
    const auto file = parse_config(text, "config.json", kRoot);
    CHECK(file.state == State::corrupt);
    CHECK_FALSE(file.problem.empty());
  }
}
