// The rules every record swarm keeps in KV follows (sessions, leases, queue
// entries): a value that cannot be read is corrupt with a plain reason, never
// an exception; a field this version does not know is kept as it was written;
// a time is written back as it was read while it is unchanged. Additive
// evolution (the contract) rests on these.
#pragma once

#include <cJSON.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "swarm/clock.h"
#include "swarm/json.h"

namespace swarm::record {

// Fields a reader does not know, as (name, JSON text as written), in order.
using UnknownFields = std::vector<std::pair<std::string, std::string>>;

// Reads `text` as a JSON object and hands each member (with the text of its
// value as written, for the members `is_known` does not know; "" for the
// others) to `member`, which returns false with a reason when the member is
// wrong. Returns the reason the value is corrupt, or "".
std::string read_object(const std::string& text, bool (*is_known)(const char* name),
                        const std::function<bool(const cJSON* item, std::string_view as_written, std::string* reason)>&
                            member);

// Typed readers of one member: false (with `reason`) when its type is wrong.
// null reads as absent.
bool read_string(const cJSON* item, std::string* out, std::string* reason);
// An RFC 3339 time a time_point can hold; `text` keeps it as written.
bool read_time(const cJSON* item, std::optional<TimePoint>* out, std::string* text, std::string* reason);
// A whole number from 0 to `max`, named `what` in the reason.
bool read_count(const cJSON* item, std::uint64_t max, std::uint64_t* out, std::string* reason, const char* what);

// A time as read when it still says `t`, else `t` in swarm's own form.
std::string time_text(TimePoint t, const std::string& as_read);

// Adds the unknown fields, as they were written, except names `is_known`
// claims (those always come from the record's own fields).
void add_unknown(Json& json, const UnknownFields& unknown, const std::function<bool(const char*)>& is_known);
// The same, appended to the text of an object being written by hand (after
// its last member, before its closing brace).
void append_unknown(std::string& object, const UnknownFields& unknown, const std::function<bool(const char*)>& is_known);

// "field 'NAME' is missing".
std::string missing(const char* name);

}  // namespace swarm::record
