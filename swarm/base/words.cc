#include "swarm/base/words.h"

#include "swarm/base/error.h"
#include "swarm/base/text.h"

namespace swarm {

namespace {

bool blank(char c) { return c == ' ' || c == '\t' || c == '\n'; }

// Characters a word can hold without quotes, as split_words reads it.
bool plain(char c) {
  return !blank(c) && c != '\'' && c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20 && c != 0x7f;
}

}  // namespace

std::vector<std::string> split_words(std::string_view text, std::string_view what) {
  auto bad = [&](const std::string& why) {
    return Error(Errc::bad_input, "bad " + std::string(what) + " '" + printable(text.substr(0, 200)) + "': " + why);
  };
  for (unsigned char c : text)
    if ((c < 0x20 && !blank(static_cast<char>(c))) || c == 0x7f) throw bad("it holds a control character");
  if (!is_valid_utf8(text)) throw bad("it is not UTF-8");
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t at = 0; at < text.size(); ++at) {
    const char c = text[at];
    if (blank(c)) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\\') {
      if (++at == text.size()) throw bad("it ends in a backslash");
      if (text[at] != '\n') word += text[at];  // a backslash-newline joins lines
      continue;
    }
    if (c == '\'') {
      const auto end = text.find('\'', at + 1);
      if (end == std::string_view::npos) throw bad("a ' is never closed");
      word.append(text.substr(at + 1, end - at - 1));
      at = end;
      continue;
    }
    if (c == '"') {
      for (++at;; ++at) {
        if (at >= text.size()) throw bad("a \" is never closed");
        if (text[at] == '"') break;
        if (text[at] == '\\' && at + 1 < text.size() &&
            (text[at + 1] == '"' || text[at + 1] == '\\' || text[at + 1] == '$' || text[at + 1] == '`' ||
             text[at + 1] == '\n')) {
          ++at;
          if (text[at] != '\n') word += text[at];
          continue;
        }
        word += text[at];
      }
      continue;
    }
    word += c;
  }
  if (in_word) words.push_back(std::move(word));
  if (words.empty()) throw bad("it names no command");
  return words;
}

std::string joined_words(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) {
    if (!out.empty()) out += ' ';
    bool quote = word.empty();
    for (char c : word) quote = quote || !plain(c);
    if (!quote) {
      out += word;
      continue;
    }
    out += '\'';
    for (char c : word) {
      if (c == '\'') out += "'\\''";
      else out += c;
    }
    out += '\'';
  }
  return out;
}

}  // namespace swarm
