#include "swarm/base/text.h"

#include <cstdio>

#include <cstdint>
#include <cstring>
#include <vector>

namespace swarm {

namespace {

constexpr char kHex[] = "0123456789abcdef";

// The length of the well-formed UTF-8 sequence at text[i] (1 for ASCII), or
// 0 when the bytes there are not one; `code` gets its code point.
std::size_t sequence_at(std::string_view text, std::size_t i, std::uint32_t* code) {
  auto c = static_cast<unsigned char>(text[i]);
  if (c < 0x80) {
    *code = c;
    return 1;
  }
  std::size_t length = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
  if (length == 0 || c > 0xf4 || i + length > text.size()) return 0;
  std::uint32_t value = c & (0xff >> (length + 1));
  for (std::size_t k = 1; k < length; ++k) {
    auto next = static_cast<unsigned char>(text[i + k]);
    if ((next & 0xc0) != 0x80) return 0;
    value = (value << 6) | (next & 0x3f);
  }
  static const std::uint32_t kShortest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (value < kShortest[length] || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) return 0;
  *code = value;
  return length;
}

bool is_control(std::uint32_t code) { return code < 0x20 || code == 0x7f || (code >= 0x80 && code <= 0x9f); }

// The bidirectional formatting characters: marks, embeddings, overrides, isolates.
bool is_bidi(std::uint32_t code) {
  return code == 0x061c || code == 0x200e || code == 0x200f || (code >= 0x202a && code <= 0x202e) ||
         (code >= 0x2066 && code <= 0x2069);
}

// Whether every byte is printable ASCII (0x20 to 0x7e): nearly all text is,
// and needs no closer look. Eight bytes at a time: a byte below 0x20 borrows
// into its top bit when 0x20 is taken from it, 0x7f carries into it when 1 is
// added, and a byte from 0x80 has it already; no borrow or carry crosses a
// byte unless one of those is there.
bool plain_ascii(std::string_view text) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL, kTops = 0x8080808080808080ULL;
  std::size_t i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, text.data() + i, 8);
    if (((w - 0x20 * kOnes) | (w + kOnes) | w) & kTops) return false;
  }
  for (; i < text.size(); ++i) {
    auto u = static_cast<unsigned char>(text[i]);
    if (u < 0x20 || u >= 0x7f) return false;
  }
  return true;
}

void append_byte_escape(std::string& out, unsigned char byte) {
  out += "\\x";
  out += kHex[byte >> 4];
  out += kHex[byte & 15];
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  std::uint32_t code = 0;
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    std::size_t n = sequence_at(text, i, &code);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

namespace {

// Whether `text` is valid UTF-8 and no code point in it is `refused`.
template <typename Refused>
bool every_code_point(std::string_view text, Refused&& refused) {
  if (plain_ascii(text)) return true;
  std::uint32_t code = 0;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = sequence_at(text, i, &code);
    if (n == 0 || refused(code)) return false;
    i += n;
  }
  return true;
}

}  // namespace

bool is_plain_text(std::string_view text) { return every_code_point(text, is_control); }

bool shows_as_is(std::string_view text) {
  return every_code_point(text, [](std::uint32_t code) { return is_control(code) || is_bidi(code); });
}

std::string valid_utf8(std::string_view text) {
  if (is_valid_utf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  std::uint32_t code = 0;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = sequence_at(text, i, &code);
    if (n == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD
      ++i;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

std::string printable(std::string_view text, bool keep_newlines) {
  if (plain_ascii(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  std::uint32_t code = 0;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = sequence_at(text, i, &code);
    if (n == 0) {
      append_byte_escape(out, static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    if (code == '\n' && keep_newlines) {
      out += '\n';
    } else if (code < 0x80 && is_control(code)) {
      append_byte_escape(out, static_cast<unsigned char>(code));
    } else if (is_control(code) || is_bidi(code)) {
      out += "\\u";
      for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(code >> shift) & 15];
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

std::string strict_json_problem(std::string_view text) {
  // Without a control character or a byte from 0x80 there is nothing to
  // find: a record as swarm writes it (status checks 10,000 of them).
  if (plain_ascii(text)) return {};
  bool in_string = false;
  std::uint32_t code = 0;
  for (std::size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      std::size_t n = sequence_at(text, i, &code);
      if (n == 0) return "the value is not valid UTF-8";
      i += n;
      continue;
    }
    if (in_string) {
      if (c < 0x20) return "a string in the value holds a raw control character";
      if (c == '\\') {
        i += 2;  // the escaped character, whatever it is
        continue;
      }
      if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    }
    ++i;
  }
  return {};
}

std::string natural_key(std::string_view text) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  auto put_16 = [](std::string& out, std::size_t n) {
    out += static_cast<char>(n >> 8 & 0xff);
    out += static_cast<char>(n & 0xff);
  };
  std::string key;
  key.reserve(text.size() + 8);
  for (std::size_t i = 0; i < text.size();) {
    if (!digit(text[i])) {
      key += text[i++];  // never a digit's byte, so never taken for a run's
      continue;
    }
    // A run of digits: its count of significant digits first (a byte from
    // '0' on, so that against any other byte it sorts as a digit would;
    // '9' and two bytes more from 9 digits on), the digits, then the count
    // of leading zeros (fewer first).
    std::size_t end = i;
    while (end < text.size() && text[end] == '0') ++end;
    const std::size_t zeros = end - i, first = end;
    while (end < text.size() && digit(text[end])) ++end;
    const std::size_t significant = end - first;
    if (significant < 9) {
      key += static_cast<char>('0' + significant);
    } else {
      key += '9';
      put_16(key, significant);
    }
    key.append(text.substr(first, significant));
    put_16(key, zeros);
    i = end;
  }
  return key;
}

bool natural_less(std::string_view a, std::string_view b) { return natural_key(a) < natural_key(b); }

std::size_t display_width(std::string_view text) {
  std::size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

std::string truncated(std::string_view text, std::size_t width) {
  if (display_width(text) <= width) return std::string(text);
  if (width == 0) return {};
  std::string out;
  std::size_t columns = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) != 0x80) {
      if (columns + 1 == width) break;  // room for the ellipsis only
      ++columns;
    }
    out += text[i];
  }
  return out + "\u2026";
}

std::string truncated_middle(std::string_view text, std::size_t width) {
  const std::size_t have = display_width(text);
  if (have <= width) return std::string(text);
  if (width < 3) return truncated(text, width);
  // Characters' starts, to cut between them.
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) starts.push_back(i);
  const std::size_t head = (width - 1 + 1) / 2, tail = width - 1 - head;
  return std::string(text.substr(0, starts[head])) + "\u2026" + std::string(text.substr(starts[have - tail]));
}

std::string trailer_value(std::string_view text) { return printable(text); }

std::uint64_t stable_hash(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string stable_hash_hex(std::string_view bytes) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(stable_hash(bytes)));
  return hex;
}

std::string counted(std::size_t n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

std::string shell_word(std::string_view text) {
  std::string out;
  bool open = false;  // inside a single-quoted run
  for (char c : text) {
    if (c == '\'' || c == '\\') {
      if (open) out += '\'';
      open = false;
      out += c == '\'' ? "\"'\"" : "\"\\\\\"";
      continue;
    }
    if (!open) out += '\'';
    open = true;
    out += c;
  }
  if (open) out += '\'';
  return out.empty() ? "''" : out;
}

}  // namespace swarm
