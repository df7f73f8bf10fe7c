// The tools of `swarm mcp`, read off the command line's CLI11 definitions
// (each verb's options, as cli/verbs' tables feed them): here, where the
// program sees both the command line and the MCP front end.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "cli/command/command_line.h"
#include "cli/command/context.h"
#include "cli/mcp/mcp_tools.h"
#include "swarm/base/error.h"
#include "swarm/base/text.h"

namespace cli {

namespace {

// The verbs each set offers, by tool name (the contract's core set);
// `all` adds the lease, lock, elect and review verbs, and what helps
// beside them.
const std::vector<std::string> kCore = {"status", "join", "commit", "sync", "close", "renew", "task_list", "task_next",
                                        "send",   "inbox", "ack",   "hold", "land",  "log",   "ask",       "blob_get"};
const std::vector<std::string> kMore = {"holds",         "task_add",     "task_show",     "branches",
                                        "lease_acquire", "lease_renew",  "lease_release", "lease_show",
                                        "lease_list",    "lock",         "elect",         "review_approve",
                                        "review_reject"};
// Verbs that may wait long: each call is a process of its own (cancelled
// as Ctrl-C would, its stderr lines sent as progress).
const std::set<std::string> kOwnProcess = {"land", "inbox", "ask", "lock", "elect", "lease_acquire"};
const std::set<std::string> kLines = {"inbox", "log"};
// Options a tool never takes: --json is always given; the others never
// end, or print something that is not the verb's document.
const std::set<std::string> kLeftOut = {"help", "json", "watch", "follow", "env", "observe", "help-all"};
// A tool's description of an option is its help up to this many bytes
// (whole words): the schemas cost an agent's context.
constexpr std::size_t kOptionHelpBytes = 44;

std::string short_help(const std::string& text) {
  std::string out = text.substr(0, text.find(" ("));
  out = out.substr(0, out.find("; "));
  if (out.size() > kOptionHelpBytes) {
    out = out.substr(0, kOptionHelpBytes);
    out = out.substr(0, out.rfind(' ')) + "...";
  }
  return out;
}

bool is_integer_type(const CLI::Option* option) {
  const std::string type = option->get_type_name();
  return type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0;
}

ToolArg arg_of(const CLI::Option* option) {
  ToolArg a;
  const bool positional = option->get_lnames().empty() && option->get_snames().empty();
  std::string name = positional ? option->get_name() : option->get_lnames().front();
  a.option = positional ? "" : "--" + name;
  std::replace(name.begin(), name.end(), '-', '_');
  a.key = name;
  a.required = option->get_required();
  // A token (--session TOKEN) is a number to the caller, as join's handle gives it.
  a.integer = is_integer_type(option) || option->get_option_text() == "TOKEN";
  if (positional) {
    a.kind = name == "command" || name == "check" ? ToolArg::Kind::command
             : option->get_expected_max() > 1     ? ToolArg::Kind::positionals
                                                  : ToolArg::Kind::positional;
  } else {
    a.kind = option->get_expected_max() == 0  ? ToolArg::Kind::flag
             : option->get_expected_max() > 1 ? ToolArg::Kind::list
                                              : ToolArg::Kind::value;
  }
  return a;
}

swarm::Json schema_of(const ToolArg& a, const CLI::Option* option) {
  swarm::Json s = swarm::Json::object();
  switch (a.kind) {
    case ToolArg::Kind::flag: s.set("type", "boolean"); break;
    case ToolArg::Kind::list:
    case ToolArg::Kind::positionals:
    case ToolArg::Kind::command: {
      s.set("type", "array");
      swarm::Json item = swarm::Json::object();
      item.set("type", "string");
      s.set("items", std::move(item));
      break;
    }
    default: {
      s.set("type", a.integer ? "integer" : "string");
      if (auto values = enumerated_values(option); !values.empty()) s.set("enum", swarm::Json::strings(values));
    }
  }
  const std::string help = short_help(option->get_description());
  if (!help.empty()) s.set("description", help);
  return s;
}

// An object: the verb's --json document (its "schema" names it), or
// {"items":[...]} for a verb that prints JSON Lines; kept small, since
// tools/list costs an agent's context (docs/mcp.md says what each holds).
swarm::Json output_schema_of(const Tool& t) {
  swarm::Json schema = swarm::Json::object();
  schema.set("type", "object");
  if (t.lines) schema.set("required", swarm::Json::strings({"items"}));
  return schema;
}

Tool tool_of(const CLI::App& command, const std::vector<std::string>& words) {
  Tool t;
  for (const auto& w : words) t.name += (t.name.empty() ? "" : "_") + w;
  t.words = words;
  t.description = command.get_description().substr(0, command.get_description().find(" ("));
  t.own_process = kOwnProcess.count(t.name) != 0;
  t.lines = kLines.count(t.name) != 0;
  t.handle = t.name == "join" || t.name == "lease_acquire";
  swarm::Json props = swarm::Json::object();
  std::vector<std::string> required;
  for (const CLI::Option* option : command.get_options()) {
    if (option->get_group().empty()) continue;  // hidden
    const bool positional = option->get_lnames().empty() && option->get_snames().empty();
    if (!positional && (option->get_lnames().empty() || kLeftOut.count(option->get_lnames().front()) != 0)) continue;
    ToolArg a = arg_of(option);
    props.set(a.key.c_str(), schema_of(a, option));
    if (a.required) required.push_back(a.key);
    t.args.push_back(std::move(a));
  }
  t.input_schema = swarm::Json::object();
  t.input_schema.set("type", "object").set("properties", std::move(props));
  if (!required.empty()) t.input_schema.set("required", swarm::Json::strings(required));
  t.output_schema = output_schema_of(t);
  return t;
}

// task_next: join --next, the queue's most urgent ready task claimed for
// the slot (the server's --slot when the call names none), with join's
// handle; of join's options, the claim's (slot, label, wait): join itself
// takes the rest (its schema costs the agent's context once).
Tool task_next_of(const CLI::App& join) {
  Tool t = tool_of(join, {"join"});
  t.name = "task_next";
  t.description = "Claim the queue's most urgent ready task for the slot (join --next): its session handle";
  t.fixed = {"--next"};
  t.handle = true;
  cJSON* props = cJSON_GetObjectItemCaseSensitive(t.input_schema.get(), "properties");
  for (const char* key : {"task", "next", "force", "base", "ports"}) {
    cJSON_DeleteItemFromObjectCaseSensitive(props, key);
    t.args.erase(std::remove_if(t.args.begin(), t.args.end(), [&](const ToolArg& a) { return a.key == key; }),
                 t.args.end());
  }
  return t;
}

const CLI::App* sub_named(const CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->get_name() == name) return sub;
  return nullptr;
}

}  // namespace

std::vector<Tool> mcp_tools(bool all) {
  CLI::App app("swarm", "swarm");
  Globals globals;
  add_global_options(app, globals);
  add_every_verb(app);
  std::vector<std::string> names = kCore;
  if (all) names.insert(names.end(), kMore.begin(), kMore.end());
  std::vector<Tool> tools;
  for (const auto& name : names) {
    if (name == "task_next") {
      if (const CLI::App* join = sub_named(app, "join")) tools.push_back(task_next_of(*join));
      continue;
    }
    // "task_list": the verb task, its sub-verb list; "status": a verb alone.
    const auto under = name.find('_');
    const CLI::App* command = sub_named(app, under == std::string::npos ? name : name.substr(0, under));
    std::vector<std::string> words = {under == std::string::npos ? name : name.substr(0, under)};
    if (command != nullptr && under != std::string::npos) {
      command = sub_named(*command, name.substr(under + 1));
      words.push_back(name.substr(under + 1));
    }
    if (command == nullptr) continue;  // no such verb in this build: not offered
    tools.push_back(tool_of(*command, words));
  }
  return tools;
}

}  // namespace cli
