// Text from outside on its way to a terminal or a JSON reader.
#include "swarm/base/text.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace swarm;

TEST_CASE("Printable_EscapesControlCharactersAndIllFormedBytes") {
  // C0, DEL and C1 are shown as escapes, ill-formed bytes as \xNN; printable text passes as it is.
  CHECK(printable("T-42 gh#17 caf\xc3\xa9") == "T-42 gh#17 caf\xc3\xa9");
  CHECK(printable("a\x1b]0;title\x07\rb") == "a\\x1b]0;title\\x07\\x0db");
  CHECK(printable("x\x7fy") == "x\\x7fy");
  CHECK(printable("c1:\xc2\x9b") == "c1:\\u009b");
  CHECK(printable("bad\xff") == "bad\\xff");
  CHECK(printable("two\nlines") == "two\\x0alines");
  CHECK(printable("two\nlines", true) == "two\nlines");
  // Bidirectional overrides and isolates, which make text read other than it is.
  CHECK(printable("abc\xe2\x80\xae" "dcba") == "abc\\u202edcba");
  CHECK(printable("x\xe2\x81\xa6y") == "x\\u2066y");
  CHECK_FALSE(shows_as_is("abc\xe2\x80\xae" "dcba"));
  CHECK(shows_as_is("caf\xc3\xa9"));
}

TEST_CASE("PlainText_IsWellFormedUtf8WithoutControls") {
  // what a task id may be: well-formed, no control character of any range.
  CHECK(is_plain_text("acme/api#9"));
  CHECK(is_plain_text("\xe2\x82\xac"));
  CHECK_FALSE(is_plain_text("tab\there"));
  CHECK_FALSE(is_plain_text("\xc2\x85"));  // NEL, a C1 control
  CHECK_FALSE(is_plain_text("\xe0\x80\xaf"));  // overlong
  CHECK_FALSE(is_plain_text("\xed\xa0\x80"));  // a surrogate
  CHECK(is_valid_utf8("\xf0\x9f\x90\x9d"));
  CHECK_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // beyond U+10FFFF
  CHECK(valid_utf8("a\xffz") == "a\xef\xbf\xbdz");
}

TEST_CASE("StrictJsonProblem_NamesWhatCJsonWouldLetThrough") {
  // raw control characters inside strings and ill-formed UTF-8 make a record corrupt; escapes and whitespace do not.
  CHECK(strict_json_problem("{\"a\":\"x\\u001by\"}\n").empty());
  CHECK(strict_json_problem("{\n\t\"a\" : \"\\\"quoted\\\"\"\r\n}").empty());
  CHECK(strict_json_problem("{\"a\":\"x\x1by\"}") == "a string in the value holds a raw control character");
  CHECK(strict_json_problem("{\"a\":\"line\nbreak\"}") == "a string in the value holds a raw control character");
  CHECK(strict_json_problem("{\"a\":\"\xff\"}") == "the value is not valid UTF-8");
}

namespace {

// Natural order spelled out another way: the text cut into runs of digits
// and of the rest; runs compared in turn (numbers by value, then fewer
// leading zeros first; the rest by bytes); a text that runs out first
// first; equal runs throughout decided by the bytes.
bool natural_by_runs(std::string_view a, std::string_view b) {
  auto runs = [](std::string_view s) {
    std::vector<std::string_view> out;
    for (std::size_t at = 0; at < s.size();) {
      const bool digits = s[at] >= '0' && s[at] <= '9';
      std::size_t end = at;
      while (end < s.size() && (s[end] >= '0' && s[end] <= '9') == digits) ++end;
      out.push_back(s.substr(at, end - at));
      at = end;
    }
    return out;
  };
  const auto ra = runs(a), rb = runs(b);
  for (std::size_t k = 0; k < ra.size() && k < rb.size(); ++k) {
    const bool da = ra[k][0] >= '0' && ra[k][0] <= '9', db = rb[k][0] >= '0' && rb[k][0] <= '9';
    if (da && db) {
      const auto sa = ra[k].substr(std::min(ra[k].find_first_not_of('0'), ra[k].size()));
      const auto sb = rb[k].substr(std::min(rb[k].find_first_not_of('0'), rb[k].size()));
      if (sa.size() != sb.size()) return sa.size() < sb.size();
      if (sa != sb) return sa < sb;
      if (ra[k].size() != rb[k].size()) return ra[k].size() < rb[k].size();
      continue;
    }
    // A run of digits against other text: their first bytes decide, as bytes.
    const std::size_t n = std::min(ra[k].size(), rb[k].size());
    for (std::size_t i = 0; i < n; ++i)
      if (ra[k][i] != rb[k][i]) return static_cast<unsigned char>(ra[k][i]) < static_cast<unsigned char>(rb[k][i]);
    if (ra[k].size() != rb[k].size()) {
      // One run is a start of the other: the shorter text ends there (it is
      // first), or its next run's digit meets the longer run's next byte.
      const bool a_shorter = ra[k].size() < rb[k].size();
      const auto& shorter = a_shorter ? ra : rb;
      const std::string_view longer = a_shorter ? rb[k] : ra[k];
      if (k + 1 >= shorter.size()) return a_shorter;
      const auto mine = static_cast<unsigned char>(shorter[k + 1][0]), theirs = static_cast<unsigned char>(longer[n]);
      return a_shorter ? mine < theirs : theirs < mine;
    }
  }
  if (ra.size() != rb.size()) return ra.size() < rb.size();
  return a < b;
}

}  // namespace

TEST_CASE("NaturalLess_OrdersNumbersByValueWhereverTheTextsPart") {
  CHECK(natural_less("agent-2", "agent-10"));
  CHECK_FALSE(natural_less("agent-10", "agent-2"));
  CHECK(natural_less("s12", "s123"));
  CHECK(natural_less("s13", "s120"));
  CHECK(natural_less("s13", "s013"));  // the same number: fewer leading zeros first
  CHECK(natural_less("s1x", "s10"));
  CHECK(natural_less("a9b", "a10"));
  CHECK(natural_less("abc", "abd"));
  CHECK(natural_less("x", "x0"));
  CHECK(natural_less("render-7-b", "render-7-c"));
  CHECK(natural_less("w1", "w1a"));
  CHECK_FALSE(natural_less("same-42", "same-42"));
  CHECK(natural_less("s999999999", "s1234567890"));  // 9 digits before 10
  CHECK(natural_less("s1234567890", "s1234567891"));
  CHECK(natural_less("s12345678901234567890", "s012345678901234567890"));
  CHECK(natural_less("n0", "n000"));
  CHECK(natural_less("n000", "n1"));
  CHECK(natural_less("v9", "v\xc3\xa9"));  // a digit before a byte from 0x80
  CHECK(natural_less("v/", "v0"));         // and after one below '0'
  CHECK(natural_less("v0", "v:"));
  CHECK(natural_key("r-07") == natural_key("r-07"));
  CHECK(natural_key("r-07") != natural_key("r-7"));
  // Random texts of a few letters, digits and zeros, against the rule
  // spelled out run by run, where the two agree on what a run is.
  std::mt19937_64 next(0x9e3779b97f4a7c15ULL);
  const char alphabet[] = "a-0019\xc3";
  auto text = [&] {
    std::string s = "s";
    for (std::uint64_t n = next() % 14; n > 0; --n) s += alphabet[next() % (sizeof alphabet - 1)];
    return s;
  };
  int compared = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string a = text(), b = text();
    INFO(a << " vs " << b);
    CHECK(natural_less(a, b) == natural_by_runs(a, b));
    CHECK_FALSE((natural_less(a, b) && natural_less(b, a)));
    ++compared;
  }
  CHECK(compared == 20000);
}
