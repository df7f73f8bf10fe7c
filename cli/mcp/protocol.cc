#include "cli/mcp/protocol.h"

#include "cli/verbs/version.h"
#include "swarm/base/text.h"

namespace cli::mcp {

namespace {

// Earlier revisions a client may open with; the answer is the one it asked for.
const char* const kLegacyVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

swarm::Json server_info() {
  swarm::Json info = swarm::Json::object();
  info.set("name", "swarm").set("version", std::string(kProgramVersion).substr(6));
  return info;
}

swarm::Json capabilities() {
  swarm::Json tools = swarm::Json::object();
  tools.set("listChanged", false);
  swarm::Json caps = swarm::Json::object();
  caps.set("tools", std::move(tools));
  return caps;
}

const char* instructions() {
  return "swarm coordinates coding agents on one workspace: join a slot (its session token is your handle; "
         "pass it as session), commit, sync, hold the paths you edit, send and read messages, close, land. "
         "Renew within the session's TTL (commit and sync renew too).";
}

}  // namespace

const cJSON* member(const cJSON* object, const char* name) {
  return cJSON_IsObject(object) ? cJSON_GetObjectItemCaseSensitive(object, name) : nullptr;
}

swarm::Json answer_method(const std::string& name, const cJSON* params, bool modern, const std::vector<Tool>& tools) {
  if (name == "initialize") {
    const cJSON* asked = member(params, "protocolVersion");
    std::string version = kLegacy;
    for (const char* v : kLegacyVersions)
      if (cJSON_IsString(asked) && asked->valuestring == std::string(v)) version = v;
    swarm::Json r = swarm::Json::object();
    r.set("protocolVersion", version).set("capabilities", capabilities()).set("serverInfo", server_info())
        .set("instructions", instructions());
    return r;
  }
  if (name == "server/discover") {
    swarm::Json meta = swarm::Json::object();
    meta.set("io.modelcontextprotocol/serverInfo", server_info());
    swarm::Json r = swarm::Json::object();
    r.set("supportedVersions", swarm::Json::strings({kModern, kLegacy})).set("capabilities", capabilities())
        .set("instructions", instructions()).set("ttlMs", 0).set("cacheScope", "private")
        .set("_meta", std::move(meta));
    return r;
  }
  if (name == "ping") return swarm::Json::object();
  if (name == "tools/list") {
    swarm::Json list = swarm::Json::array();
    for (const auto& t : tools) {
      swarm::Json tool = swarm::Json::object();
      tool.set("name", t.name).set("description", t.description)
          .set("inputSchema", swarm::Json::copy(t.input_schema.get()))
          .set("outputSchema", swarm::Json::copy(t.output_schema.get()));
      list.push(std::move(tool));
    }
    swarm::Json r = swarm::Json::object();
    r.set("tools", std::move(list));
    if (modern) r.set("ttlMs", 0).set("cacheScope", "private");
    return r;
  }
  throw RpcError{kMethodNotFound, "Method not found", swarm::Json::parse("\"" + swarm::printable(name) + "\"")};
}

}  // namespace cli::mcp
