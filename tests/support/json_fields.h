// A field of a parsed JSON object, for checks that fail one assertion when
// the field is missing or of another type, instead of crashing the test
// binary on a null pointer.
#pragma once

#include <cJSON.h>

#include <cmath>
#include <string>

namespace testing {

// The string member `name` of `object`; "(missing)" when there is none.
inline std::string text_of(const cJSON* object, const char* name) {
  const cJSON* item = cJSON_GetObjectItemCaseSensitive(object, name);
  return cJSON_IsString(item) ? std::string(item->valuestring) : std::string("(missing)");
}

// The number member `name` of `object`; NaN (which every comparison fails)
// when there is none.
inline double number_of(const cJSON* object, const char* name) {
  const cJSON* item = cJSON_GetObjectItemCaseSensitive(object, name);
  return cJSON_IsNumber(item) ? item->valuedouble : std::nan("");
}

}  // namespace testing
