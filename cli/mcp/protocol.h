// The Model Context Protocol as swarm mcp speaks it (cli/mcp/): the
// revisions it answers, JSON-RPC's error codes, and the methods that are
// the protocol's own (initialize, server/discover, ping, tools/list), not
// a tool's call.
#pragma once

#include <string>
#include <vector>

#include "cli/mcp/mcp_tools.h"
#include "swarm/base/json.h"

namespace cli::mcp {

// Opened by server/discover, named in each request's _meta.
inline constexpr const char* kModern = "2026-07-28";
// Opened by initialize.
inline constexpr const char* kLegacy = "2025-11-25";
inline constexpr const char* kVersionKey = "io.modelcontextprotocol/protocolVersion";

enum Code {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
  kUnsupportedVersion = -32022
};

// A JSON-RPC error, thrown by a handler; `data` optional.
struct RpcError {
  int code;
  std::string message;
  swarm::Json data;
};

// `name` of `object`, or null when it is no object or has none.
const cJSON* member(const cJSON* object, const char* name);

// The result of protocol method `name` (not tools/call), for a client of
// the modern revision or not; RpcError kMethodNotFound for one it is not.
swarm::Json answer_method(const std::string& name, const cJSON* params, bool modern, const std::vector<Tool>& tools);

}  // namespace cli::mcp
