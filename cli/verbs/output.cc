#include "cli/verbs/output.h"

#include "cli/verbs/documents/documents.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "cli/verbs/exit_code.h"
#include "swarm/base/text.h"

namespace cli {

swarm::Json with_schema(const std::string& verb, swarm::Json doc) {
  swarm::Json out = swarm::Json::object();
  out.set("schema", "swarm." + verb + ".v1");
  // Schema first, then the verb's own fields.
  out.adopt_members(std::move(doc), "schema");
  return out;
}

void Output::result(const std::string& verb, const std::string& human, swarm::Json doc) const {
  if (json_) {
    std::cout << with_schema(verb, std::move(doc)).dump() << std::endl;
    return;
  }
  if (human.empty()) return;
  // Whatever of a record a verb's text quotes cannot drive the terminal:
  // control characters are escaped (the text's own line breaks stay).
  const std::string text = swarm::printable(human, true);
  std::cout << text;
  if (text.back() != '\n') std::cout << '\n';
  std::cout.flush();
}

void Output::rendered(const std::string& text) const {
  std::cout << text;
  if (!text.empty() && text.back() != '\n') std::cout << '\n';
  std::cout.flush();
}

void Output::json_line(const swarm::Json& doc) const { std::cout << doc.dump() << std::endl; }

void Output::warn(const std::string& message) const {
  std::cerr << "swarm: warning: " << swarm::printable(message, true) << std::endl;
}

void Output::note(const std::string& message) const { std::cerr << "swarm: " << swarm::printable(message, true) << std::endl; }

int Output::error(swarm::Errc kind, const std::string& message) const {
  int code = exit_code_for(kind);
  if (json_) {
    swarm::Json doc = swarm::Json::object();
    doc.set("schema", "swarm.error.v1").set("kind", swarm::to_string(kind)).set("message", message).set("exit", code);
    std::cerr << doc.dump() << std::endl;
  } else {
    std::cerr << "swarm: error: " << swarm::printable(message, true) << std::endl;
  }
  return code;
}

Presentation terminal_presentation() {
  Presentation out;
  out.tty = isatty(STDOUT_FILENO) != 0;
  winsize size{};
  if (out.tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
    out.columns = size.ws_col;
    out.lines = size.ws_row;
  }
  auto number = [](const char* name) -> std::size_t {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0' || std::strlen(text) > 5 || std::strspn(text, "0123456789") != std::strlen(text)) return 0;
    return static_cast<std::size_t>(std::atoi(text));
  };
  if (out.columns == 0) out.columns = number("COLUMNS");
  if (out.lines == 0) out.lines = number("LINES");
  const char* term = std::getenv("TERM");
  out.color = out.tty && std::getenv("NO_COLOR") == nullptr && !(term != nullptr && std::string_view(term) == "dumb");
  return out;
}

std::string aligned(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& r : rows) {
    width.resize(std::max(width.size(), r.size()));
    for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], swarm::display_width(r[i]));
  }
  std::string out;
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < r.size(); ++i) {
      out += r[i];
      if (i + 1 < r.size()) out.append(width[i] - swarm::display_width(r[i]) + 2, ' ');
    }
    out += '\n';
  }
  return out;
}

}  // namespace cli
