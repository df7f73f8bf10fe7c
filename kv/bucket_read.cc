// Several keys of a bucket read in one round trip: a STREAM.MSG.GET request
// per key (the stream leader answers it, as it does latest()), published
// together on the connection's numbered reply inbox and flushed once; what
// got no usable answer is read again alone, the usual way.
#include <cJSON.h>

#include <memory>
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
  // A delete or purge marker: "NATS/1.0\r\nKV-Operation: DEL\r\n\r\n".
  const std::string marker = std::string(detail::kOperationHeader) + ":";
  if (const auto at = head->find(marker); at != std::string::npos) {
    std::string_view op = std::string_view(*head).substr(at + marker.size());
    while (!op.empty() && op.front() == ' ') op.remove_prefix(1);
    if (op.substr(0, 3) == "DEL" || op.substr(0, 5) == "PURGE") return out;
  }
  out.entry = Entry{std::string(key), std::move(*value), static_cast<std::uint64_t>(seq->valuedouble), *stored};
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
    const std::string api = "$JS.API.STREAM.MSG.GET." + state_->stream;
    std::size_t sent = 0;
    for (; sent < keys.size(); ++sent) {
      const std::string body = "{\"last_by_subj\":\"" + state_->prefix + keys[sent] + "\"}";
      const std::string reply = connection.reply_prefix + std::to_string(first + sent);
      if (natsConnection_PublishRequest(nc, api.c_str(), reply.c_str(), body.data(), static_cast<int>(body.size())) !=
          NATS_OK)
        break;
    }
    detail::Attempts attempts(connection, budget_);
    const auto wait = attempts.wait();
    const auto deadline = std::chrono::steady_clock::now() + wait;  // for the whole batch, its flush included
    // One flush puts them on the wire together.
    if (sent > 0) natsConnection_FlushTimeout(nc, std::max<std::int64_t>(1, wait.count()));
    detail::read_replies(connection, first, sent, deadline, [&](std::size_t i, natsMsg* reply) {
      GetAnswer answer = read_get_answer(reply, keys[i]);
      answered[i] = answer.usable;  // an unusable answer's key is read alone below
      out[i] = std::move(answer.entry);
    });
  }
  // Unsent, unanswered or unusable (a timeout, a failover, an error): alone,
  // with the usual retries and errors.
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (!answered[i]) out[i] = get(keys[i]);
  return out;
}

}  // namespace kv
