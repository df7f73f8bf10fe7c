#include "cli/verbs/documents/server.h"

#include "swarm/base/text.h"

namespace cli {

namespace {

std::string_view sync_word(swarm::ServerSync sync) {
  switch (sync) {
    case swarm::ServerSync::always: return "always";
    case swarm::ServerSync::interval: return "interval";
    case swarm::ServerSync::unknown: break;
  }
  return "unknown";
}

}  // namespace

std::string server_line(const swarm::WorkspaceServer& server) {
  std::string line = "nats-server " + (server.version.empty() ? std::string("(version unknown)") : server.version);
  if (!server.program.empty()) line += " (" + swarm::printable(server.program) + ")";
  switch (server.sync) {
    case swarm::ServerSync::always: return line + ", every acknowledged write on disk before its answer";
    case swarm::ServerSync::interval: return line + ", synced about once a minute";
    case swarm::ServerSync::unknown: break;
  }
  return line + ", run by you: its own configuration says when it syncs";
}

swarm::Json server_json(const swarm::WorkspaceServer& server) {
  swarm::Json doc = swarm::Json::object();
  doc.set("version", server.version);
  if (server.program.empty()) doc.set_null("program");
  else doc.set("program", server.program);
  doc.set("sync", std::string(sync_word(server.sync)));
  doc.set("lacks", lacks_json(server.lacks));
  return doc;
}

swarm::Json lacks_json(const std::vector<swarm::ServerLack>& lacks) {
  swarm::Json out = swarm::Json::array();
  for (const auto& lack : lacks) {
    swarm::Json item = swarm::Json::object();
    item.set("what", lack.what).set("detail", lack.detail);
    out.push(std::move(item));
  }
  return out;
}

}  // namespace cli
