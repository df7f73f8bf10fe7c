#include "swarm/holds/patterns.h"

#include <fnmatch.h>

#include <cstdint>

#include "swarm/base/error.h"
#include "swarm/base/text.h"

namespace swarm {

namespace {

constexpr std::size_t kMaxPatternBytes = 1024;

std::vector<std::string_view> segments_of(std::string_view text) {
  std::vector<std::string_view> out;
  while (true) {
    const auto slash = text.find('/');
    out.push_back(text.substr(0, slash));
    if (slash == std::string_view::npos) return out;
    text.remove_prefix(slash + 1);
  }
}

bool is_glob(std::string_view segment) { return segment.find_first_of("*?[\\") != std::string_view::npos; }

// The literal text before a segment's first glob character, and after its last.
std::string_view literal_head(std::string_view s) { return s.substr(0, s.find_first_of("*?[")); }
std::string_view literal_tail(std::string_view s) {
  const auto last = s.find_last_of("*?]");
  return last == std::string_view::npos ? s : s.substr(last + 1);
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// Whether one segment of a path matches one segment of a pattern.
bool segment_matches(std::string_view pattern, std::string_view name) {
  if (!is_glob(pattern)) return pattern == name;
  const std::string p(pattern), n(name);
  return ::fnmatch(p.c_str(), n.c_str(), 0) == 0;  // as git's wildmatch: `*` matches a leading dot too
}

// Whether pattern segments [i..] match path segments [j..] or a leading
// part of them (a folder that holds the rest). Each (i, j) is decided once
// (`seen`: 0 unknown, 1 no, 2 yes): a pattern of many `**` would otherwise
// take exponential time, and other slots' patterns are matched at every
// commit and land.
bool match_from(const std::vector<std::string_view>& p, std::size_t i, const std::vector<std::string_view>& s,
                std::size_t j, std::vector<std::uint8_t>& seen) {
  if (i == p.size()) return true;  // the pattern named a folder the path is in (or the path itself)
  std::uint8_t& known = seen[i * (s.size() + 1) + j];
  if (known != 0) return known == 2;
  bool yes = false;
  if (p[i] == "**") {
    for (std::size_t k = j; k <= s.size() && !yes; ++k) yes = match_from(p, i + 1, s, k, seen);
  } else {
    yes = j < s.size() && segment_matches(p[i], s[j]) && match_from(p, i + 1, s, j + 1, seen);
  }
  known = yes ? 2 : 1;
  return yes;
}

// Whether two segments could both match one name (true when in doubt).
bool segments_may_meet(std::string_view a, std::string_view b) {
  // An escaped character makes the literal parts other than they read: in doubt.
  if (a.find('\\') != std::string_view::npos || b.find('\\') != std::string_view::npos) return true;
  if (!is_glob(a) && !is_glob(b)) return a == b;
  if (!is_glob(a)) return segment_matches(b, a);
  if (!is_glob(b)) return segment_matches(a, b);
  const auto ha = literal_head(a), hb = literal_head(b);
  if (!starts_with(ha, hb) && !starts_with(hb, ha)) return false;
  const auto ta = literal_tail(a), tb = literal_tail(b);
  return ends_with(ta, tb) || ends_with(tb, ta);
}

}  // namespace

void require_hold_pattern(std::string_view pattern) {
  auto bad = [&](const std::string& why) {
    throw Error(Errc::bad_input, "bad pattern '" + printable(pattern) + "': " + why);
  };
  if (pattern.empty()) bad("empty");
  if (pattern.size() > kMaxPatternBytes) bad("longer than " + std::to_string(kMaxPatternBytes) + " bytes");
  if (!is_plain_text(pattern)) bad("not text, or it holds a control character");
  if (pattern.front() == '/') bad("patterns are relative to the repository's root (src/api/**, not /src/api/**)");
  for (const auto segment : segments_of(pattern))
    if (segment.empty() || segment == "." || segment == "..")
      bad("an empty, '.' or '..' part (patterns are paths from the repository's root)");
}

bool pattern_matches(std::string_view pattern, std::string_view path) {
  const auto p = segments_of(pattern), s = segments_of(path);
  std::vector<std::uint8_t> seen(p.size() * (s.size() + 1), 0);
  return match_from(p, 0, s, 0, seen);
}

bool patterns_overlap(std::string_view a, std::string_view b) {
  const auto pa = segments_of(a), pb = segments_of(b);
  for (std::size_t i = 0;; ++i) {
    // One pattern names a folder the other's paths may be in (or both end).
    if (i == pa.size() || i == pb.size()) return true;
    if (pa[i] == "**" || pb[i] == "**") return true;  // any depth: in doubt
    if (!segments_may_meet(pa[i], pb[i])) return false;
  }
}

bool covers_whole_tree(std::string_view pattern) {
  if (pattern.empty()) return false;
  for (std::size_t at = 0; at <= pattern.size();) {
    std::size_t end = pattern.find('/', at);
    if (end == std::string_view::npos) end = pattern.size();
    const std::string_view segment = pattern.substr(at, end - at);
    if (segment != "*" && segment != "**") return false;
    at = end + 1;
  }
  return true;
}

bool any_overlap(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (const auto& x : a)
    for (const auto& y : b)
      if (patterns_overlap(x, y)) return true;
  return false;
}

}  // namespace swarm
