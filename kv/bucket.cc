#include "kv/bucket.h"

#include <cstring>

#include "kv/bucket_state.h"
#include "kv/retry.h"

namespace kv {

using detail::check;
using detail::with_retries;

namespace {

constexpr std::int64_t kNanosPerMilli = 1000 * 1000;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

std::string seconds(std::chrono::milliseconds ms) {
  auto count = ms.count();
  if (count % 1000 == 0) return std::to_string(count / 1000) + "s";
  return std::to_string(count) + "ms";
}

std::string storage_name(Storage s) { return s == Storage::file ? "file" : "memory"; }

BucketConfig config_of(const jsStreamInfo& info, const std::string& name) {
  BucketConfig config;
  config.name = name;
  config.ttl = std::chrono::milliseconds(info.Config->MaxAge / kNanosPerMilli);
  config.history = static_cast<int>(info.Config->MaxMsgsPerSubject);
  config.replicas = static_cast<int>(info.Config->Replicas);
  config.storage = info.Config->Storage == js_MemoryStorage ? Storage::memory : Storage::file;
  return config;
}

using detail::time_of;
using detail::waiting;

// The same, retried through a failover.
detail::StreamInfoPtr stream_info(detail::ConnectionState& connection, const std::string& stream,
                                  const std::string& bucket) {
  return with_retries(connection, {}, [&](std::chrono::milliseconds wait) {
    return detail::stream_info_once(connection.js.get(), stream, where(bucket), wait);
  });
}

// What open() read of the stream is still news this long after.
constexpr std::chrono::milliseconds kFreshOpen{1000};

}  // namespace

namespace detail {
bool is_server_marker(natsMsg* msg) {
  const char* value = nullptr;
  return natsMsgHeader_Get(msg, kMarkerReasonHeader, &value) == NATS_OK && value != nullptr;
}

bool is_expiry_marker(natsMsg* msg) {
  const char* value = nullptr;
  return natsMsgHeader_Get(msg, kMarkerReasonHeader, &value) == NATS_OK && value != nullptr &&
         std::strcmp(value, "MaxAge") == 0;
}

bool is_absence(natsMsg* msg) {
  if (is_server_marker(msg)) return true;
  const char* value = nullptr;
  return natsMsgHeader_Get(msg, kOperationHeader, &value) == NATS_OK && value != nullptr &&
         (std::strcmp(value, "DEL") == 0 || std::strcmp(value, "PURGE") == 0);
}

bool is_absence(std::string_view headers) {
  // Line by line after the status line: "Name: value", names exact.
  std::size_t at = headers.find("\r\n");
  while (at != std::string_view::npos && at + 2 < headers.size()) {
    const std::size_t start = at + 2;
    const std::size_t end = std::min(headers.find("\r\n", start), headers.size());
    const std::string_view line = headers.substr(start, end - start);
    if (const auto colon = line.find(':'); colon != std::string_view::npos) {
      const std::string_view name = line.substr(0, colon);
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
      if (name == kMarkerReasonHeader) return true;
      if (name == kOperationHeader && (value == "DEL" || value == "PURGE")) return true;
    }
    at = end < headers.size() ? end : std::string_view::npos;
  }
  return false;
}

// Reads the stream behind a bucket, waiting `wait` for the answer; nullptr
// when it does not exist.
StreamInfoPtr stream_info_once(jsCtx* js, const std::string& stream, std::string_view shown,
                               std::chrono::milliseconds wait) {
  jsStreamInfo* info = nullptr;
  jsErrCode code = jsErrCode(0);
  jsOptions options = waiting(wait);
  natsStatus status = js_GetStreamInfo(&info, js, stream.c_str(), &options, &code);
  if (status == NATS_NOT_FOUND || code == JSStreamNotFoundErr) return nullptr;
  check(status, "read config of " + std::string(shown), code);
  return StreamInfoPtr(info);
}

StreamState stream_state(const Bucket::State& bucket, const std::string& name, std::chrono::milliseconds wait) {
  auto info = stream_info_once(bucket.js(), bucket.stream, where(name), wait);
  if (!info) throw Error(Errc::not_found, where(name) + " no longer exists");
  return {info->State.LastSeq, info->State.Msgs};
}

std::uint64_t last_sequence(const Bucket::State& bucket, const std::string& name, std::chrono::milliseconds wait) {
  return stream_state(bucket, name, wait).last_seq;
}
}  // namespace detail


void require_valid_bucket_name(std::string_view name) {
  bool ok = !name.empty();
  for (char c : name) ok = ok && is_name_char(c);
  if (!ok)
    throw Error(Errc::bad_request,
                "bad bucket name '" + std::string(name) + "': use letters, digits, '_' and '-'");
}

void require_valid_key(std::string_view bucket, std::string_view key) {
  // The rule of nats.c and the NATS servers: subject-safe tokens joined by '.'.
  bool ok = !key.empty() && key.front() != '.' && key.back() != '.';
  for (std::size_t i = 0; ok && i < key.size(); ++i) {
    char c = key[i];
    if (c == '.') ok = key[i - 1] != '.';
    else ok = is_name_char(c) || c == '/' || c == '\\' || c == '=';
  }
  if (!ok) throw Error(Errc::bad_request, "bad key '" + std::string(key) + "' in " + where(bucket));
}

void require_valid_pattern(std::string_view bucket, std::string_view pattern) {
  bool ok = !pattern.empty();
  std::size_t start = 0;
  while (ok) {
    auto dot = pattern.find('.', start);
    auto token = pattern.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    bool last = dot == std::string_view::npos;
    if (token == ">") ok = last;
    else if (token != "*") {
      ok = !token.empty();
      for (char c : token) ok = ok && (is_name_char(c) || c == '/' || c == '\\' || c == '=');
    }
    if (last) break;
    start = dot + 1;
  }
  if (!ok) throw Error(Errc::bad_request, "bad key pattern '" + std::string(pattern) + "' in " + where(bucket));
}

std::vector<std::string> differences(const BucketConfig& want, const BucketConfig& have) {
  std::vector<std::string> out;
  if (want.ttl != have.ttl)
    out.push_back("TTL is " + seconds(have.ttl) + ", want " + seconds(want.ttl));
  if (want.history != have.history)
    out.push_back("history is " + std::to_string(have.history) + ", want " + std::to_string(want.history));
  if (want.replicas != have.replicas)
    out.push_back("replicas is " + std::to_string(have.replicas) + ", want " +
                  std::to_string(want.replicas));
  if (want.storage != have.storage)
    out.push_back("storage is " + storage_name(have.storage) + ", want " + storage_name(want.storage));
  return out;
}

Bucket Bucket::open(const Connection& connection, const std::string& name) {
  require_valid_bucket_name(name);
  auto state = std::make_shared<State>();
  state->connection = connection.state();
  state->stream = "KV_" + name;
  state->prefix = "$KV." + name + ".";
  // One round trip: the stream's config and size, kept for config() and for
  // knowing whether a snapshot has anything to replay.
  auto info = stream_info(*state->connection, state->stream, name);
  if (!info) throw Error(Errc::not_found, where(name) + " does not exist on " + connection.connected_url());
  if (info->Config->MaxMsgsPerSubject < 1)
    throw Error(Errc::bad_request, "stream " + state->stream + " is not a key-value bucket");
  state->config = config_of(*info, name);
  state->messages = info->State.Msgs;
  state->last_seq = info->State.LastSeq;
  state->opened_at = std::chrono::steady_clock::now();
  state->clustered = info->Cluster != nullptr ? 1 : 0;
  // A cluster names itself in every stream it replicates; a server alone
  // names none (2.9 gives no cluster at all, 2.10 on only its leader).
  state->connection->standalone =
      info->Cluster == nullptr || info->Cluster->Name == nullptr || *info->Cluster->Name == '\0';
  state->direct = info->Config->AllowDirect ? 1 : 0;
  return Bucket(std::move(state), name);
}

Bucket Bucket::bind(const Connection& connection, const std::string& name) {
  require_valid_bucket_name(name);
  auto state = std::make_shared<State>();
  state->connection = connection.state();
  state->stream = "KV_" + name;
  state->prefix = "$KV." + name + ".";
  state->messages = 0;  // unknown: a listing reads the stream first (see for_each)
  state->config.name = name;
  return Bucket(std::move(state), name);
}

Bucket Bucket::ensure(const Connection& connection, const BucketConfig& want) {
  require_valid_bucket_name(want.name);
  if (want.history < 1 || want.history > 64)
    throw Error(Errc::bad_request, "history of " + where(want.name) + " must be 1 to 64");
  if (want.replicas < 1 || want.replicas > 5)
    throw Error(Errc::bad_request, "replicas of " + where(want.name) + " must be 1 to 5");
  jsCtx* js = connection.state()->js.get();
  const std::string stream = "KV_" + want.name;

  auto compare_with_server = [&](const jsStreamInfo& info) {
    auto diffs = differences(want, config_of(info, want.name));
    if (diffs.empty()) return;
    std::string message = where(want.name) + " exists with another config:";
    for (const auto& d : diffs) message += " " + d + ";";
    message.pop_back();
    throw Error(Errc::conflict, message);
  };

  if (auto info = stream_info(*connection.state(), stream, want.name)) {
    compare_with_server(*info);
    return open(connection, want.name);
  }

  kvConfig config;
  check(kvConfig_Init(&config), "config of " + where(want.name));
  config.Bucket = want.name.c_str();
  config.History = static_cast<uint8_t>(want.history);
  config.TTL = want.ttl.count() * kNanosPerMilli;  // nats.c takes nanoseconds here
  config.Replicas = want.replicas;
  config.StorageType = want.storage == Storage::memory ? js_MemoryStorage : js_FileStorage;
  kvStore* store = nullptr;
  natsStatus status = js_CreateKeyValue(&store, js, &config);
  detail::StorePtr created(store);
  if (status != NATS_OK) {
    // Someone else may have created it meanwhile, perhaps with another config.
    if (auto info = stream_info(*connection.state(), stream, want.name)) {
      compare_with_server(*info);
      return open(connection, want.name);
    }
    check(status, "create " + where(want.name));
  }
  return open(connection, want.name);
}

Connection Bucket::connection() const { return Connection(state_->connection); }

BucketConfig Bucket::config() const { return state_->config; }

std::uint64_t Bucket::size_hint() const { return state_->messages; }

std::uint64_t Bucket::revision_at_open() const { return state_->last_seq; }

std::uint64_t Bucket::last_revision() const {
  return detail::last_sequence(*state_, name_, request_timeout());
}

std::string Bucket::leader() const {
  auto info = stream_info(*state_->connection, state_->stream, name_);
  if (!info) throw Error(Errc::not_found, where(name_) + " no longer exists");
  if (info->Cluster == nullptr || info->Cluster->Leader == nullptr) return {};
  return info->Cluster->Leader;
}

std::chrono::milliseconds Bucket::request_timeout() const {
  return budget_.count() > 0 ? budget_ : state_->connection->request_timeout;
}

Bucket Bucket::with_budget(std::chrono::milliseconds budget) const {
  Bucket copy = *this;
  copy.budget_ = budget;
  return copy;
}

std::optional<Entry> Bucket::latest(std::string_view key, bool* deleted) const {
  require_valid_key(name_, key);
  const std::string subject = state_->prefix + std::string(key);
  // The stream leader answers this, so a client always reads its own writes.
  detail::MsgPtr msg = with_retries(*state_->connection, budget_, [&](std::chrono::milliseconds wait) {
    natsMsg* raw = nullptr;
    jsErrCode code = jsErrCode(0);
    jsOptions options = waiting(wait);
    natsStatus status = js_GetLastMsg(&raw, state_->js(), state_->stream.c_str(), subject.c_str(), &options, &code);
    if (status == NATS_NOT_FOUND || code == JSNoMessageFoundErr) return detail::MsgPtr();
    check(status, "get " + where(name_, key), code);
    return detail::MsgPtr(raw);
  });
  if (!msg) return std::nullopt;
  natsMsg* raw = msg.get();
  *deleted = detail::is_absence(raw);
  Entry entry;
  entry.key = std::string(key);
  const char* data = natsMsg_GetData(raw);
  entry.value.assign(data ? data : "", static_cast<std::size_t>(natsMsg_GetDataLength(raw)));
  entry.revision = natsMsg_GetSequence(raw);
  entry.created = time_of(natsMsg_GetTime(raw));
  return entry;
}

std::optional<Entry> Bucket::get(std::string_view key) const {
  bool deleted = false;
  auto entry = latest(key, &deleted);
  if (deleted) return std::nullopt;
  return entry;
}

void Bucket::for_each(const std::function<void(Entry&&)>& visit, bool keys_only, const std::string& pattern) const {
  // A pass that fails before its first entry (a consumer the cluster never
  // made, say on a node that is gone) is started again; one that fails later
  // is the caller's to repeat, since it has seen entries.
  detail::Attempts attempts(*state_->connection, budget_);
  while (true) {
    std::size_t seen = 0;
    try {
      // Where the replay ends, and whether there is anything to replay: what
      // open() read when that was just now (status opens, then lists),
      // else one stream-info request. An empty stream needs no consumer.
      std::uint64_t messages = state_->messages, end = state_->last_seq;
      if (messages == 0 || std::chrono::steady_clock::now() - state_->opened_at > kFreshOpen) {
        auto info = detail::stream_info_once(state_->js(), state_->stream, where(name_), attempts.wait());
        if (!info) throw Error(Errc::not_found, where(name_) + " no longer exists");
        messages = info->State.Msgs;
        end = info->State.LastSeq;
      }
      if (messages == 0) return;
      WatchOptions options;
      options.ignore_deletes = true;
      options.keys_only = keys_only;
      // The stream's last sequence ends a replay of every key; a replay of
      // some keys may never reach it, so it ends when nothing is pending.
      auto watch = watch_once(pattern, options, attempts.wait(), pattern == ">" ? end : 0,
                              pattern == ">" ? messages : 0);
      // The whole pass ends within the budget and one attempt's time more,
      // however its entries trickle (a consumer that a failover keeps
      // resetting, say): a verb's --timeout bounds it.
      const auto pass_end = attempts.deadline() + detail::Attempts::kLongestAttempt;
      while (true) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(pass_end - std::chrono::steady_clock::now());
        if (seen > 0 && left.count() <= 0)
          throw Error(Errc::timeout, "reading " + where(name_) + " did not finish within its timeout (" +
                                         std::to_string(seen) + " entries read)");
        auto event = watch.next(seen == 0 ? attempts.wait() : std::max(left, std::chrono::milliseconds(1)));
        if (!event)
          throw Error(Errc::timeout,
                      "reading " + where(name_) + " stalled after " + std::to_string(seen) + " entries");
        if (event->kind == WatchEvent::Kind::caught_up) return;
        ++seen;
        visit(std::move(event->entry));
      }
    } catch (const Error& e) {
      if (seen > 0 || !attempts.again_after(e)) throw;
    }
  }
}

std::vector<Entry> Bucket::snapshot() const {
  std::vector<Entry> entries;
  for_each([&](Entry&& e) { entries.push_back(std::move(e)); });
  drop_repeats(entries, revision_at_open(), [](const Entry& e) -> const std::string& { return e.key; },
               [](const Entry& e) { return e.revision; });
  return entries;
}

std::vector<std::string> Bucket::keys() const {
  std::vector<Entry> entries;
  for_each([&](Entry&& e) { entries.push_back(std::move(e)); }, true);
  drop_repeats(entries, revision_at_open(), [](const Entry& e) -> const std::string& { return e.key; },
               [](const Entry& e) { return e.revision; });
  std::vector<std::string> keys;
  keys.reserve(entries.size());
  for (auto& e : entries) keys.push_back(std::move(e.key));
  return keys;
}

}  // namespace kv
