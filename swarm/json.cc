#include "swarm/json.h"

#include <cmath>
#include <string>

namespace swarm {

Json Json::object() { return Json(cJSON_CreateObject()); }
Json Json::array() { return Json(cJSON_CreateArray()); }

Json Json::parse(std::string_view text) {
  // Require the whole text to be one value: "{} trailing" is not valid JSON.
  if (text.find('\0') != std::string_view::npos) return Json(nullptr);
  std::string copy(text);
  return Json(cJSON_ParseWithOpts(copy.c_str(), nullptr, true));
}

Json& Json::set(const char* key, std::string_view value) {
  std::string copy(value);
  cJSON_DeleteItemFromObjectCaseSensitive(root_.get(), key);
  cJSON_AddItemToObject(root_.get(), key, cJSON_CreateString(copy.c_str()));
  return *this;
}

Json& Json::set(const char* key, std::int64_t value) {
  // cJSON keeps numbers as doubles: exact up to 2^53, far beyond pids and revisions.
  cJSON_DeleteItemFromObjectCaseSensitive(root_.get(), key);
  cJSON_AddItemToObject(root_.get(), key, cJSON_CreateNumber(static_cast<double>(value)));
  return *this;
}

Json& Json::set(const char* key, std::uint64_t value) { return set(key, static_cast<std::int64_t>(value)); }

Json& Json::set(const char* key, double value) {
  cJSON_DeleteItemFromObjectCaseSensitive(root_.get(), key);
  cJSON_AddItemToObject(root_.get(), key, cJSON_CreateNumber(value));
  return *this;
}

Json& Json::set(const char* key, bool value) {
  cJSON_DeleteItemFromObjectCaseSensitive(root_.get(), key);
  cJSON_AddItemToObject(root_.get(), key, cJSON_CreateBool(value));
  return *this;
}

Json& Json::set_null(const char* key) {
  cJSON_DeleteItemFromObjectCaseSensitive(root_.get(), key);
  cJSON_AddItemToObject(root_.get(), key, cJSON_CreateNull());
  return *this;
}

Json& Json::set(const char* key, Json child) {
  cJSON_DeleteItemFromObjectCaseSensitive(root_.get(), key);
  cJSON_AddItemToObject(root_.get(), key, child.release());
  return *this;
}

Json& Json::push(Json child) {
  cJSON_AddItemToArray(root_.get(), child.release());
  return *this;
}

namespace {
std::string printed(cJSON* root, bool pretty) {
  char* text = pretty ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
  if (text == nullptr) return {};
  std::string out(text);
  cJSON_free(text);
  return out;
}
}  // namespace

std::string Json::dump() const { return printed(root_.get(), false); }
std::string Json::dump_pretty() const { return printed(root_.get(), true); }

std::string quoted(std::string_view text) {
  Json holder = Json::array();
  std::string copy(text);
  cJSON_AddItemToArray(holder.get(), cJSON_CreateString(copy.c_str()));
  std::string out = holder.dump();  // ["..."]
  return out.substr(1, out.size() - 2);
}

}  // namespace swarm
