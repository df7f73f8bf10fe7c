// Json and JsonArena: trees made in an arena stay intact while it lives.
#include "swarm/base/json.h"

#include <doctest/doctest.h>

#include "swarm/slots/session.h"

using namespace swarm;

TEST_CASE("JsonArena_NestedArenaLeavesTheOuterTreesAlone") {
  // parse_session opens its own arena; inside an outer one it must not reuse the outer trees' memory.
  JsonArena outer;
  Json tree = Json::parse(R"({"name":"outer tree","items":[1,2,3],"nested":{"k":"v"}})");
  REQUIRE(tree);
  const std::string before = tree.dump();
  auto parsed = parse_session(R"({"slot":"s","host":"h","pad":")" + std::string(2000, 'x') + R"("})");
  REQUIRE(parsed.session);
  CHECK(to_json(*parsed.session).size() > 2000);
  CHECK(tree.dump() == before);
}

TEST_CASE("Json_ParseRefusesTrailingTextAndNulBytes") {
  // one whole JSON value or nothing: trailing text and embedded NULs are not JSON.
  CHECK(Json::parse(R"({"a":1})"));
  CHECK_FALSE(Json::parse(R"({"a":1} trailing)"));
  CHECK_FALSE(Json::parse(std::string("{\"a\":\"x\0y\"}", 12)));
  CHECK_FALSE(Json::parse(""));
  CHECK(quoted("say \"hi\"\n") == R"("say \"hi\"\n")");
}

TEST_CASE("Quoted_IsWhatCJsonPrints") {
  // every ASCII byte but NUL, alone and in a run, and well-formed UTF-8: the hand-written escaper and cJSON
  // agree byte for byte.
  std::string all;
  for (int c = 1; c < 128; ++c) {
    std::string one(1, static_cast<char>(c));
    all += one;
    Json holder = Json::array();
    cJSON_AddItemToArray(holder.get(), cJSON_CreateString(one.c_str()));
    std::string printed = holder.dump();
    CHECK(quoted(one) == printed.substr(1, printed.size() - 2));
  }
  all += "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x9d";
  Json holder = Json::array();
  cJSON_AddItemToArray(holder.get(), cJSON_CreateString(all.c_str()));
  std::string printed = holder.dump();
  CHECK(quoted(all) == printed.substr(1, printed.size() - 2));
}

TEST_CASE("Quoted_IllFormedUtf8BecomesTheReplacementCharacter") {
  // output is always valid UTF-8: each byte of an ill-formed sequence is U+FFFD, the rest as cJSON prints it.
  for (int c = 128; c < 256; ++c) CHECK(quoted(std::string(1, static_cast<char>(c))) == "\"\xef\xbf\xbd\"");
  CHECK(quoted("a\xff\xfe\"b") == "\"a\xef\xbf\xbd\xef\xbf\xbd\\\"b\"");
  CHECK(quoted("\xc0\xaf") == "\"\xef\xbf\xbd\xef\xbf\xbd\"");  // an overlong '/'
  Json doc = Json::object();
  doc.set("k", std::string_view("x\xed\xa0\x80y"));  // a surrogate
  CHECK(doc.dump() == "{\"k\":\"x\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdy\"}");
}
