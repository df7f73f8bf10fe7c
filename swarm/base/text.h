// Text that came from outside (records, keys, lock files) on its way to a
// terminal or a JSON reader: UTF-8 checked, control characters escaped, so a
// hostile record can neither drive the terminal nor break a strict JSON
// parser (adr/0018).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace swarm {

// Whether `text` is well-formed UTF-8 (no overlong forms, no surrogates).
bool is_valid_utf8(std::string_view text);
// Whether `text` is well-formed UTF-8 without control characters (C0, DEL,
// C1): a one-line text fit to show as it is.
bool is_plain_text(std::string_view text);
// Natural order, as people sort names: runs of digits compare as numbers
// (agent-2 before agent-10), the rest byte by byte; equal numbers with more
// leading zeros after fewer; ties broken by the bytes, so it is a strict order.
bool natural_less(std::string_view a, std::string_view b);
// The same order as bytes: natural_less(a, b) exactly when natural_key(a) <
// natural_key(b) (texts of at most 65,535 bytes). Sorting 10,000 names by
// their keys compares bytes, not runs.
std::string natural_key(std::string_view text);

// How many columns `text` takes on a terminal: its UTF-8 code points (every
// character one column; escaped text is ASCII).
std::size_t display_width(std::string_view text);
// `text` cut to at most `width` columns, ending in "…" when it was cut.
std::string truncated(std::string_view text, std::size_t width);
// The same, cut in the middle ("build-…-07"): for names whose end tells
// them apart as much as their start (hosts).
std::string truncated_middle(std::string_view text, std::size_t width);

// A 64-bit FNV-1a hash of `bytes`: the same on every host and build (task
// lease names, folder names), for naming, never for security.
std::uint64_t stable_hash(std::string_view bytes);
// Its 16 hex digits.
std::string stable_hash_hex(std::string_view bytes);

// "1 folder", "2 folders": `n` and the noun, with an s unless n is 1.
std::string counted(std::size_t n, std::string_view noun);

// Whether printable(text) is `text` itself: nothing in it to escape.
bool shows_as_is(std::string_view text);
// `text` with each byte of an ill-formed sequence replaced by U+FFFD.
std::string valid_utf8(std::string_view text);
// `text` for a terminal: control characters (C0, DEL, C1), the bytes of
// ill-formed UTF-8 and the bidirectional formatting characters (which can
// make text read other than it is) shown as \xNN or \uNNNN escapes; with
// `keep_newlines`, '\n' stays (for multi-line messages swarm itself writes).
std::string printable(std::string_view text, bool keep_newlines = false);
// `text` as the value of a git trailer: one line, its control characters
// (a newline above all, which would start a trailer of its own, such as a
// forged Swarm-Fencing-Token or Signed-off-by) and ill-formed UTF-8 escaped.
std::string trailer_value(std::string_view text);
// `text` as one word for bash, zsh and fish alike: runs of characters in
// single quotes, and each ' or \ between them in double quotes ("'" and
// "\\"), the only characters fish reads specially inside single quotes.
// What eval or source makes of it is `text`, whatever it holds.
std::string shell_word(std::string_view text);
// Why `text` is no JSON text a strict reader takes ("" when it may be
// one): ill-formed UTF-8, or a raw control character inside a string. A
// record with either is corrupt.
std::string strict_json_problem(std::string_view text);

}  // namespace swarm
