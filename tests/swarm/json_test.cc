// Json and JsonArena: trees made in an arena stay intact while it lives.
#include "swarm/json.h"

#include <doctest/doctest.h>

#include "swarm/session.h"

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
  // every byte but NUL, alone and in a run: the hand-written escaper and cJSON agree byte for byte.
  std::string all;
  for (int c = 1; c < 256; ++c) {
    std::string one(1, static_cast<char>(c));
    all += one;
    Json holder = Json::array();
    cJSON_AddItemToArray(holder.get(), cJSON_CreateString(one.c_str()));
    std::string printed = holder.dump();
    CHECK(quoted(one) == printed.substr(1, printed.size() - 2));
  }
  Json holder = Json::array();
  cJSON_AddItemToArray(holder.get(), cJSON_CreateString(all.c_str()));
  std::string printed = holder.dump();
  CHECK(quoted(all) == printed.substr(1, printed.size() - 2));
}
