// Streams made or brought in line with the config their users want: a
// stream's differences from it, its creation, and the log streams whose
// limits an existing stream keeps.
#include "kv/stream.h"

#include <algorithm>

#include "kv/connection_state.h"
#include "kv/retry.h"
#include "kv/stream_state.h"

namespace kv {

using detail::check;
using detail::config_of;
using detail::info_once;
using detail::kNanosPerMilli;
using detail::stream_where;
using detail::with_retries;

namespace {

std::string human_age(std::chrono::milliseconds ms) {
  auto s = ms.count() / 1000;
  if (s > 0 && s % 86400 == 0) return std::to_string(s / 86400) + "d";
  if (s > 0 && s % 3600 == 0) return std::to_string(s / 3600) + "h";
  return std::to_string(s) + "s";
}

}  // namespace

std::vector<std::string> differences(const StreamConfig& want, const StreamConfig& have) {
  std::vector<std::string> out;
  if (want.max_age != have.max_age)
    out.push_back("max age is " + human_age(have.max_age) + ", want " + human_age(want.max_age));
  if (want.max_bytes != have.max_bytes)
    out.push_back("max bytes is " + std::to_string(have.max_bytes) + ", want " + std::to_string(want.max_bytes));
  if (want.replicas != have.replicas)
    out.push_back("replicas is " + std::to_string(have.replicas) + ", want " + std::to_string(want.replicas));
  if (want.discard_new != have.discard_new)
    out.push_back(std::string("at its limit it ") + (have.discard_new ? "refuses new messages" : "drops its oldest") +
                  ", want " + (want.discard_new ? "refusing new ones" : "dropping the oldest"));
  if (want.max_msg_size != have.max_msg_size)
    out.push_back("max message size is " + std::to_string(have.max_msg_size) + ", want " +
                  std::to_string(want.max_msg_size));
  if (want.subjects != have.subjects) {
    auto list = [](const std::vector<std::string>& v) {
      std::string s;
      for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
      return s.empty() ? std::string("none") : s;
    };
    out.push_back("subjects are " + list(have.subjects) + ", want " + list(want.subjects));
  }
  return out;
}

namespace {

// The config nats.c takes for `want` (`subjects` holds the pointers it names).
jsStreamConfig config_for(const StreamConfig& want, std::vector<const char*>& subjects) {
  for (const auto& s : want.subjects) subjects.push_back(s.c_str());
  jsStreamConfig config;
  check(jsStreamConfig_Init(&config), "config of " + stream_where(want.name));
  config.Name = want.name.c_str();
  config.Subjects = subjects.data();
  config.SubjectsLen = static_cast<int>(subjects.size());
  config.MaxAge = want.max_age.count() * kNanosPerMilli;
  config.MaxBytes = want.max_bytes;
  config.Replicas = want.replicas;
  config.Duplicates = want.duplicate_window.count() * kNanosPerMilli;
  config.Discard = want.discard_new ? js_DiscardNew : js_DiscardOld;
  config.MaxMsgSize = want.max_msg_size;
  config.Storage = js_FileStorage;
  config.AllowDirect = true;
  return config;
}

bool no_room(jsErrCode code) { return detail::store_full(code, {}); }

// An existing stream brought in line with `config`: its subjects always
// (a stream that takes none of its subjects is no use to anyone), its
// limits when `update`. `changed` gets what differs from `want`.
void bring_in_line(jsCtx* js, const jsStreamInfo& info, const jsStreamConfig& config, const StreamConfig& want,
                   bool update, std::vector<std::string>* changed) {
  const StreamConfig have = config_of(*info.Config);
  auto diffs = differences(want, have);
  if (changed != nullptr) *changed = diffs;
  const bool fix_subjects = have.subjects != want.subjects;
  const bool fix_limits = update && (info.Config->MaxAge != config.MaxAge || info.Config->MaxBytes != config.MaxBytes ||
                                     info.Config->Discard != config.Discard ||
                                     info.Config->MaxMsgSize != config.MaxMsgSize);
  if (!fix_subjects && !fix_limits) return;
  // The server's config with ours put in; its own subject list (nats.c's
  // to free) is put back after.
  const char** server_subjects = info.Config->Subjects;
  const int server_subjects_len = info.Config->SubjectsLen;
  if (fix_subjects) {
    info.Config->Subjects = config.Subjects;
    info.Config->SubjectsLen = config.SubjectsLen;
  }
  if (fix_limits) {
    info.Config->MaxAge = config.MaxAge;
    info.Config->MaxBytes = config.MaxBytes;
    info.Config->Discard = config.Discard;
    info.Config->MaxMsgSize = config.MaxMsgSize;
  }
  jsStreamInfo* updated = nullptr;
  jsErrCode code = jsErrCode(0);
  natsStatus status = js_UpdateStream(&updated, js, info.Config, nullptr, &code);
  detail::StreamInfoPtr owned(updated);
  info.Config->Subjects = server_subjects;
  info.Config->SubjectsLen = server_subjects_len;
  if (status != NATS_OK && no_room(code))
    throw Error(Errc::no_room, "update " + stream_where(want.name) + ": the server's store has no room for its " +
                                   "new limits (" + std::to_string(config.MaxBytes) + " bytes); it is left as it was");
  check(status, "update " + stream_where(want.name), code);
}

}  // namespace

Stream Stream::ensure(const Connection& connection, const StreamConfig& want, bool update,
                      std::vector<std::string>* changed) {
  Stream stream = bind(connection, want.name);
  if (want.replicas < 1 || want.replicas > 5)
    throw Error(Errc::bad_request, "replicas of " + stream_where(want.name) + " must be 1 to 5");
  std::vector<const char*> subjects;
  jsStreamConfig config = config_for(want, subjects);
  auto read = [&] {
    return with_retries(*stream.state_->connection, {}, [&](std::chrono::milliseconds wait) {
      return info_once(stream.state_->js(), want.name, wait);
    });
  };
  if (auto info = read()) {
    bring_in_line(stream.state_->js(), *info, config, want, update, changed);
    return stream;
  }
  jsStreamInfo* created = nullptr;
  jsErrCode code = jsErrCode(0);
  natsStatus status = js_AddStream(&created, stream.state_->js(), &config, nullptr, &code);
  // A new stream with no room at its max bytes is halved down to kSmallestStream when allowed.
  while (status != NATS_OK && want.shrink_to_fit && config.MaxBytes / 2 >= kSmallestStream && no_room(code)) {
    config.MaxBytes /= 2;
    code = jsErrCode(0);
    status = js_AddStream(&created, stream.state_->js(), &config, nullptr, &code);
  }
  detail::StreamInfoPtr owned(created);
  if (status != NATS_OK) {
    // Someone else may have created it meanwhile.
    if (auto info = read()) {
      bring_in_line(stream.state_->js(), *info, config, want, update, changed);
      return stream;
    }
    if (no_room(code))
      throw Error(Errc::no_room, "create " + stream_where(want.name) + ": the server's store has no room for its " +
                                     std::to_string(config.MaxBytes) + " bytes (JetStream error " +
                                     std::to_string(code) + ")");
    check(status, "create " + stream_where(want.name), code);
  }
  if (changed != nullptr) {
    changed->clear();
    if (config.MaxBytes != want.max_bytes)
      changed->push_back("max bytes is " + std::to_string(config.MaxBytes) + ", want " +
                         std::to_string(want.max_bytes) + ": the server had no room for more");
  }
  return stream;
}

std::vector<std::string> Stream::ensure_log(const Connection& connection, StreamConfig defaults,
                                            std::optional<std::chrono::milliseconds> max_age,
                                            std::optional<std::int64_t> max_bytes) {
  // A limit not given is the stream's own (another host, or an earlier up,
  // may have set it), or the default for a new stream.
  auto existing = bind(connection, defaults.name).state();
  StreamConfig want = std::move(defaults);
  if (max_age) want.max_age = *max_age;
  else if (existing) want.max_age = existing->config.max_age;
  if (max_bytes) want.max_bytes = *max_bytes;
  else if (existing) want.max_bytes = existing->config.max_bytes;
  want.shrink_to_fit = !max_bytes.has_value();
  std::vector<std::string> changed;
  ensure(connection, want, true, &changed);
  // What ensure applied (limits, subjects) is no difference left; replicas
  // (never changed) and a stream smaller than asked (no room) are.
  std::erase_if(changed, [](const std::string& d) {
    return d.rfind("replicas", 0) != 0 && d.find("no room") == std::string::npos;
  });
  return changed;
}

}  // namespace kv
