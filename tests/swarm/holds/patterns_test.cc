// The hold patterns' rules as pure functions: what a pattern matches, and
// the overlap rule (adr/0041), which may call two patterns overlapping when
// no path matches both but never misses a path both match (a property test
// over random patterns and paths).
#include "swarm/holds/patterns.h"

#include <doctest/doctest.h>

#include <random>

#include "swarm/base/error.h"

using namespace swarm;

TEST_CASE("HoldPattern_MatchesAsAPathspecGlobFromTheRoot") {
  CHECK(pattern_matches("src/api/**", "src/api/v1/users.go"));
  CHECK(pattern_matches("src/api/**", "src/api/x"));
  CHECK(pattern_matches("src/api", "src/api/v1/users.go"));  // a folder holds what is in it
  CHECK(pattern_matches("README.md", "README.md"));
  CHECK(pattern_matches("docs/*.md", "docs/a.md"));
  CHECK_FALSE(pattern_matches("docs/*.md", "docs/sub/a.md"));
  CHECK(pattern_matches("**/*.go", "a/b/c.go"));
  CHECK(pattern_matches("**/*.go", "c.go"));
  CHECK_FALSE(pattern_matches("src/api/**", "src/apiv2/x"));
  CHECK_FALSE(pattern_matches("README.md", "docs/README.md"));
}

TEST_CASE("HoldPattern_OverlapFromTheLiteralParts") {
  CHECK(patterns_overlap("src/api/**", "src/api/users.go"));
  CHECK(patterns_overlap("src", "src/api/users.go"));
  CHECK(patterns_overlap("src/*.go", "src/main.go"));
  CHECK(patterns_overlap("**/*.md", "docs/x.go"));  // in doubt: any depth
  CHECK_FALSE(patterns_overlap("src/api/**", "src/ui/**"));
  CHECK_FALSE(patterns_overlap("README.md", "LICENSE"));
  CHECK_FALSE(patterns_overlap("docs/*.md", "docs/*.go"));
  CHECK_FALSE(patterns_overlap("src/a*", "src/b*"));
  CHECK(patterns_overlap("src/a*", "src/ab*"));
}

TEST_CASE("HoldPattern_BadPatternsAreExit2NamingThem") {
  for (const char* bad : {"", "/src", "src//x", "../x", "src/./x", "a\x1b[2J", "a\nb"}) {
    CAPTURE(bad);
    try {
      require_hold_pattern(bad);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.kind() == Errc::bad_input);
    }
  }
  require_hold_pattern("src/api/**");
  require_hold_pattern("*.md");
}

// For random pairs of patterns and random paths: a path both match means
// the pair is called overlapping.
TEST_CASE("HoldPattern_APathBothMatchMeansOverlap") {
  const char* const pattern_parts[] = {"a", "b", "ab", "ba", "*", "a*", "*b", "?", "[ab]", "**", "a?", "*a*", ".a", "[!a]b"};
  const char* const path_parts[] = {"a", "b", "ab", "ba", "aab", "bb", ".a", "aba", "cb"};
  std::mt19937 engine(20261127);
  auto pick = [&](auto& parts, int most) {
    std::string s;
    const int n = 1 + static_cast<int>(engine() % static_cast<unsigned>(most));
    for (int i = 0; i < n; ++i) s += (i ? "/" : "") + std::string(parts[engine() % std::size(parts)]);
    return s;
  };
  int both = 0;
  for (int round = 0; round < 200000; ++round) {
    const std::string p = pick(pattern_parts, 3), q = pick(pattern_parts, 3), path = pick(path_parts, 4);
    if (!pattern_matches(p, path) || !pattern_matches(q, path)) continue;
    ++both;
    if (!patterns_overlap(p, q)) FAIL_CHECK("'" << p << "' and '" << q << "' both match '" << path << "' but are not called overlapping");
  }
  CHECK(both > 1000);  // the property was tried, not skipped
}

TEST_CASE("HoldPattern_ManyDoubleStarsAreMatchedWithoutBacktrackingForEver") {
  // a valid pattern of 300 `**` parts against a 12-part path: each (pattern part, path part) is decided once, so
  // this returns at once (it took seconds at 22 parts, about 6x more per two, before); the answers stay right.
  std::string many;
  for (int i = 0; i < 300; ++i) many += "**/";
  const std::string path = "a/b/c/d/e/f/g/h/i/j/k/l.txt";
  CHECK_FALSE(pattern_matches(many + "zzz", path));
  CHECK(pattern_matches(many + "l.txt", path));
  CHECK(pattern_matches(many + "k", path));
  CHECK_NOTHROW(require_hold_pattern(many + "zzz"));
}
