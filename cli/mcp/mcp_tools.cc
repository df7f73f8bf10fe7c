#include "cli/mcp/mcp_tools.h"

#include <algorithm>
#include <cmath>

#include "swarm/base/error.h"
#include "swarm/base/text.h"

namespace cli {

std::vector<std::string> call_arguments(const Tool& tool, const cJSON* arguments) {
  if (arguments != nullptr && !cJSON_IsNull(arguments) && !cJSON_IsObject(arguments))
    throw swarm::Error(swarm::Errc::bad_input, "the arguments of " + tool.name + " are not an object");
  std::vector<std::string> options, positionals, command;
  auto bad = [&](const std::string& key, const std::string& why) {
    throw swarm::Error(swarm::Errc::bad_input,
                       "argument '" + swarm::printable(key) + "' of " + tool.name + " " + why);
  };
  for (const cJSON* item = arguments ? arguments->child : nullptr; item != nullptr; item = item->next) {
    const std::string key = item->string ? item->string : "";
    auto it = std::find_if(tool.args.begin(), tool.args.end(), [&](const ToolArg& a) { return a.key == key; });
    if (it == tool.args.end()) bad(key, "is none of its arguments (tools/list gives them)");
    const ToolArg& a = *it;
    if (cJSON_IsNull(item)) continue;  // as if not given
    switch (a.kind) {
      case ToolArg::Kind::flag:
        if (!cJSON_IsBool(item)) bad(key, "is not true or false");
        if (cJSON_IsTrue(item)) options.push_back(a.option);
        break;
      case ToolArg::Kind::value:
      case ToolArg::Kind::positional: {
        std::string value;
        if (a.integer) {
          if (!cJSON_IsNumber(item) || item->valuedouble != std::floor(item->valuedouble) ||
              std::fabs(item->valuedouble) > 9.0e15)
            bad(key, "is not a whole number");
          value = std::to_string(static_cast<long long>(item->valuedouble));
        } else {
          if (!cJSON_IsString(item)) bad(key, "is not a string");
          value = item->valuestring;
        }
        if (a.kind == ToolArg::Kind::positional) {
          // Before a command's "--" nothing protects it: a name must not be taken for an option.
          if (!value.empty() && value.front() == '-') bad(key, "may not start with '-'");
          positionals.push_back(value);
        } else {
          options.push_back(a.option);
          options.push_back(value);
        }
        break;
      }
      default: {
        if (!cJSON_IsArray(item)) bad(key, "is not a list of strings");
        for (const cJSON* e = item->child; e != nullptr; e = e->next) {
          if (!cJSON_IsString(e)) bad(key, "is not a list of strings");
          if (a.kind == ToolArg::Kind::list) {
            options.push_back(a.option);
            options.push_back(e->valuestring);
          } else if (a.kind == ToolArg::Kind::positionals) {
            positionals.push_back(e->valuestring);
          } else {
            command.push_back(e->valuestring);
          }
        }
      }
    }
  }
  // Positionals after the options; for a verb that runs no command, after
  // "--", so that a value starting with '-' is never read as an option.
  const bool runs_command = std::any_of(tool.args.begin(), tool.args.end(),
                                        [](const ToolArg& a) { return a.kind == ToolArg::Kind::command; });
  std::vector<std::string> out = options;
  if (!positionals.empty() && !runs_command) out.push_back("--");
  out.insert(out.end(), positionals.begin(), positionals.end());
  if (!command.empty()) {
    out.push_back("--");
    out.insert(out.end(), command.begin(), command.end());
  }
  return out;
}

}  // namespace cli
