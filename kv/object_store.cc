#include "kv/object_store.h"

#include <cjson/cJSON.h>

#include <atomic>
#include <cctype>
#include <thread>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <vector>

#include "kv/bucket_state.h"
#include "kv/connection_state.h"
#include "kv/retry.h"
#include "kv/rfc3339.h"
#include "kv/sha256.h"

namespace kv {

using detail::check;
using detail::waiting;

namespace {

constexpr const char* kRollupHeader = "Nats-Rollup";
constexpr const char* kRollupSubject = "sub";
// Tries at writing a description when another put or a delete moved it.
constexpr int kDescriptionAttempts = 3;
// Reads of a chunk a lagging replica does not have yet, and the pause between.
constexpr int kChunkAttempts = 5;
constexpr std::chrono::milliseconds kChunkPause{50};

std::string base64url(const unsigned char* data, std::size_t size) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  for (std::size_t i = 0; i < size; i += 3) {
    const std::uint32_t n = (std::uint32_t(data[i]) << 16) | (i + 1 < size ? std::uint32_t(data[i + 1]) << 8 : 0) |
                            (i + 2 < size ? std::uint32_t(data[i + 2]) : 0);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < size ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < size ? kAlphabet[n & 63] : '=';
  }
  return out;
}

std::string fresh_nuid() {
  static constexpr char kDigits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::random_device device;
  std::mt19937_64 engine((std::uint64_t(device()) << 32) ^ device());
  std::string out(22, '0');
  for (char& c : out) c = kDigits[engine() % 62];
  return out;
}

std::string format_rfc3339_utc(std::chrono::system_clock::time_point t) {
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(nanos / 1000000000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(nanos % 1000000000));
  return text;
}

std::string json_text(const cJSON* object, const char* name) {
  const cJSON* item = cJSON_GetObjectItemCaseSensitive(object, name);
  return cJSON_IsString(item) ? item->valuestring : "";
}

std::uint64_t json_count(const cJSON* object, const char* name) {
  const cJSON* item = cJSON_GetObjectItemCaseSensitive(object, name);
  return cJSON_IsNumber(item) && item->valuedouble >= 0 ? static_cast<std::uint64_t>(item->valuedouble) : 0;
}

std::string description_of(const ObjectInfo& info, const std::string& store) {
  std::unique_ptr<cJSON, decltype(&cJSON_Delete)> j(cJSON_CreateObject(), cJSON_Delete);
  cJSON_AddStringToObject(j.get(), "name", info.name.c_str());
  cJSON* options = cJSON_AddObjectToObject(j.get(), "options");
  cJSON_AddNumberToObject(options, "max_chunk_size", static_cast<double>(kObjectChunkBytes));
  cJSON_AddStringToObject(j.get(), "bucket", store.c_str());
  cJSON_AddStringToObject(j.get(), "nuid", info.nuid.c_str());
  cJSON_AddNumberToObject(j.get(), "size", static_cast<double>(info.size));
  cJSON_AddStringToObject(j.get(), "mtime", format_rfc3339_utc(info.mtime).c_str());
  cJSON_AddNumberToObject(j.get(), "chunks", static_cast<double>(info.chunks));
  cJSON_AddStringToObject(j.get(), "digest", info.digest.c_str());
  std::unique_ptr<char, decltype(&cJSON_free)> text(cJSON_PrintUnformatted(j.get()), cJSON_free);
  return text.get();
}

// nullopt: not a description, or one of a deleted object.
std::optional<ObjectInfo> parse_description(const std::string& data) {
  std::unique_ptr<cJSON, decltype(&cJSON_Delete)> j(cJSON_ParseWithLength(data.data(), data.size()), cJSON_Delete);
  if (!j || !cJSON_IsObject(j.get()) || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j.get(), "deleted")))
    return std::nullopt;
  ObjectInfo info;
  info.name = json_text(j.get(), "name");
  info.nuid = json_text(j.get(), "nuid");
  info.digest = json_text(j.get(), "digest");
  info.size = json_count(j.get(), "size");
  info.chunks = json_count(j.get(), "chunks");
  if (auto t = parse_rfc3339(json_text(j.get(), "mtime"))) info.mtime = *t;
  // A nuid is one token of letters and digits: a planted '>' or '*' would
  // make a read of its chunks a read of every object's.
  if (info.nuid.empty() || info.nuid.size() > 64) return std::nullopt;
  for (char c : info.nuid)
    if (!std::isalnum(static_cast<unsigned char>(c))) return std::nullopt;
  return info;
}

}  // namespace

std::string nats_digest(const unsigned char* sha256) { return "SHA-256=" + base64url(sha256, 32); }

ObjectStore::ObjectStore(Connection connection, std::string store)
    : connection_(std::move(connection)), store_(std::move(store)), stream_(Stream::bind(connection_, "OBJ_" + store_)) {}

ObjectStore ObjectStore::bind(const Connection& connection, const std::string& store) {
  require_valid_bucket_name(store);
  return ObjectStore(connection, store);
}

ObjectStore ObjectStore::ensure(const Connection& connection, const std::string& store, int replicas,
                                std::int64_t max_bytes) {
  ObjectStore bound = bind(connection, store);
  const std::string name = "OBJ_" + store;
  const std::string what = "create object store " + store;
  auto& state = *connection.state();
  auto info = detail::with_retries(state, {}, [&](std::chrono::milliseconds wait) {
    return detail::stream_info_once(state.js.get(), name, "object store " + store, wait);
  });
  if (info) {
    // Its limit brought in line (refusing new objects at it), everything
    // else as it is; never below what it holds: a lower limit makes some
    // servers (2.9) drop the oldest chunks, and objects with them.
    // A store that holds more than the new limit keeps the limit it has
    // (none, for one made before limits), so it is not full at once and
    // no write races the change; `doctor` and `up` say what it holds.
    if (max_bytes > 0 && info->State.Bytes + (std::uint64_t(16) << 20) > static_cast<std::uint64_t>(max_bytes))
      max_bytes = info->Config->MaxBytes;
    if (info->Config->MaxBytes == max_bytes && info->Config->Discard == js_DiscardNew) return bound;
    info->Config->MaxBytes = max_bytes;
    info->Config->Discard = js_DiscardNew;
    jsStreamInfo* updated = nullptr;
    jsErrCode code = jsErrCode(0);
    natsStatus status = js_UpdateStream(&updated, state.js.get(), info->Config, nullptr, &code);
    detail::StreamInfoPtr owned(updated);
    check(status, "update the limit of object store " + store, code);
    return bound;
  }
  const std::string chunks = "$O." + store + ".C.>", metas = "$O." + store + ".M.>";
  const char* subjects[] = {chunks.c_str(), metas.c_str()};
  jsStreamConfig config;
  check(jsStreamConfig_Init(&config), what);
  config.Name = name.c_str();
  config.Subjects = subjects;
  config.SubjectsLen = 2;
  config.MaxBytes = max_bytes;
  config.Replicas = replicas;
  config.Discard = js_DiscardNew;
  config.Storage = js_FileStorage;
  config.AllowRollup = true;
  config.AllowDirect = true;
  jsStreamInfo* created = nullptr;
  jsErrCode code = jsErrCode(0);
  natsStatus status = js_AddStream(&created, state.js.get(), &config, nullptr, &code);
  detail::StreamInfoPtr owned(created);
  if (status != NATS_OK) {
    // Made by another process meanwhile: as good.
    if (detail::stream_info_once(state.js.get(), name, "object store " + store, state.request_timeout)) return bound;
    check(status, what, code);
  }
  return bound;
}

std::string ObjectStore::meta_subject(const std::string& object) const {
  return "$O." + store_ + ".M." +
         base64url(reinterpret_cast<const unsigned char*>(object.data()), object.size());
}

std::string ObjectStore::chunk_subject(const std::string& nuid) const { return "$O." + store_ + ".C." + nuid; }

std::optional<ObjectInfo> ObjectStore::info(const std::string& object) const {
  auto message = stream_.last(meta_subject(object));
  if (!message) return std::nullopt;
  auto info = parse_description(message->data);
  if (info && info->name != object) return std::nullopt;
  if (info) info->seq = message->seq;
  return info;
}

namespace {

// What the acknowledgements of one put's chunks said.
struct AckTally {
  std::mutex mu;
  std::string error;
  Errc kind = Errc::unavailable;  // a full store is no_room
};

void on_chunk_error(jsCtx*, jsPubAckErr* failure, void* closure) {
  auto* tally = static_cast<AckTally*>(closure);
  std::lock_guard<std::mutex> lock(tally->mu);
  if (!tally->error.empty()) return;
  tally->error = failure->ErrText != nullptr ? failure->ErrText : natsStatus_GetText(failure->Err);
  if (detail::store_full(failure->ErrCode, tally->error)) tally->kind = Errc::no_room;
}

// A JetStream context of its own for the chunks: at most `in_flight`
// unacknowledged, each refusal heard by `tally`.
detail::JsPtr async_context(detail::ConnectionState& state, int in_flight, AckTally& tally, const std::string& what) {
  jsOptions options;
  check(jsOptions_Init(&options), what);
  options.Wait = state.request_timeout.count();
  options.PublishAsync.MaxPending = in_flight;
  options.PublishAsync.ErrHandler = on_chunk_error;
  options.PublishAsync.ErrHandlerClosure = &tally;
  options.PublishAsync.StallWait = state.request_timeout.count();
  jsCtx* raw_js = nullptr;
  check(natsConnection_JetStream(&raw_js, state.connection.get(), &options), what);
  return detail::JsPtr(raw_js);
}

// Every chunk `read` gives, published on `chunks` (`tally` hears what the
// server refused), hashed into `digest` and counted into `info`; returns
// once all are acknowledged.
void publish_chunks(jsCtx* js, const std::string& chunks, const std::function<std::size_t(char*, std::size_t)>& read,
                    std::chrono::milliseconds timeout, const std::string& what, AckTally& tally, Sha256& digest,
                    ObjectInfo& info) {
  std::vector<char> buffer(kObjectChunkBytes);
  for (;;) {
    std::size_t filled = 0;
    while (filled < buffer.size()) {
      const std::size_t got = read(buffer.data() + filled, buffer.size() - filled);
      if (got == 0) break;
      filled += got;
    }
    if (filled == 0) break;
    digest.add(buffer.data(), filled);
    check(js_PublishAsync(js, chunks.c_str(), buffer.data(), static_cast<int>(filled), nullptr), what);
    info.size += filled;
    ++info.chunks;
    if (filled < buffer.size()) break;
  }
  jsPubOptions complete;
  check(jsPubOptions_Init(&complete), what);
  complete.MaxWait = std::max<std::int64_t>(timeout.count(), 1) * 4;
  check(js_PublishAsyncComplete(js, &complete), what + ": waiting for the chunks' acknowledgements");
  std::lock_guard<std::mutex> lock(tally.mu);
  if (!tally.error.empty()) throw Error(tally.kind, what + ": a chunk was refused: " + tally.error);
}

}  // namespace

ObjectInfo ObjectStore::put(const std::string& object, const std::function<std::size_t(char*, std::size_t)>& read,
                            int in_flight) const {
  return put_named([&](const unsigned char*) { return object; }, read, in_flight);
}

ObjectInfo ObjectStore::put_named(const std::function<std::string(const unsigned char* sha256)>& name_of,
                                  const std::function<std::size_t(char*, std::size_t)>& read, int in_flight,
                                  const std::function<bool(const ObjectInfo& theirs)>& keep) const {
  std::string what = "put an object in object store " + store_;
  auto& state = *connection_.state();
  AckTally tally;
  const detail::JsPtr js = async_context(state, in_flight, tally, what);

  ObjectInfo info;
  info.nuid = fresh_nuid();
  const std::string chunks = chunk_subject(info.nuid);
  // Whatever stops the put before its description is written takes its chunks back.
  auto take_back = [&] {
    jsOptions purge = waiting(state.request_timeout);
    purge.Stream.Purge.Subject = chunks.c_str();
    js_PurgeStream(state.js.get(), ("OBJ_" + store_).c_str(), &purge, nullptr);
  };
  Sha256 digest;
  try {
    publish_chunks(js.get(), chunks, read, state.request_timeout, what, tally, digest, info);
    const auto sha256 = digest.finish();
    info.digest = nats_digest(sha256.data());
    info.name = name_of(sha256.data());
    what = "put " + info.name + " in object store " + store_;
    info.mtime = std::chrono::system_clock::now();
    const std::string description = description_of(info, store_);
    const std::string meta = meta_subject(info.name);
    // Written only where nothing is, or over what we read: another put of
    // the same object that got there first stays.
    std::uint64_t expected_last = 0;
    std::string replaced;  // the chunks of a description ours wrote over
    for (int attempt = 1;; ++attempt) {
      natsMsg* raw = nullptr;
      check(natsMsg_Create(&raw, meta.c_str(), nullptr, description.data(), static_cast<int>(description.size())), what);
      detail::MsgPtr msg(raw);
      check(natsMsgHeader_Set(raw, kRollupHeader, kRollupSubject), what);
      jsPubOptions publish;
      check(jsPubOptions_Init(&publish), what);
      publish.MaxWait = state.request_timeout.count();
      if (expected_last == 0) publish.ExpectNoMessage = true;
      else publish.ExpectLastSubjectSeq = expected_last;
      jsPubAck* ack = nullptr;
      jsErrCode code = jsErrCode(0);
      natsStatus status = js_PublishMsg(&ack, state.js.get(), raw, &publish, &code);
      detail::PubAckPtr owned(ack);
      if (status == NATS_OK) {
        if (!replaced.empty() && replaced != info.nuid) {
          // Only chunks no description names any more: a planted one may
          // have named another object's chunks.
          try {
            for (const auto& left : leftovers())
              if (left.nuid == replaced) remove_chunks(replaced);
          } catch (const Error&) {
            // Left over: doctor's leftover check names them.
          }
        }
        return info;
      }
      auto there = stream_.last(meta);
      // The answer may be what was lost: our description stored is success.
      if (there) {
        auto stored = parse_description(there->data);
        if (stored && stored->nuid == info.nuid) return info;
      }
      if (code != JSStreamWrongLastSequenceErr || attempt >= kDescriptionAttempts) check(status, what, code);
      if (auto theirs = there ? parse_description(there->data) : std::nullopt) {
        theirs->seq = there->seq;
        // A description under this name that names another object is no
        // description of it: written over, as one that lies about its bytes.
        if (theirs->name == info.name && (!keep || keep(*theirs))) {
          take_back();
          return *theirs;
        }
        replaced = theirs->nuid;  // not what it says it is: ours goes over it
      }
      expected_last = there ? there->seq : 0;  // a deleted object's marker: written over
    }
  } catch (...) {
    take_back();
    throw;
  }
}

ObjectInfo ObjectStore::get(const std::string& object,
                            const std::function<void(const char*, std::size_t)>& write) const {
  const std::string what = "get " + object + " from object store " + store_;
  auto found = info(object);
  if (!found) throw Error(Errc::not_found, what + ": there is no such object");
  ObjectInfo info = *found;
  Sha256 digest;
  std::uint64_t size = 0, chunks = 0, seq = 1;
  const std::string subject = chunk_subject(info.nuid);
  // One chunk at a time (direct gets in order): memory stays one chunk
  // whatever the object weighs and however slowly `write` takes it.
  while (chunks < info.chunks) {
    std::optional<StreamMessage> chunk;
    // A replica that lags may not have a chunk the description names yet.
    for (int attempt = 0; attempt < kChunkAttempts && !chunk; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(kChunkPause);
      chunk = stream_.next(subject, seq);
    }
    if (!chunk)
      throw Error(Errc::internal, what + ": chunk " + std::to_string(chunks + 1) + " of " +
                                      std::to_string(info.chunks) + " is missing (the object is incomplete)");
    size += chunk->data.size();
    if (size > info.size)
      throw Error(Errc::internal, what + ": its chunks hold more than the " + std::to_string(info.size) +
                                      " bytes its description says");
    digest.add(chunk->data.data(), chunk->data.size());
    write(chunk->data.data(), chunk->data.size());
    ++chunks;
    seq = chunk->seq + 1;
  }
  if (size != info.size)
    throw Error(Errc::internal, what + ": " + std::to_string(size) + " bytes came, its description says " +
                                    std::to_string(info.size));
  info.digest = nats_digest(digest.finish().data());
  return info;
}

std::vector<std::string> ObjectStore::names() const {
  std::vector<std::string> out;
  std::vector<std::string> subjects;
  try {
    subjects = stream_.subjects("$O." + store_ + ".M.>");
  } catch (const Error& e) {
    if (e.kind() == Errc::not_found) return out;
    throw;
  }
  for (const auto& subject : subjects) {
    auto message = stream_.last(subject);
    if (!message) continue;
    if (auto info = parse_description(message->data)) out.push_back(info->name);
  }
  return out;
}

std::vector<ObjectStore::Leftover> ObjectStore::leftovers() const {
  std::vector<Leftover> out;
  const std::string chunk_prefix = "$O." + store_ + ".C.";
  std::vector<std::string> chunk_subjects, metas;
  try {
    chunk_subjects = stream_.subjects(chunk_prefix + "*");
    metas = stream_.subjects("$O." + store_ + ".M.*");
  } catch (const Error& e) {
    if (e.kind() == Errc::not_found) return out;
    throw;
  }
  std::set<std::string> named;
  for (const auto& subject : metas)
    if (auto m = stream_.last(subject))
      if (auto info = parse_description(m->data)) named.insert(info->nuid);
  for (const auto& subject : chunk_subjects) {
    const std::string nuid = subject.substr(chunk_prefix.size());
    if (named.count(nuid)) continue;
    Leftover l;
    l.nuid = nuid;
    if (auto m = stream_.last(subject)) l.last = m->time;
    out.push_back(std::move(l));
  }
  return out;
}

void ObjectStore::remove_chunks(const std::string& nuid) const { stream_.purge(chunk_subject(nuid)); }

}  // namespace kv
