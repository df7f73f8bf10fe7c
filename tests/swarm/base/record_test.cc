// The record reader's two ways of reading an object (by hand for a flat
// record, through cJSON's tree for any other) say the same of every input.
#include "swarm/base/record.h"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "swarm/base/text.h"

namespace {

// What a reading hands over, member by member, and the reason it ends with.
std::string reading(const std::string& text, bool by_tree) {
  std::string out;
  auto member = [&](const cJSON* item, std::string_view as_written, std::string* reason) {
    out += std::string(item->string) + "|" + std::to_string(item->type & 0xff) + "|";
    if (cJSON_IsString(item)) out += item->valuestring;
    if (cJSON_IsNumber(item)) out += std::to_string(item->valuedouble) + "/" + std::to_string(item->valueint);
    if (cJSON_IsBool(item)) out += std::to_string(item->valueint != 0);
    if (cJSON_IsArray(item)) {
      out += "[";
      for (const cJSON* e = item->child; e != nullptr; e = e->next)
        out += std::to_string(e->type & 0xff) + ":" + (cJSON_IsString(e) ? e->valuestring : "") + ",";
      out += item->child != nullptr && item->child->prev != nullptr && item->child->prev->next == nullptr ? "]" : "?]";
    }
    out += "|" + std::string(as_written) + "\n";
    if (std::string(item->string) == "stop") {
      *reason = "stopped at stop";
      return false;
    }
    return true;
  };
  auto unknown = [](const char*) { return false; };  // every text as written is kept
  std::string why;
  if (!by_tree) why = swarm::record::read_object(text, unknown, member);
  else if (why = swarm::strict_json_problem(text); why.empty())
    why = swarm::record::detail::read_object_tree(text, unknown, member);
  return out + "=> " + why;
}

// A random value, most often one a flat record holds, sometimes not.
std::string value(std::mt19937_64& rng) {
  static const std::vector<std::string> kValues = {
      "\"text\"", "\"\"", "\"caf\xc3\xa9\"", "\"a\\\"b\"", "\"a\\\\b\"", "\"\\u00e9\"", "0", "-0", "42", "-7",
      "3.25", "1e3", "1E-2", "2.5e+10", "1e400", "-1e400", "01", "1.", ".5", "+1", "-", "1e", "0x10", "1.5.2",
      "18446744073709551615", "9007199254740993", "null", "true", "false", "nul", "True", "{}", "{\"a\":1}", "[1,2]",
      "[]", "\"tab\there\"", "\"ctl\x01\"", "\"\xff\"", "[\"a\",\"b\"]", "[ \"a\" , \"b\" ]", "[\"a\",]",
      "[\"a\" \"b\"]", "[\"x\",1]", "[\"a\\\"b\"]", "[ ]", "[\"\"]", "[\"caf\xc3\xa9\"]", "[\"a\"", "[,]",
      "[[\"a\"]]", "[\"ctl\x01\"]"};
  return kValues[rng() % kValues.size()];
}

std::string space(std::mt19937_64& rng) {
  static const std::vector<std::string> kSpaces = {"", "", "", " ", "\n", "\t ", "\r\n", "\v", "\x01"};
  return kSpaces[rng() % kSpaces.size()];
}

}  // namespace

TEST_CASE("Record_ReadByHandSaysWhatCJsonsTreeSays") {
  // Hand-written edge cases first, then 20,000 random objects: names
  // repeated, values of every kind, stray whitespace and bytes, text after
  // the object, nested values; the two readings agree on every member
  // (name, type, value, text as written) and on the reason, if any.
  std::vector<std::string> inputs = {
      "", "{}", " {} ", "{}x", "[]", "\"s\"", "{\"a\":1,}", "{\"a\" 1}", "{\"a\":1 \"b\":2}", "{a:1}",
      "{\"a\":1}{", "{\"a\":\"x\",\"a\":\"y\"}", "{\"stop\":1,\"after\":2}", "{\"slot\":\"s1\",\"pid\":12,\"x\":null}",
      "{\"n\":1e308}", "{\"n\":-1e-320}", "{\"\":\"\"}", "{\"a\":true,\"b\":false}", "{\"a\":\"\\u0000\"}",
      "{\"a\":\"x\"", "{\"a\":", "{\"a\"", "{\"a\":tru}", "{\"a\":nullx}",
      "{\"n\":" + std::string(80, '7') + "}", "{\"n\":0." + std::string(80, '1') + "e-3}"};
  std::mt19937_64 rng(20261127);
  for (int i = 0; i < 20000; ++i) {
    std::string text = space(rng) + "{" + space(rng);
    const int members = static_cast<int>(rng() % 6);
    for (int m = 0; m < members; ++m) {
      if (m > 0) text += space(rng) + "," + space(rng);
      static const std::vector<std::string> kNames = {"slot", "pid", "a", "b", "stop", "\\u0061", "caf\xc3\xa9"};
      text += "\"" + kNames[rng() % kNames.size()] + "\"" + space(rng) + ":" + space(rng) + value(rng);
    }
    text += space(rng) + "}" + (rng() % 20 == 0 ? std::string("junk") : space(rng));
    inputs.push_back(text);
  }
  for (const auto& text : inputs) CHECK_MESSAGE(reading(text, false) == reading(text, true), text);
}
