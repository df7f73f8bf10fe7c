// The command line of swarm: its verbs, parsed and run as one process runs
// them (main.cc), or again and again in one process (swarm mcp's calls).
#include "cli/command/command_line.h"

#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <memory>
#include <mutex>
#include <string_view>

#include "cli/command/context.h"
#include "cli/verbs/exit_code.h"
#include "cli/verbs/serve_request.h"
#include "cli/verbs/version.h"
#include "swarm/base/log.h"
#include "swarm/base/process_secrets.h"
#include "swarm/base/text.h"
#include "swarm/base/warnings.h"

namespace {

constexpr const char* kVersion = cli::kProgramVersion.data();

// Whether --json is among the arguments (before a "--"), for errors that
// stop the parse before CLI11 has stored the flag.
bool asks_for_json(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == "--json") return true;
  }
  return false;
}

// The first argument that is neither an option nor an option's value: the
// verb the user meant, for an error that names it.
std::string first_word(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.empty() || arg[0] != '-') return std::string(arg);
    if (arg.find('=') != std::string_view::npos) continue;
    const CLI::Option* option = app.get_option_no_throw(std::string(arg));
    if (option != nullptr && option->get_expected_max() > 0) ++i;  // its value
  }
  return {};
}

// The verbs, in the order `swarm --help` lists them.
struct VerbMaker {
  std::string_view name;
  cli::Verb (*add)(CLI::App&);
};
constexpr VerbMaker kVerbMakers[] = {
    {"up", cli::add_up},           {"down", cli::add_down},         {"join", cli::add_join},
    {"run", cli::add_run},
    {"commit", cli::add_commit},   {"renew", cli::add_renew},       {"close", cli::add_close},
    {"evict", cli::add_evict},     {"status", cli::add_status},     {"cwd", cli::add_cwd},
    {"task", cli::add_task},       {"review", cli::add_review},
    {"send", cli::add_send},       {"inbox", cli::add_inbox},       {"ack", cli::add_ack},
    {"ask", cli::add_ask},         {"blob", cli::add_blob},
    {"hold", cli::add_hold},       {"holds", cli::add_holds},       {"mcp", cli::add_mcp},
    {"doctor", cli::add_doctor},   {"lease", cli::add_lease},       {"lock", cli::add_lock},
    {"elect", cli::add_elect},     {"log", cli::add_log},           {"branches", cli::add_branches},
    {"land", cli::add_land},       {"sync", cli::add_sync},         {"serve", cli::add_serve},
    {"recovery", cli::add_recovery}, {"_repack-hub", cli::add_repack_hub}, {"completion", cli::add_completion},
    {"version", cli::add_version}, {"help", cli::add_help},       {"_complete", cli::add_complete}};

// Every verb a user may type (those of "_" are for completion and the hub),
// whichever of them main built.
std::string verb_names() {
  std::string names;
  for (const auto& maker : kVerbMakers)
    if (maker.name.front() != '_') names += (names.empty() ? "" : ", ") + std::string(maker.name);
  return names;
}

// Each verb's (and sub-verb's) --help ends with the global options it also takes.
void add_globals_to_help(const CLI::App& app, const std::vector<cli::Verb>& verbs) {
  std::string globals_help = "Global options (before or after the verb; `swarm --help` says what each does):\n ";
  std::size_t line = 1;
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_group().empty() || option->get_lnames().empty() || option->check_lname("help")) continue;
    std::string name = " --" + option->get_lnames().front();
    if (option->get_expected_max() > 0 && !option->get_option_text().empty()) name += " " + option->get_option_text();
    if (line + name.size() > 96) {
      globals_help += "\n ";
      line = 1;
    }
    globals_help += name;
    line += name.size();
  }
  for (const auto& verb : verbs) {
    std::vector<CLI::App*> commands = {verb.command};
    for (auto* sub : verb.command->get_subcommands([](const CLI::App*) { return true; })) commands.push_back(sub);
    for (auto* command : commands)
      command->footer(command->get_footer() + (command->get_footer().empty() ? "" : "\n") + globals_help);
  }
}

// An option of the arguments (before "--") that neither `verb` nor the
// global options have: what the user should read instead of CLI11's list.
std::string unknown_option(const CLI::App& verb, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') continue;
    const std::string name = arg.substr(0, arg.find('='));
    const CLI::App* command = &verb;
    bool known = false;
    for (; command != nullptr && !known; command = command->get_parent())
      known = command->get_option_no_throw(name) != nullptr;
    for (const CLI::App* sub : verb.get_subcommands([](const CLI::App*) { return true; }))
      known = known || sub->get_option_no_throw(name) != nullptr;
    if (!known) return name;
  }
  return {};
}

// A parse error as the user should read it: the verb's help, or the verbs there are.
int parse_error(const CLI::App& app, const CLI::ParseError& e, bool json, int argc, char** argv) {
  cli::Output out(json);
  std::string message = e.what();
  if (auto* sub = app.get_subcommands().empty() ? nullptr : app.get_subcommands().front()) {
    // The verb as typed, sub-verbs included ("lease renew").
    std::string verb = sub->get_name();
    const CLI::App* deepest = sub;
    while (!deepest->get_subcommands().empty()) {
      deepest = deepest->get_subcommands().front();
      verb += " " + deepest->get_name();
    }
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr)
      if (const std::string option = unknown_option(*deepest, argc, argv); !option.empty())
        message = "`swarm " + verb + "` has no option " + swarm::printable(option) +
                  (option == "--since" && sub->get_name() != "log" ? " (the journal's history: swarm log --since DUR)"
                                                                    : "");
    message += " (see `swarm " + verb + " --help`)";
  } else if (auto word = first_word(app, argc, argv); !word.empty()) {
    message = "unknown verb '" + word + "': the verbs are " + verb_names() + " (see `swarm --help`)";
  } else {
    message += " (see `swarm --help`)";
  }
  return out.error(swarm::Errc::bad_input, message);
}

// lock and elect take CMD only after "--": without it CLI11 would take
// CMD's own options for swarm's (`swarm lock x echo --wait 5s`). An error
// message when it is missing.
std::string missing_dashes(const std::vector<cli::Verb>& verbs, int argc, char** argv) {
  for (const auto& verb : verbs) {
    const CLI::Option* command = verb.command->parsed() ? verb.command->get_option_no_throw("command") : nullptr;
    if (command == nullptr || command->count() == 0) continue;
    bool dashes = false;
    for (int i = 1; i < argc && !dashes; ++i) dashes = std::string_view(argv[i]) == "--";
    if (!dashes)
      return "put -- before the command to run: swarm " + verb.command->get_name() + " NAME [options] -- CMD [ARGS...]";
  }
  return {};
}

// Adds the verbs the arguments name (any argument equal to a verb's name:
// the verb run is always among them, so CLI11 parses as it would with all):
// building every verb's options is half a millisecond of each process,
// which `swarm status` and every lock's hand-off pay. All of them when the
// arguments name none (a typo's message lists them), ask for help (which
// lists them) or complete (which offers them).
std::vector<cli::Verb> add_verbs(CLI::App& app, int argc, char** argv) {
  constexpr std::size_t kCount = std::size(kVerbMakers);
  bool named[kCount] = {};
  bool all = true;  // until an argument names a verb
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help" || arg == "--help-all" || arg == "completion" || arg == "_complete" ||
        arg == "help") {
      all = true;
      break;
    }
    for (std::size_t k = 0; k < kCount; ++k) {
      if (arg != kVerbMakers[k].name) continue;
      named[k] = true;
      all = false;
    }
  }
  std::vector<cli::Verb> verbs;
  for (std::size_t k = 0; k < kCount; ++k)
    if (all || named[k]) verbs.push_back(kVerbMakers[k].add(app));
  return verbs;
}

// Every whole-number option, of every verb, takes decimal digits only (a
// sign where it may be negative): CLI11 alone reads 0x10 as 16 and " 5" as
// 5, and a typo must be exit 2 naming the value, not some other number.
void strict_integers(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    const bool is_signed = type.rfind("INT", 0) == 0;
    if (!is_signed && type.rfind("UINT", 0) != 0) continue;
    const std::string name = option->get_name();
    option->transform(CLI::Validator(
        [is_signed, name](std::string& value) -> std::string {
          const std::size_t digits = is_signed && !value.empty() && value.front() == '-' ? 1 : 0;
          if (value.size() > digits && value.size() <= 20 + digits &&
              value.find_first_not_of("0123456789", digits) == std::string::npos) {
            // Leading zeros dropped: CLI11 would read 010 as octal 8.
            const auto first = value.find_first_not_of('0', digits);
            value.erase(digits, (first == std::string::npos ? value.size() - 1 : first) - digits);
            return {};
          }
          return "'" + swarm::printable(value.substr(0, 40)) + "' is not a whole number in decimal digits (no " +
                 (is_signed ? "spaces" : "sign, spaces") + ", 0x or other bases)";
        },
        "", "DECIMAL"));
  }
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) strict_integers(*sub);
}

// --help as people read it: each option with its placeholder (its
// option_text, else its values a|b|c, N for a number, or its name in
// capitals), its default and "(required)" in words, never the parser's
// (TEXT:{a,b}=a REQUIRED, INT, Needs:, Excludes:). docs/reference.md is this text.
class HumanFormatter : public CLI::Formatter {
 public:
  std::string make_option_opts(const CLI::Option* option) const override {
    if (!option->get_option_text().empty()) return " " + option->get_option_text();
    if (option->get_expected_max() == 0) return "";  // a flag
    const bool positional = option->get_lnames().empty() && option->get_snames().empty();
    if (positional) return "";  // its name says it
    if (const auto values = cli::enumerated_values(option); !values.empty()) {
      std::string text;
      for (const auto& v : values) text += (text.empty() ? "" : "|") + v;
      return " " + text;
    }
    const std::string type = option->get_type_name();
    if (type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0) return " N";
    // A check named as people write it (TEXT:ID): that name.
    if (type.rfind("TEXT:", 0) == 0 && type.size() > 5 && type.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_", 5) == std::string::npos)
      return " " + type.substr(5);
    std::string name = option->get_lnames().empty() ? option->get_snames().front() : option->get_lnames().front();
    for (auto& c : name) c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return " " + name;
  }
  std::string make_option_desc(const CLI::Option* option) const override {
    std::string desc = option->get_description();
    if (!option->get_default_str().empty() && desc.find("default") == std::string::npos)
      desc += " (default " + option->get_default_str() + ")";
    if (option->get_required() && desc.find("required") == std::string::npos) desc += " (required)";
    return desc;
  }
};

// lock and elect take NAME before `--`: `swarm lock -- true` would take
// `true` for the lease's name and then miss the command.
std::string name_after_dashes(const std::vector<cli::Verb>& verbs, int argc, char** argv) {
  for (const auto& verb : verbs) {
    if (!verb.command->parsed()) continue;
    const CLI::Option* command = verb.command->get_option_no_throw("command");
    const CLI::Option* name = verb.command->get_option_no_throw("name");
    if (command == nullptr || name == nullptr || command->count() > 0 || name->count() == 0) continue;
    for (int i = 1; i < argc; ++i) {
      if (std::string_view(argv[i]) == verb.command->get_name()) {
        if (i + 1 < argc && std::string_view(argv[i + 1]) == "--")
          return "name the lease before --: swarm " + verb.command->get_name() + " NAME [options] -- CMD [ARGS...]";
        break;
      }
    }
  }
  return {};
}

// `swarm WORD --help` where WORD is no verb: its topic's page when it is
// one (exit 0), else exit 2 naming the verbs; -1 when it is not that case.
int help_of_no_verb(const CLI::App& app, const cli::Globals& globals, int argc, char** argv) {
  bool asks = false;
  for (int i = 1; i < argc && !asks; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    asks = arg == "-h" || arg == "--help" || arg == "--help-all";
  }
  const std::string word = asks ? first_word(app, argc, argv) : std::string();
  if (word.empty()) return -1;
  for (const CLI::App* verb : cli::verbs_of(app))
    if (verb->get_name() == word) return -1;
  if (auto page = cli::help_text(app, {word})) {
    std::cout << *page;
    return 0;
  }
  return cli::Output(globals.json || asks_for_json(argc, argv))
      .error(swarm::Errc::bad_input, "unknown verb '" + swarm::printable(word) + "': the verbs are " + verb_names() +
                                         "; the topics of `swarm help TOPIC` are " + cli::topic_list());
}

// Whether the verb parsed is `serve` in the swarm binary, which hands its
// process over to swarm-serve (an exec, adr/0022) with its environment.
bool hands_over_to_serve(const std::vector<cli::Verb>& verbs) {
  bool serve = false;
  for (const auto& verb : verbs) serve = serve || (verb.command->parsed() && verb.command->get_name() == "serve");
  if (!serve) return false;
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/self/exe", ec).filename() != cli::kServeProgram;
}

// Runs the verb parsed; its exit code, an error mapped to one.
int run_verb(const std::vector<cli::Verb>& verbs, cli::Context& ctx) {
  int code = cli::kInternal;
  for (const auto& verb : verbs) {
    if (!verb.command->parsed()) continue;
    try {
      code = verb.run(ctx);
    } catch (const std::exception& thrown) {
      // The library says what kind it is (the filesystem's refusals are exit
      // 9 naming the path; anything unforeseen is internal).
      const swarm::Error e = swarm::Error::from(thrown);
      code = ctx.out().error(e.kind(), ctx.explained(e.kind(), e.what()));
    }
  }
  return code;
}

}  // namespace

namespace cli {

std::string_view version() { return kVersion; }

std::vector<Verb> add_every_verb(CLI::App& app) {
  std::vector<Verb> verbs;
  for (const auto& maker : kVerbMakers) verbs.push_back(maker.add(app));
  return verbs;
}

bool is_verb(std::string_view name) {
  for (const auto& maker : kVerbMakers)
    if (maker.name == name) return true;
  return false;
}

int run_command_line(int argc, char** argv, const std::function<void(Context&)>& before_run, bool process_ends) {
  CLI::App app("swarm: one owner per slot, leases with fencing tokens, on NATS JetStream key-value.", "swarm");
  app.set_version_flag("--version", kVersion);
  app.formatter(std::make_shared<HumanFormatter>());  // before the verbs: theirs is this one
  app.require_subcommand(1);
  // Global options are accepted before or after the verb.
  app.fallthrough();
  cli::Globals globals;
  cli::add_global_options(app, globals);
  app.footer(
      "Run `swarm VERB --help` (or `swarm help VERB`) for a verb's options and an example, and `swarm help\n"
      "TOPIC` for a page of the documentation (`swarm help` lists the topics).\n"
      "Exit codes: 0 done, 1 internal, 2 bad input, 3 conflict, 4 not found, 5 foreign host,\n"
      "6 workspace not bootstrapped, 7 NATS or a remote hub unreachable, 8 doctor found problems,\n"
      "9 the local filesystem refused (disk full, read-only, permission); a command run by lock, elect\n"
      "or land exits as it did, and a signal that stopped swarm is 128 + its number.");
  const std::vector<cli::Verb> verbs = add_verbs(app, argc, argv);
  strict_integers(app);
  add_globals_to_help(app, verbs);
  // `swarm WORD --help` of no verb: a topic's page, or exit 2 naming the verbs
  // (never the top-level help, as if WORD were fine).
  if (const int code = help_of_no_verb(app, globals, argc, argv); code >= 0) return code;
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    // The --json flag itself may not have been stored when parsing stopped.
    return parse_error(app, e, globals.json || asks_for_json(argc, argv), argc, argv);
  }
  // Read now: the credentials leave the environment (and /proc/PID/environ),
  // unless this process is about to become swarm-serve, which takes them itself.
  if (process_ends && !hands_over_to_serve(verbs)) swarm::take_credentials_from_environment();
  if (const std::string why = name_after_dashes(verbs, argc, argv); !why.empty())
    return cli::Output(globals.json || asks_for_json(argc, argv)).error(swarm::Errc::bad_input, why);
  if (const std::string why = missing_dashes(verbs, argc, argv); !why.empty())
    return cli::Output(globals.json || asks_for_json(argc, argv)).error(swarm::Errc::bad_input, why);
  swarm::log::to_stderr(globals.log_level);
  swarm::log::phase("arguments read");
  // A process that ends right after never destroys it: its connection is
  // left for the kernel to close (no orderly close, see main.cc).
  std::unique_ptr<cli::Context> owned = std::make_unique<cli::Context>(globals);
  cli::Context& ctx = *owned;
  if (process_ends) static_cast<void>(owned.release());
  if (before_run) before_run(ctx);
  const int code = run_verb(verbs, ctx);
  swarm::log::phase("done");
  return code;
}

}  // namespace cli
