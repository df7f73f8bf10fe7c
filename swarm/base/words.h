// A command written as one line of text (`swarm up --check 'make test'`)
// split into its words as a POSIX shell splits them, with nothing expanded:
// the command is then run without a shell, so `$HOME`, `*` and `;` are
// plain characters, and a check stored in config.json means the same on
// every host.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace swarm {

// Words separated by blanks (spaces, tabs, newlines); '...' keeps every
// character, "..." keeps all but a backslash before " \ $ ` or a newline,
// a backslash outside quotes keeps the next character. Throws bad_input
// naming `what` for an unterminated quote, a trailing backslash or a text
// with no word in it (or with control characters other than blanks).
std::vector<std::string> split_words(std::string_view text, std::string_view what);

// The words joined back into one line that split_words reads as these
// words: each quoted only where it needs it.
std::string joined_words(const std::vector<std::string>& words);

}  // namespace swarm
