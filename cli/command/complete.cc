// Shell completion, read off the command line's own definition (one source
// of truth): `swarm completion bash|zsh|fish` prints a small script that asks
// `swarm _complete words -- WORD...` what fits where the cursor is. That
// answer knows the verbs and sub-verbs, each option and whether it takes a
// value (an enumerated one: its values; a file or folder: the shell's own
// file completion; anything else: nothing), and the slots (of live sessions,
// and this host's folders that still have one: never an evicted slot's
// leftovers). `_complete verbs` lists the verbs for the man page.
#include <filesystem>
#include <future>
#include <iostream>
#include <set>

#include "cli/command/context.h"
#include "swarm/base/names.h"
#include "swarm/slots/session_store.h"
#include "swarm/tasks/task.h"

namespace cli {

std::vector<std::string> enumerated_values(const CLI::Option* option) {
  std::vector<std::string> values;
  auto* mutable_option = const_cast<CLI::Option*>(option);
  for (int i = 0;; ++i) {
    CLI::Validator* v = nullptr;
    try {
      v = mutable_option->get_validator(i);
    } catch (const CLI::OptionNotFound&) {
      break;
    }
    const std::string desc = v->get_description();
    if (desc.size() <= 2 || desc.front() != '{' || desc.back() != '}') continue;
    std::string item;
    for (char c : desc.substr(1, desc.size() - 2)) {
      if (c == ',') {
        values.push_back(item);
        item.clear();
      } else {
        item += c;
      }
    }
    values.push_back(item);
    return values;
  }
  return values;
}

std::vector<const CLI::App*> verbs_of(const CLI::App& app) {
  std::vector<const CLI::App*> out;
  for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (!sub->get_group().empty()) out.push_back(sub);  // a hidden one has no group
  return out;
}

namespace {

// How long completion may wait on NATS for the live slots: a TAB must not hang.
constexpr const char* kCompletionTimeout = "700ms";

enum class ValueKind { none, free, enumerated, file, folder, slot, task };

struct OptionInfo {
  ValueKind kind = ValueKind::none;
  std::vector<std::string> values;  // enumerated
};

// What an option takes, from its definition: its validators' member list
// ("{a,b,c}"), its placeholder (FILE, DIR), or its name (--slot).
OptionInfo info_of(const CLI::Option* option) {
  OptionInfo info;
  if (option->get_expected_max() == 0) return info;
  info.kind = ValueKind::free;
  // An inbox is a slot's name, or another name under the same rule (lead): the slots are offered.
  if (option->check_lname("slot") || option->get_option_text() == "INBOX") {
    info.kind = ValueKind::slot;
    return info;
  }
  if (option->check_lname("task") || (option->check_lname("after") && option->get_option_text() == "ID")) {
    info.kind = ValueKind::task;
    return info;
  }
  info.values = enumerated_values(option);
  if (!info.values.empty()) {
    info.kind = ValueKind::enumerated;
    return info;
  }
  const std::string text = option->get_option_text();
  if (text == "DIR") info.kind = ValueKind::folder;
  else if (text == "FILE" || text == "PATH") info.kind = ValueKind::file;
  return info;
}

// The option of `app` (or, global options falling through, of its parents) named `word`.
const CLI::Option* option_named(const CLI::App* app, const std::string& word) {
  for (const CLI::App* a = app; a != nullptr; a = a->get_parent()) {
    try {
      if (const CLI::Option* o = a->get_option_no_throw(word); o != nullptr && !o->get_group().empty()) return o;
    } catch (const std::exception&) {
    }
  }
  return nullptr;
}

// What `app`'s positional number `index` (from 0) takes, as info_of says.
OptionInfo positional_info(const CLI::App* app, std::size_t index) {
  for (const CLI::Option* option : app->get_options()) {
    if (!option->get_lnames().empty() || !option->get_snames().empty()) continue;
    if (index-- == 0) return info_of(option);
  }
  return {};
}

// The long (and short) names of `app`'s options and its parents'.
std::vector<std::string> option_words(const CLI::App* app) {
  std::vector<std::string> out;
  for (const CLI::App* a = app; a != nullptr; a = a->get_parent())
    for (const CLI::Option* option : a->get_options()) {
      if (option->get_group().empty() || (option->get_lnames().empty() && option->get_snames().empty())) continue;
      if (option->check_lname("help")) continue;
      for (const auto& n : option->get_lnames()) out.push_back("--" + n);
    }
  return out;
}

// The slots worth offering: of live sessions, and this host's folders that
// still have a session; only the folders when NATS does not answer in time.
std::set<std::string> slots(Context& ctx) {
  std::set<std::string> out;
  try {
    std::set<std::string> folders;
    auto ws = ctx.workspace();
    if (auto dir = ws.folder_if_exists(swarm::kSlotsFolder))
      for (const auto& name : dir->list())
        if (swarm::is_valid_slot_name(name) && dir->kind(name) == swarm::EntryKind::folder) folders.insert(name);
    try {
      // Only names a slot can have: a key planted in the bucket by any client
      // ("render;touch${IFS}x") is no slot, and must never reach a command line.
      for (const auto& entry : ctx.sessions().store.list())
        if (swarm::is_valid_slot_name(entry.slot)) out.insert(entry.slot);
    } catch (const std::exception&) {
      return folders;  // no NATS: this host's folders, as the best guess
    }
  } catch (const std::exception&) {
    // Completion never complains: no workspace, no slots.
  }
  return out;
}

// The ids of the queue's tasks that are plain keys (a planted id with
// shell words in it never reaches a command line); none when NATS does not
// answer in time or there is no queue.
std::vector<std::string> task_ids(Context& ctx) {
  std::vector<std::string> out;
  try {
    if (auto queue = ctx.queue_if_exists())
      for (const auto& e : queue->list())
        if (e.task && swarm::task_key(e.task->id) == e.task->id) out.push_back(e.task->id);
  } catch (const std::exception&) {
  }
  return out;
}

// The answer to `_complete words -- WORDS...`: a first line saying what the
// shell should do (words, files, folders), then the words that fit.
void complete_words(Context& ctx, const CLI::App& root, const std::vector<std::string>& words) {
  const std::string current = words.empty() ? "" : words.back();
  const CLI::App* app = &root;
  const CLI::Option* pending = nullptr;  // an option whose value comes next
  bool after_dashes = false;
  std::size_t positionals = 0;
  for (std::size_t i = 0; i + 1 < words.size(); ++i) {
    const std::string& w = words[i];
    if (pending != nullptr) {
      pending = nullptr;
      continue;
    }
    if (w == "--") {
      after_dashes = true;
      break;
    }
    if (w.rfind("--", 0) == 0 && w.find('=') != std::string::npos) continue;
    if (!w.empty() && w[0] == '-') {
      const CLI::Option* o = option_named(app, w);
      if (o != nullptr && o->get_expected_max() > 0) pending = o;
      continue;
    }
    const CLI::App* sub = nullptr;
    for (const auto* v : verbs_of(*app))
      if (v->get_name() == w) sub = v;
    if (sub != nullptr) {
      app = sub;
      positionals = 0;
    } else {
      ++positionals;
    }
  }
  std::vector<std::string> offer;
  std::string mode = "words";
  if (after_dashes) {
    mode = "files";  // a command and its arguments: the shell knows best
  } else if (pending != nullptr) {
    const OptionInfo info = info_of(pending);
    switch (info.kind) {
      case ValueKind::enumerated: offer = info.values; break;
      case ValueKind::slot:
        for (const auto& s : slots(ctx)) offer.push_back(s);
        break;
      case ValueKind::task: offer = task_ids(ctx); break;
      case ValueKind::file: mode = "files"; break;
      case ValueKind::folder: mode = "folders"; break;
      default: break;  // a free value: nothing to offer
    }
  } else if (!current.empty() && current[0] == '-') {
    offer = option_words(app);
  } else if (!verbs_of(*app).empty() && positionals == 0) {
    for (const auto* v : verbs_of(*app)) offer.push_back(v->get_name());
  } else if (const OptionInfo info = positional_info(app, positionals); info.kind == ValueKind::enumerated) {
    offer = info.values;  // elect state NAME put|get, completion bash|zsh|fish
  } else if (info.kind == ValueKind::file) {
    mode = "files";
  } else if (app->get_name() == "commit") {
    mode = "files";  // PATH...
  } else if (positionals == 0 && app->get_parent() != nullptr && app->get_parent()->get_name() == "task" &&
             (app->get_name() == "show" || app->get_name() == "edit" || app->get_name() == "cancel" ||
              app->get_name() == "reopen")) {
    offer = task_ids(ctx);  // ID
  }
  std::cout << mode << "\n";
  for (const auto& word : offer)
    if (word.rfind(current, 0) == 0) std::cout << word << "\n";
}

const char* kBash = R"SH(# bash completion for swarm (swarm completion bash): swarm itself says what fits.
_swarm() {
  local IFS=$'\n' mode words
  words=($(COMP_LINE= "${COMP_WORDS[0]}" _complete words -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
  mode=${words[0]}
  case $mode in
    files) COMPREPLY=($(compgen -f -- "${COMP_WORDS[COMP_CWORD]}")); compopt -o filenames 2>/dev/null ;;
    folders) COMPREPLY=($(compgen -d -- "${COMP_WORDS[COMP_CWORD]}")); compopt -o filenames 2>/dev/null ;;
    *) COMPREPLY=("${words[@]:1}") ;;
  esac
}
complete -F _swarm swarm
)SH";

const char* kZsh = R"SH(#compdef swarm
# zsh completion for swarm (swarm completion zsh): swarm itself says what fits.
_swarm() {
  local -a reply
  reply=("${(@f)$(${words[1]} _complete words -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  case ${reply[1]} in
    files) _files ;;
    folders) _files -/ ;;
    *) (( ${#reply} > 1 )) && compadd -- "${(@)reply[2,-1]}" ;;
  esac
}
compdef _swarm swarm
)SH";

const char* kFish = R"SH(# fish completion for swarm (swarm completion fish): swarm itself says what fits.
function __swarm_complete
    set -l words (commandline -opc) (commandline -ct)
    set -l reply ($words[1] _complete words -- $words[2..-1] 2>/dev/null)
    switch "$reply[1]"
        case files
            __fish_complete_path (commandline -ct)
        case folders
            __fish_complete_directories (commandline -ct)
        case '*'
            printf '%s\n' $reply[2..-1]
    end
end
complete -c swarm -f -a '(__swarm_complete)'
)SH";

}  // namespace

Verb add_completion(CLI::App& app) {
  auto shell = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("completion", "Print the completion script for a shell: bash, zsh or fish");
  cmd->add_option("shell", *shell, "bash, zsh or fish")->required()->check(CLI::IsMember({"bash", "zsh", "fish"}));
  cmd->footer(
      "Examples:\n"
      "  source <(swarm completion bash)                      # bash, now; or into ~/.bashrc\n"
      "  swarm completion zsh > \"${fpath[1]}/_swarm\"          # zsh, then compinit\n"
      "  swarm completion fish > ~/.config/fish/completions/swarm.fish\n"
      "The package installs all three. Slots are offered from live sessions (700 ms at most on NATS).");
  return {cmd, [shell](Context&) {
            std::cout << (*shell == "bash" ? kBash : *shell == "zsh" ? kZsh : kFish);
            return 0;
          }};
}

Verb add_complete(CLI::App& app) {
  auto what = std::make_shared<std::string>();
  auto words = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand("_complete", "For shell completion and the man page");
  cmd->group("");  // hidden
  cmd->add_option("what", *what, "words: what fits after WORDS; verbs: the verbs; topics: the help topics")
      ->required()
      ->check(CLI::IsMember({"words", "verbs", "topics"}));
  cmd->add_option("words", *words, "The words typed so far, the last one the one being completed, after --");
  const CLI::App* root = &app;
  return {cmd, [what, words, root](Context& ctx) {
            if (*what == "topics") {
              std::string list = topic_list();
              for (auto& c : list)
                if (c == ',') c = '\n';
              std::string out;
              for (char c : list)
                if (c != ' ') out += c;
              std::cout << out << "\n";
              return 0;
            }
            if (*what == "verbs") {
              // Each verb, then each of its sub-verbs as "verb sub" (the man page's sections).
              for (const auto* v : verbs_of(*root)) {
                std::cout << v->get_name() << "\n";
                for (const auto* sub : verbs_of(*v)) std::cout << v->get_name() << " " << sub->get_name() << "\n";
              }
              return 0;
            }
            Globals quick = ctx.globals();
            quick.timeout = kCompletionTimeout;
            // The workspace, server and bucket the typed command names are where its slots are.
            for (std::size_t i = 0; i + 2 < words->size(); ++i) {
              const std::string& w = (*words)[i];
              const std::string& value = (*words)[i + 1];
              if (w == "--workspace") quick.workspace = value;
              else if (w == "--nats-url") quick.nats_url = value;
              else if (w == "--bucket") quick.bucket = value;
            }
            Context bounded(quick);
            complete_words(bounded, *root, *words);
            return 0;
          }};
}

}  // namespace cli
