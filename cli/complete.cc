// swarm _complete: what shell completion and the man page are made from, read
// off the command line's own definition (one source of truth), and the slot
// names of this host (its slot folders: no NATS round trip).
#include <filesystem>
#include <iostream>
#include <set>

#include "cli/context.h"
#include "swarm/names.h"

namespace cli {

std::vector<const CLI::App*> verbs_of(const CLI::App& app) {
  std::vector<const CLI::App*> out;
  for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (!sub->get_group().empty()) out.push_back(sub);  // a hidden one has no group
  return out;
}

namespace {

// The option names of `app` ("--slot", "-m", ...), and those that take a value.
void options_of(const CLI::App& app, std::string& all, std::string* with_value) {
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_group().empty()) continue;
    auto names = option->get_lnames();
    for (const auto& n : names) {
      all += " --" + n;
      if (with_value != nullptr && option->get_expected_max() > 0) *with_value += " --" + n;
    }
    for (const auto& n : option->get_snames()) {
      all += " -" + n;
      if (with_value != nullptr && option->get_expected_max() > 0) *with_value += " -" + n;
    }
  }
}

std::string bash_script(const CLI::App& app) {
  std::string globals, global_values;
  options_of(app, globals, &global_values);
  std::string verbs;
  for (const auto* v : verbs_of(app)) verbs += " " + v->get_name();
  std::string cases, values = global_values;  // every option that takes a value, the verbs' too
  for (const auto* v : verbs_of(app)) {
    std::string words;
    options_of(*v, words, &values);
    for (const auto* sub : verbs_of(*v)) {
      words += " " + sub->get_name();
      options_of(*sub, words, &values);
    }
    cases += "    " + v->get_name() + ") words=\"" + words.substr(words.empty() ? 0 : 1) + "\" ;;\n";
  }
  return "# bash completion for swarm, made by `swarm _complete bash` from its command line.\n"
         "_swarm() {\n"
         "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
         "  local globals=\"" + globals.substr(1) + "\"\n"
         "  local takes_value=\" " + global_values.substr(1) + " \"\n"
         "  local any_value=\" " + values.substr(1) + " \"\n"
         "  local workspace= i\n"
         "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
         "    [[ ${COMP_WORDS[i]} == --workspace ]] && workspace=${COMP_WORDS[i+1]}\n"
         "  done\n"
         "  if [[ $prev == --slot ]]; then\n"
         "    COMPREPLY=($(compgen -W \"$(\"${COMP_WORDS[0]}\" ${workspace:+--workspace \"$workspace\"} _complete slots 2>/dev/null)\" -- \"$cur\"))\n"
         "    return\n"
         "  fi\n"
         "  # The value of another option: nothing to offer (the shell completes file names).\n"
         "  if [[ $any_value == *\" $prev \"* ]]; then COMPREPLY=(); return; fi\n"
         "  local verb=\n"
         "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
         "    local w=${COMP_WORDS[i]}\n"
         "    if [[ $w == -* ]]; then [[ $takes_value == *\" $w \"* ]] && ((i++)); continue; fi\n"
         "    verb=$w; break\n"
         "  done\n"
         "  if [[ -z $verb ]]; then\n"
         "    if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"$globals\" -- \"$cur\"))\n"
         "    else COMPREPLY=($(compgen -W \"" + verbs.substr(1) + "\" -- \"$cur\")); fi\n"
         "    return\n"
         "  fi\n"
         "  local words=\n"
         "  case $verb in\n" + cases +
         "  esac\n"
         "  COMPREPLY=($(compgen -W \"$words $globals\" -- \"$cur\"))\n"
         "}\n"
         "complete -o default -F _swarm swarm\n";
}

}  // namespace

Verb add_complete(CLI::App& app) {
  auto what = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("_complete", "For shell completion and the man page");
  cmd->group("");  // hidden
  cmd->add_option("what", *what, "bash: the completion script; verbs: the verbs; slots: this host's slots")
      ->required()
      ->check(CLI::IsMember({"bash", "verbs", "slots"}));
  const CLI::App* root = &app;
  return {cmd, [what, root](Context& ctx) {
            if (*what == "bash") {
              std::cout << bash_script(*root);
            } else if (*what == "verbs") {
              for (const auto* v : verbs_of(*root)) std::cout << v->get_name() << "\n";
            } else {
              // Completion must never complain: no workspace, no slots.
              try {
                std::set<std::string> slots;
                auto ws = ctx.workspace();
                if (auto dir = ws.folder_if_exists(swarm::kSlotsFolder))
                  for (const auto& name : dir->list())
                    if (swarm::is_valid_slot_name(name) && dir->kind(name) == swarm::EntryKind::folder)
                      slots.insert(name);
                for (const auto& s : slots) std::cout << s << "\n";
              } catch (const std::exception&) {
              }
            }
            return 0;
          }};
}

}  // namespace cli
