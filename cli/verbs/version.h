// swarm's version, as `swarm --version`, `swarm version` and MCP's
// serverInfo give it.
#pragma once

#include <string_view>

namespace cli {

inline constexpr std::string_view kProgramVersion = "swarm 0.1.0";

}  // namespace cli
