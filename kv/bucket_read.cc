// Several keys of a bucket read in one round trip: a STREAM.MSG.GET request
// per key (the stream leader answers it, as it does latest()), or a
// DIRECT.GET on a server alone, published together on the connection's
// numbered reply inbox and flushed once; what got no usable answer is read
// again alone, the usual way.
#include <cJSON.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <mutex>

#include "kv/bucket.h"
#include "kv/bucket_state.h"
#include "kv/c_handle.h"
#include "kv/retry.h"
#include "kv/rfc3339.h"

namespace kv {

namespace {

// The JetStream error of a message that is not there (no last message for
// the subject): the key is absent.
constexpr std::uint64_t kNoMessageFound = 10037;

// Standard base64 (what the server writes a stored message's data and
// headers in); nullopt when `text` is not that.
std::optional<std::string> from_base64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t at = 0; at < text.size(); at += 4) {
    std::uint32_t group = 0;
    int pad = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const char c = text[at + k];
      if (c == '=' && at + 4 == text.size() && k >= 2) {
        ++pad;
        group <<= 6;
        continue;
      }
      const int v = value(c);
      if (v < 0 || pad > 0) return std::nullopt;
      group = group << 6 | static_cast<std::uint32_t>(v);
    }
    out += static_cast<char>(group >> 16);
    if (pad < 2) out += static_cast<char>(group >> 8 & 0xff);
    if (pad < 1) out += static_cast<char>(group & 0xff);
  }
  return out;
}

// One answer to a STREAM.MSG.GET: the entry, absent (no message, or a delete
// marker), or nothing usable (an error, a reply that does not read): then
// the key is read alone.
struct GetAnswer {
  bool usable = false;
  std::optional<Entry> entry;
};

GetAnswer read_get_answer(natsMsg* reply, std::string_view key) {
  GetAnswer out;
  const char* data = natsMsg_GetData(reply);
  std::unique_ptr<cJSON, CFree<cJSON_Delete>> doc(
      cJSON_ParseWithLength(data ? data : "", static_cast<std::size_t>(natsMsg_GetDataLength(reply))));
  if (!cJSON_IsObject(doc.get())) return out;
  if (const cJSON* error = cJSON_GetObjectItemCaseSensitive(doc.get(), "error"); error != nullptr) {
    const cJSON* code = cJSON_GetObjectItemCaseSensitive(error, "err_code");
    out.usable = cJSON_IsNumber(code) && code->valuedouble == static_cast<double>(kNoMessageFound);
    return out;
  }
  const cJSON* message = cJSON_GetObjectItemCaseSensitive(doc.get(), "message");
  const cJSON* seq = cJSON_GetObjectItemCaseSensitive(message, "seq");
  const cJSON* time = cJSON_GetObjectItemCaseSensitive(message, "time");
  const cJSON* body = cJSON_GetObjectItemCaseSensitive(message, "data");
  const cJSON* headers = cJSON_GetObjectItemCaseSensitive(message, "hdrs");
  if (!cJSON_IsNumber(seq) || seq->valuedouble < 1 || !cJSON_IsString(time)) return out;
  const auto stored = parse_rfc3339(time->valuestring);
  std::optional<std::string> value = cJSON_IsString(body) ? from_base64(body->valuestring) : std::string();
  std::optional<std::string> head = cJSON_IsString(headers) ? from_base64(headers->valuestring) : std::string();
  if (!stored || !value || !head) return out;
  out.usable = true;
  // A delete or purge marker ("NATS/1.0\r\nKV-Operation: DEL\r\n\r\n"), or the server's.
  if (detail::is_absence(*head)) return out;
  out.entry = Entry{std::string(key), std::move(*value), static_cast<std::uint64_t>(seq->valuedouble), *stored};
  return out;
}

// The last value of a header, or nullptr: the server adds its own after the
// headers the stored message carries, which may use the same names.
const char* last_header(natsMsg* msg, const char* name) {
  const char** values = nullptr;
  int count = 0;
  if (natsMsgHeader_Values(msg, name, &values, &count) != NATS_OK || count < 1) return nullptr;
  const char* last = values[count - 1];
  std::free(static_cast<void*>(values));
  return last;
}

// One answer to a DIRECT.GET of a key's last message: the message itself
// with the stream's headers, or no data and a status (404: no message).
GetAnswer read_direct_answer(natsMsg* reply, std::string_view subject, std::string_view key) {
  GetAnswer out;
  const char* sequence = last_header(reply, "Nats-Sequence");
  if (sequence == nullptr) {  // no message: a status alone
    const char* status = nullptr;
    out.usable = natsMsg_GetDataLength(reply) == 0 && natsMsgHeader_Get(reply, "Status", &status) == NATS_OK &&
                 status != nullptr && std::string_view(status) == "404";
    return out;
  }
  const char* stored_as = last_header(reply, "Nats-Subject");
  const char* time = last_header(reply, "Nats-Time-Stamp");
  if (stored_as == nullptr || subject != stored_as || time == nullptr) return out;
  std::uint64_t revision = 0;
  const std::string_view digits = sequence;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), revision);
  const auto stored = parse_rfc3339(time);
  if (ec != std::errc() || end != digits.data() + digits.size() || revision == 0 || !stored) return out;
  out.usable = true;
  if (detail::is_absence(reply)) return out;  // a delete, purge or expiry marker: absent
  const char* data = natsMsg_GetData(reply);
  out.entry = Entry{std::string(key), std::string(data ? data : "", static_cast<std::size_t>(natsMsg_GetDataLength(reply))),
                    revision, *stored};
  return out;
}

}  // namespace

std::vector<std::optional<Entry>> Bucket::get_together(const std::vector<std::string>& keys) const {
  for (const auto& key : keys) require_valid_key(name_, key);
  std::vector<std::optional<Entry>> out(keys.size());
  std::vector<bool> answered(keys.size(), false);  // a usable answer came
  if (keys.empty()) return out;
  detail::ConnectionState& connection = *state_->connection;
  natsConnection* nc = connection.connection.get();
  {
    // The connection's reply inbox, numbered: an answer of another batch
    // (late, or of pipelined writes) is told apart by its number.
    std::unique_lock lock(connection.reply_mu);
    detail::subscribe_replies(connection);
    const std::uint64_t first = connection.next_reply;
    connection.next_reply += keys.size();
    // On a server alone, the stream's one copy answers a direct get too,
    // for a quarter of the server's time; in a cluster a follower might, and
    // it may lag, so there the leader is asked. A bucket bound without a
    // round trip is tried, briefly: one with direct gets off answers no one
    // (2.10 and later say so at once, 2.9 not at all), so its keys are read
    // alone below and the leader is asked from then on.
    const int known = state_->direct;
    const bool direct = connection.standalone == 1 && known != 0;
    const std::string api = (direct ? "$JS.API.DIRECT.GET." : "$JS.API.STREAM.MSG.GET.") + state_->stream;
    std::size_t sent = 0;
    for (; sent < keys.size(); ++sent) {
      const std::string subject = direct ? api + "." + state_->prefix + keys[sent] : api;
      const std::string body = direct ? std::string() : "{\"last_by_subj\":\"" + state_->prefix + keys[sent] + "\"}";
      const std::string reply = connection.reply_prefix + std::to_string(first + sent);
      if (natsConnection_PublishRequest(nc, subject.c_str(), reply.c_str(), body.data(),
                                        static_cast<int>(body.size())) != NATS_OK)
        break;
    }
    detail::Attempts attempts(connection, budget_);
    const auto wait = attempts.wait();
    constexpr std::chrono::milliseconds kTrial{250};
    const auto deadline =  // for the whole batch, its flush included
        std::chrono::steady_clock::now() + (direct && known < 0 ? std::min(wait, kTrial) : wait);
    // One flush puts them on the wire together.
    if (sent > 0) natsConnection_FlushTimeout(nc, std::max<std::int64_t>(1, wait.count()));
    std::size_t heard = 0;
    const std::size_t no_responders =
        detail::read_replies(connection, first, sent, deadline, [&](std::size_t i, natsMsg* reply) {
          GetAnswer answer =
              direct ? read_direct_answer(reply, state_->prefix + keys[i], keys[i]) : read_get_answer(reply, keys[i]);
          answered[i] = answer.usable;  // an unusable answer's key is read alone below
          out[i] = std::move(answer.entry);
          ++heard;
        });
    if (direct && sent > 0) state_->direct = no_responders > 0 || heard == 0 ? 0 : 1;
  }
  // Unsent, unanswered or unusable (a timeout, a failover, an error): alone,
  // with the usual retries and errors.
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (!answered[i]) out[i] = get(keys[i]);
  return out;
}

std::vector<Entry> Bucket::current(std::string_view pattern) const {
  require_valid_pattern(name_, pattern);
  const std::string subjects = state_->prefix + std::string(pattern);
  const std::string what = "list " + where(name_, pattern);
  // The stream names its subjects under its lock, as they stand at once: a
  // key there now is read below, whatever is written to it meanwhile.
  std::vector<std::string> keys = detail::with_retries(*state_->connection, budget_, [&](std::chrono::milliseconds wait) {
    jsStreamInfo* raw = nullptr;
    jsErrCode code = jsErrCode(0);
    jsOptions options = detail::waiting(wait);
    options.Stream.Info.SubjectsFilter = subjects.c_str();
    natsStatus status = js_GetStreamInfo(&raw, state_->js(), state_->stream.c_str(), &options, &code);
    if (status == NATS_NOT_FOUND || code == JSStreamNotFoundErr)
      throw Error(Errc::not_found, where(name_) + " no longer exists");
    detail::check(status, what, code);
    detail::StreamInfoPtr info(raw);
    std::vector<std::string> names;
    if (const jsStreamStateSubjects* listed = info->State.Subjects) {
      names.reserve(static_cast<std::size_t>(listed->Count));
      for (int i = 0; i < listed->Count; ++i) {
        const std::string_view subject = listed->List[i].Subject ? listed->List[i].Subject : "";
        if (subject.size() > state_->prefix.size() && subject.substr(0, state_->prefix.size()) == state_->prefix)
          names.emplace_back(subject.substr(state_->prefix.size()));
      }
    }
    return names;
  });
  std::sort(keys.begin(), keys.end());
  std::vector<Entry> out;
  for (auto& entry : get_together(keys))
    if (entry) out.push_back(std::move(*entry));
  return out;
}

}  // namespace kv
