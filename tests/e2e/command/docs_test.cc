// The documentation checked against what it documents: every verb and every
// option of `--help` is named in docs/reference.md (and nothing it names is
// gone), every relative link of the README, docs/ and adr/ points at a file
// (and a heading) that is there, and every shell block is a recipe that
// readme_test.cc runs, or says why it is not run.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "e2e/swarm_fixture.h"

using namespace testing;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = SWARM_SOURCE_DIR;

std::string text_of(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<fs::path> pages() {
  std::vector<fs::path> out = {kSource / "README.md"};
  for (const auto& entry : fs::directory_iterator(kSource / "docs"))
    if (entry.path().extension() == ".md") out.push_back(entry.path());
  return out;
}

// The long options (--name) a --help text lists.
std::set<std::string> options_of_help(const std::string& help) {
  std::set<std::string> out;
  bool in_options = false;
  for (const auto& line : lines_of(help)) {
    if (line == "Options:") {
      in_options = true;
      continue;
    }
    if (in_options && !line.empty() && line[0] != ' ') in_options = false;
    if (!in_options) continue;
    static const std::regex option(R"(^  (?:-\w,)?(--[a-z][a-z0-9-]*))");
    std::smatch m;
    if (std::regex_search(line, m, option) && m[1] != "--help") out.insert(m[1]);
  }
  return out;
}

// docs/reference.md's sections: "Global options", and each "`swarm VERB`",
// with the long options its text names.
std::map<std::string, std::set<std::string>> reference_sections() {
  std::map<std::string, std::set<std::string>> out;
  std::string section;
  static const std::regex heading(R"(^#{2,3} (?:`swarm ([a-z][a-z ]*[a-z])`|(Global options))\s*$)");
  static const std::regex option(R"(`(?:-\w,)?(--[a-z][a-z0-9-]*))");
  for (const auto& line : lines_of(text_of(kSource / "docs/reference.md"))) {
    std::smatch m;
    if (std::regex_match(line, m, heading)) {
      section = m[1].matched ? m[1].str() : "global";
      out[section];
      continue;
    }
    if (section.empty() || line.rfind("| `", 0) != 0) continue;  // the first cell of a row names the option
    const std::string first = line.substr(2, line.find(" |", 2) - 2);
    for (std::sregex_iterator it(first.begin(), first.end(), option), end; it != end; ++it) out[section].insert((*it)[1]);
  }
  return out;
}

// The slug GitHub gives a heading: lower case, punctuation dropped, spaces as '-'.
std::string slug(const std::string& heading) {
  std::string out;
  for (unsigned char c : heading) {
    if (std::isalnum(c)) out += static_cast<char>(std::tolower(c));
    else if (c == ' ' || c == '-') out += '-';
    else if (c == '_') out += '_';
    else if (c >= 0x80) out += static_cast<char>(c);
  }
  return out;
}

std::set<std::string> anchors_of(const fs::path& file) {
  std::set<std::string> out;
  bool fenced = false;
  for (const auto& line : lines_of(text_of(file))) {
    const auto trimmed = line.substr(std::min(line.size(), line.find_first_not_of(' ')));
    if (trimmed.rfind("```", 0) == 0) fenced = !fenced;
    if (fenced || line.empty() || line[0] != '#') continue;
    out.insert(slug(line.substr(line.find_first_not_of('#') + 1)));
  }
  return out;
}

}  // namespace

TEST_CASE("Docs_TheReferenceNamesEveryVerbAndOptionAndNoOther") {
  const auto sections = reference_sections();
  REQUIRE(sections.count("global") == 1);
  auto global_help = run({{swarm_binary(), "--help"}});
  const auto globals = options_of_help(global_help.out);
  for (const auto& option : globals) {
    CAPTURE(option);
    CHECK(sections.at("global").count(option) == 1);
  }
  auto verbs = run({{swarm_binary(), "_complete", "verbs"}});
  REQUIRE(verbs.exit == 0);
  std::set<std::string> listed;
  for (const auto& verb : lines_of(verbs.out)) {
    if (verb.empty()) continue;
    listed.insert(verb);
    CAPTURE(verb);
    REQUIRE_MESSAGE(sections.count(verb) == 1, "docs/reference.md has no section `swarm " << verb << "`");
    std::vector<std::string> args = {swarm_binary()};
    std::istringstream words(verb);
    for (std::string w; words >> w;) args.push_back(w);
    args.push_back("--help");
    const auto options = options_of_help(run({args}).out);
    for (const auto& option : options) {
      CAPTURE(option);
      CHECK_MESSAGE(sections.at(verb).count(option) == 1, "docs/reference.md does not name " << option);
    }
    for (const auto& named : sections.at(verb)) {
      CAPTURE(named);
      CHECK_MESSAGE(options.count(named) + globals.count(named) > 0, "docs/reference.md names " << named
                                                                      << ", which swarm " << verb << " does not take");
    }
  }
  for (const auto& [section, options] : sections) {
    CAPTURE(section);
    CHECK_MESSAGE((section == "global" || listed.count(section) == 1), "docs/reference.md documents no verb");
  }
}

TEST_CASE("Docs_EveryRelativeLinkPointsAtSomething") {
  std::vector<fs::path> files = pages();
  for (const auto& entry : fs::directory_iterator(kSource / "adr")) files.push_back(entry.path());
  static const std::regex link(R"(\]\(([^)\s]+)\))");
  int checked = 0;
  for (const auto& file : files) {
    const std::string text = text_of(file);
    for (std::sregex_iterator it(text.begin(), text.end(), link), end; it != end; ++it) {
      const std::string target = (*it)[1];
      if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0 || target.rfind("mailto:", 0) == 0)
        continue;
      CAPTURE(file);
      CAPTURE(target);
      const auto hash = target.find('#');
      const std::string path = target.substr(0, hash);
      const fs::path resolved = path.empty() ? file : (file.parent_path() / path).lexically_normal();
      CHECK_MESSAGE(fs::exists(resolved), "a link points nowhere");
      if (hash != std::string::npos && fs::exists(resolved) && resolved.extension() == ".md")
        CHECK_MESSAGE(anchors_of(resolved).count(target.substr(hash + 1)) == 1, "a link names no heading");
      ++checked;
    }
  }
  CHECK(checked > 20);
}

TEST_CASE("Docs_EveryShellBlockIsARecipeThatIsRunOrSaysWhyNot") {
  const std::string runner = text_of(kSource / "tests/e2e/command/readme_test.cc");
  static const std::regex recipe_mark(R"(^<!-- recipe: ([a-z0-9-]+) -->$)");
  static const std::regex not_run(R"(^<!-- not run: .{10,} -->$)");
  std::set<std::string> names;
  for (const auto& file : pages()) {
    std::string previous;
    for (const auto& line : lines_of(text_of(file))) {
      const std::string trimmed = line.substr(std::min(line.size(), line.find_first_not_of(' ')));
      if (trimmed == "```sh") {
        CAPTURE(file);
        CAPTURE(previous);
        std::smatch m;
        if (std::regex_match(previous, m, recipe_mark)) {
          const std::string name = m[1];
          CHECK_MESSAGE(names.insert(name).second, "recipe " << name << " is named twice");
          CHECK_MESSAGE(runner.find("recipe(\"" + name + "\")") != std::string::npos,
                        "recipe " << name << " is run by no test of readme_test.cc");
        } else {
          CHECK_MESSAGE(std::regex_match(previous, not_run),
                        "a shell block is neither a recipe nor marked <!-- not run: why -->");
        }
      }
      if (!trimmed.empty()) previous = trimmed;
    }
  }
  CHECK(names.size() >= 10);
  // Each page opens with what it is for and a block: a recipe, or one that says why not.
  for (const auto& file : pages()) {
    const std::string text = text_of(file);
    CAPTURE(file);
    const auto first_block = text.find("```sh");
    const auto second_heading = text.find("\n## ");
    CHECK_MESSAGE((first_block != std::string::npos &&
                   (file.filename() == "README.md" || first_block < second_heading)),
                  "the page does not open with a recipe");
  }
}

TEST_CASE("Docs_HelpOfEachTopicIsItsPageAndOfAVerbWithoutOneItsOptions") {
  // `swarm help TOPIC` prints the page of docs/ of that name, also when a verb has the name (run, mcp): then its
  // end says where the verb's options are. A verb without a page of its name is its --help, sub-verbs too.
  auto topics = run({{swarm_binary(), "_complete", "topics"}});
  REQUIRE(topics.exit == 0);
  std::size_t pages = 0;
  for (const auto& topic : lines_of(topics.out)) {
    if (topic.empty()) continue;
    CAPTURE(topic);
    const std::string page = text_of(kSource / "docs" / (topic + ".md"));
    REQUIRE(!page.empty());
    auto help = run({{swarm_binary(), "help", topic}});
    CHECK(help.exit == 0);
    const std::string heading = page.substr(0, page.find('\n') + 1);  // "# Running an agent ...\n"
    CHECK_MESSAGE(help.out.rfind(heading, 0) == 0, "swarm help " << topic << " is not docs/" << topic << ".md");
    ++pages;
  }
  CHECK(pages >= 10);
  for (const char* verb : {"run", "mcp"}) {
    CAPTURE(verb);
    auto help = run({{swarm_binary(), "help", verb}});
    CHECK(help.out.find("Usage: swarm") == std::string::npos);
    const std::string hint = std::string("swarm ") + verb + " --help\n";
    CHECK(help.out.size() > hint.size());
    CHECK(help.out.substr(help.out.size() - hint.size()) == hint);
    auto options = run({{swarm_binary(), verb, "--help"}});
    CHECK(options.out.find(std::string("Usage: swarm ") + verb) != std::string::npos);
  }
  CHECK(run({{swarm_binary(), "help", "join"}}).out == run({{swarm_binary(), "join", "--help"}}).out);
  CHECK(run({{swarm_binary(), "help", "lease", "acquire"}}).out ==
        run({{swarm_binary(), "lease", "acquire", "--help"}}).out);
}

TEST_CASE("Docs_HelpAndTheReferenceShowPeoplesWordsNeverTheParsers") {
  // Every option of every verb's --help, and every row of docs/reference.md, shows its placeholder as people
  // write it (FILE, N, a|b, "(required)"), never the parser's (TEXT:{a,b}=a REQUIRED, INT, Needs:, Excludes:) nor
  // the help's column layout pasted into a cell.
  static const std::regex raw(R"(REQUIRED|Excludes:|Needs:|[A-Z]+:\{|\b(INT|UINT|FLOAT|NUMBER|TEXT):|\b(INT|UINT|FLOAT|NUMBER)\b)");
  auto verbs = run({{swarm_binary(), "_complete", "verbs"}});
  REQUIRE(verbs.exit == 0);
  std::vector<std::vector<std::string>> helps = {{swarm_binary(), "--help"}};
  for (const auto& verb : lines_of(verbs.out)) {
    if (verb.empty()) continue;
    std::vector<std::string> args = {swarm_binary()};
    std::istringstream words(verb);
    for (std::string w; words >> w;) args.push_back(w);
    args.push_back("--help");
    helps.push_back(args);
  }
  for (const auto& args : helps) {
    auto help = run({args});
    CAPTURE(args[1]);
    bool in_options = false;
    for (const auto& line : lines_of(help.out)) {
      if (line == "Options:" || line == "Positionals:") {
        in_options = true;
        continue;
      }
      if (in_options && !line.empty() && line[0] != ' ') in_options = false;
      if (in_options) CHECK_MESSAGE(!std::regex_search(line, raw), line);
    }
  }
  static const std::regex layout(R"([^ |] {3,}[^ |])");
  for (const auto& line : lines_of(text_of(kSource / "docs/reference.md"))) {
    if (line.rfind("| ", 0) != 0) continue;
    CHECK_MESSAGE(!std::regex_search(line, raw), line);
    CHECK_MESSAGE(!std::regex_search(line, layout), line);
  }
}
