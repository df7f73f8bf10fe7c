// Changes to an existing bucket's stream config, by the JSON API: nats.c
// 3.4.1 knows neither field of the server's expiry markers (2.11+:
// allow_msg_ttl, subject_delete_marker_ttl) and drops them from any update it
// sends, which the server then refuses (a stream's message TTLs cannot be
// turned off) or obeys (its markers silently stop). So every update here
// sends back every field the server gave, changing only its own.
#include <cJSON.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "kv/bucket.h"
#include "kv/bucket_state.h"
#include "kv/c_handle.h"
#include "kv/connection_state.h"

namespace kv {

namespace {

using Json = std::unique_ptr<cJSON, CFree<cJSON_Delete>>;
constexpr double kNanosPerSecond = 1e9;
// The server refuses a marker TTL under a second.
constexpr std::chrono::seconds kShortestMarker{1};

// One request of the JSON API, its answer parsed; an answer with an
// "error" is thrown, named by `what`.
Json api_request(detail::ConnectionState& state, const std::string& subject, const std::string& body,
                 const std::string& what) {
  natsMsg* raw = nullptr;
  natsStatus status = natsConnection_Request(&raw, state.connection.get(), subject.c_str(), body.data(),
                                             static_cast<int>(body.size()),
                                             static_cast<std::int64_t>(state.request_timeout.count()));
  detail::MsgPtr reply(raw);
  if (status == NATS_TIMEOUT) throw Error(Errc::timeout, what + ": the server did not answer in time");
  if (status != NATS_OK) throw Error(Errc::unavailable, what + ": " + natsStatus_GetText(status));
  const char* data = natsMsg_GetData(raw);
  Json doc(cJSON_ParseWithLength(data ? data : "", static_cast<std::size_t>(natsMsg_GetDataLength(raw))));
  if (!cJSON_IsObject(doc.get())) throw Error(Errc::internal, what + ": the server's answer is not JSON");
  if (const cJSON* error = cJSON_GetObjectItemCaseSensitive(doc.get(), "error"); error != nullptr) {
    const cJSON* code = cJSON_GetObjectItemCaseSensitive(error, "err_code");
    const cJSON* text = cJSON_GetObjectItemCaseSensitive(error, "description");
    const std::string said = cJSON_IsString(text) ? text->valuestring : "an error";
    // 10059: stream not found.
    const bool missing = cJSON_IsNumber(code) && code->valuedouble == 10059;
    throw Error(missing ? Errc::not_found : Errc::bad_request, what + ": the server said " + said);
  }
  return doc;
}

double number_or_zero(const cJSON* object, const char* name) {
  const cJSON* item = cJSON_GetObjectItemCaseSensitive(object, name);
  return cJSON_IsNumber(item) ? item->valuedouble : 0;
}

// The stream's config as the server has it now.
Json config_now(detail::ConnectionState& state, const std::string& stream, const std::string& what) {
  Json info = api_request(state, "$JS.API.STREAM.INFO." + stream, "", what);
  Json config(cJSON_DetachItemFromObject(info.get(), "config"));
  if (!cJSON_IsObject(config.get())) throw Error(Errc::internal, what + ": the server's answer has no config");
  return config;
}

void set_number(cJSON* object, const char* name, double value) {
  cJSON_DeleteItemFromObjectCaseSensitive(object, name);
  cJSON_AddNumberToObject(object, name, value);
}

void set_bool(cJSON* object, const char* name, bool value) {
  cJSON_DeleteItemFromObjectCaseSensitive(object, name);
  cJSON_AddBoolToObject(object, name, value);
}

void update_stream(detail::ConnectionState& state, const std::string& stream, const cJSON* config, const std::string& what) {
  std::unique_ptr<char, CFree<cJSON_free>> text(cJSON_PrintUnformatted(config));
  if (!text) throw Error(Errc::internal, what + ": out of memory");
  api_request(state, "$JS.API.STREAM.UPDATE." + stream, text.get(), what);
}

// Whether a stream's config has the server write expiry markers.
bool has_markers(const cJSON* config) {
  return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(config, "allow_msg_ttl")) &&
         number_or_zero(config, "subject_delete_marker_ttl") > 0;
}

}  // namespace

void Bucket::set_ttl(const Connection& connection, const std::string& name, std::chrono::milliseconds ttl) {
  require_valid_bucket_name(name);
  detail::ConnectionState& state = *connection.state();
  const std::string stream = "KV_" + name;
  const std::string what = "set the TTL of bucket " + name;
  Json config = config_now(state, stream, what);
  const double max_age = static_cast<double>(ttl.count()) * 1e6;
  set_number(config.get(), "max_age", max_age);
  // The server refuses a duplicates window longer than the max age, so it
  // follows the TTL down (as a bucket made with that TTL has it), to 2 min.
  if (max_age > 0) set_number(config.get(), "duplicate_window", std::min(max_age, 120 * kNanosPerSecond));
  update_stream(state, stream, config.get(), what);
}

bool Bucket::announces_expiry() const {
  detail::ConnectionState& state = *state_->connection;
  if (version_before(detail::server_version(state), 2, 11)) return false;
  return has_markers(config_now(state, state_->stream, "read the config of bucket " + name_).get());
}

bool Bucket::commits_atomically() const {
  const int known = state_->atomic.load();
  if (known >= 0) return known == 1;
  detail::ConnectionState& state = *state_->connection;
  bool on = false;
  if (!version_before(detail::server_version(state), 2, 12)) {
    Json config = config_now(state, state_->stream, "read the config of bucket " + name_);
    on = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(config.get(), "allow_atomic"));
  }
  state_->atomic = on ? 1 : 0;
  return on;
}

bool Bucket::allow_atomic(const Connection& connection, const std::string& name) {
  require_valid_bucket_name(name);
  detail::ConnectionState& state = *connection.state();
  if (version_before(detail::server_version(state), 2, 12)) return false;
  const std::string stream = "KV_" + name;
  const std::string what = "allow atomic batches in bucket " + name;
  Json config = config_now(state, stream, what);
  if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(config.get(), "allow_atomic"))) return true;
  set_bool(config.get(), "allow_atomic", true);
  update_stream(state, stream, config.get(), what);
  return true;
}

bool Bucket::announce_expiry(const Connection& connection, const std::string& name,
                             std::chrono::milliseconds marker_ttl) {
  require_valid_bucket_name(name);
  detail::ConnectionState& state = *connection.state();
  if (version_before(detail::server_version(state), 2, 11)) return false;
  const std::string stream = "KV_" + name;
  const std::string what = "turn on expiry markers of bucket " + name;
  Json config = config_now(state, stream, what);
  if (has_markers(config.get())) return true;
  const auto seconds = std::max(std::chrono::duration_cast<std::chrono::seconds>(marker_ttl), kShortestMarker);
  set_bool(config.get(), "allow_msg_ttl", true);
  set_number(config.get(), "subject_delete_marker_ttl", static_cast<double>(seconds.count()) * kNanosPerSecond);
  update_stream(state, stream, config.get(), what);
  return true;
}

}  // namespace kv
