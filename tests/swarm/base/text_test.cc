// Text from outside on its way to a terminal or a JSON reader.
#include "swarm/base/text.h"

#include <doctest/doctest.h>

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
