// swarm help [VERB [SUB] | TOPIC]: a verb's --help, or a page of docs/ (the
// concepts: the loop, leases, landing, trust, ...), offline, as git help
// and etcdctl answer. The pages are embedded at build time (help_topics.h).
// A verb with a page of its own name (run, mcp) gets the page, which ends
// saying where the verb's options are (`swarm run --help`).
#include <iostream>

#include "cli/command/context.h"
#include "cli/help_topics.h"
#include "swarm/base/error.h"
#include "swarm/base/text.h"

namespace cli {

namespace {

// Other names people look for a page by.
constexpr std::pair<std::string_view, std::string_view> kAliases[] = {
    {"slots", "loop"},       {"sessions", "loop"},      {"sync", "loop"},        {"elections", "leases"},
    {"semaphores", "leases"}, {"locks", "leases"},       {"ports", "leases"},     {"journal", "history"},
    {"metrics", "operating"}, {"dashboard", "operating"}, {"nats", "hosts"},      {"security", "trust"},
    {"exit-codes", "contract"}, {"records", "contract"}, {"json", "contract"},  {"options", "reference"},
    {"inbox", "messages"},    {"blobs", "messages"},     {"bus", "messages"},     {"paths", "editing"},
};

const HelpTopic* topic_named(std::string_view name) {
  for (const auto& [alias, page] : kAliases)
    if (alias == name) name = page;
  for (const auto& topic : kHelpTopics)
    if (name == topic.name) return &topic;
  return nullptr;
}

// The verb (or sub-verb) `words` name, or nullptr.
const CLI::App* verb_named(const CLI::App& root, const std::vector<std::string>& words, std::string* path) {
  const CLI::App* at = &root;
  *path = root.get_name();
  for (const auto& word : words) {
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : verbs_of(*at))
      if (sub->get_name() == word) next = sub;
    if (next == nullptr) return nullptr;
    *path += " " + word;
    at = next;
  }
  return at;
}

}  // namespace

std::string topic_list() {
  std::string out;
  for (const auto& topic : kHelpTopics) out += (out.empty() ? "" : ", ") + std::string(topic.name);
  return out;
}

std::optional<std::string> help_text(const CLI::App& root, const std::vector<std::string>& words) {
  std::string path;
  const CLI::App* verb = verb_named(root, words, &path);
  // A page named as the word is (run, mcp) says more than the verb's
  // options: the page, then where those are. An alias names no verb's page.
  if (words.size() == 1)
    for (const auto& topic : kHelpTopics)
      if (topic.name == words.front()) {
        std::string text(topic.text);
        if (verb != nullptr) {
          if (!text.empty() && text.back() != '\n') text += '\n';
          text += "\nThe options of `" + path + "`: " + path + " --help\n";
        }
        return text;
      }
  if (verb != nullptr) return verb->get_formatter()->make_help(verb, path, CLI::AppFormatMode::Normal);
  if (words.size() == 1)
    if (const HelpTopic* topic = topic_named(words.front())) return std::string(topic->text);
  return std::nullopt;
}

Verb add_help(CLI::App& app) {
  auto words = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand("help", "A verb's help, or a page of the documentation, offline");
  cmd->add_option("topic", *words, "A verb (and sub-verb), or a topic: " + topic_list())->option_text("TOPIC...");
  cmd->footer(
      "Examples:\n"
      "  swarm help join            # the same as swarm join --help\n"
      "  swarm help run             # a verb with a page of its own: the page (docs/run.md)\n"
      "  swarm help lease acquire\n"
      "  swarm help leases          # a page of the documentation: what leases are for, and how\n"
      "Topics (the pages of the documentation, also in man swarm): " + topic_list() +
      "; and slots, elections, semaphores, journal, metrics, nats, security, exit-codes, records.");
  const CLI::App* root = &app;
  return {cmd, [words, root](Context& ctx) {
            if (words->empty()) {
              std::cout << root->get_formatter()->make_help(root, root->get_name(), CLI::AppFormatMode::Normal)
                        << "\nTopics (swarm help TOPIC): " << topic_list() << "\n";
              return 0;
            }
            auto text = help_text(*root, *words);
            if (!text) {
              std::string asked;
              for (const auto& w : *words) asked += (asked.empty() ? "" : " ") + w;
              std::string verbs;
              for (const CLI::App* verb : verbs_of(*root))
                if (!verb->get_group().empty()) verbs += (verbs.empty() ? "" : ", ") + verb->get_name();
              throw swarm::Error(swarm::Errc::bad_input, "no verb or topic '" + swarm::printable(asked) +
                                                             "': the verbs are " + verbs + "; the topics are " +
                                                             topic_list());
            }
            (void)ctx;
            std::cout << *text;
            return 0;
          }};
}

}  // namespace cli
