// A bucket's writes: CAS create, update and delete, each once through
// retries and failovers (a write that may have landed is recognised as
// ours), the guard of a CAS on a clustered 2.9 stream (adr/0014), and
// several updates sent together with their acknowledgements read as JSON.
#include <cJSON.h>

#include <cstring>
#include <memory>

#include "kv/bucket.h"
#include "kv/bucket_state.h"
#include "kv/c_handle.h"
#include "kv/retry.h"

namespace kv {

namespace {

// JetStream's answer to a message TTL on a stream that does not allow them.
constexpr int kTtlDisabledErr = 10166;
constexpr const char* kTtlHeader = "Nats-TTL";

}  // namespace

std::string Bucket::State::ttl_header(std::chrono::milliseconds ttl) const {
  if (ttl <= std::chrono::milliseconds(0) || ttl_refused.load()) return {};
  if (version_before(detail::server_version(*connection), 2, 11)) return {};
  // Whole seconds, rounded up: never before the TTL asked.
  const auto seconds = std::max<std::int64_t>(1, (ttl.count() + 999) / 1000);
  return std::to_string(seconds);
}

Bucket Bucket::with_message_ttl(std::chrono::milliseconds ttl) const {
  Bucket copy = *this;
  copy.message_ttl_ = ttl;
  return copy;
}

std::uint64_t Bucket::publish(std::string_view key, std::string_view value, Expect expect, std::uint64_t expect_revision,
                              Op op, std::string_view what, Sent sent) const {
  PendingWrite w{key, value, what, expect == Expect::absent, expect_revision, op == Op::erase,
                 sent == Sent::maybe_stored, 0};
  require_valid_key(name_, key);
  // Every renewal comes through here: the error text is built only on failure.
  auto fail = [&](natsStatus status, jsErrCode code) {
    detail::raise(status, code, std::string(what) + " " + where(name_, key));
  };
  const std::string subject = state_->prefix + std::string(key);
  natsMsg* raw = nullptr;
  if (natsStatus s = natsMsg_Create(&raw, subject.c_str(), nullptr, value.data(), static_cast<int>(value.size()));
      s != NATS_OK)
    fail(s, jsErrCode(0));
  detail::MsgPtr msg(raw);
  if (w.is_delete)
    if (natsStatus s = natsMsgHeader_Set(raw, detail::kOperationHeader, "DEL"); s != NATS_OK) fail(s, jsErrCode(0));
  if (const std::string ttl = w.is_delete ? std::string() : state_->ttl_header(message_ttl_); !ttl.empty())
    if (natsStatus s = natsMsgHeader_Set(raw, kTtlHeader, ttl.c_str()); s != NATS_OK) fail(s, jsErrCode(0));

  jsPubOptions options;
  jsPubOptions_Init(&options);
  if (w.expect_absent) options.ExpectNoMessage = true;
  else options.ExpectLastSubjectSeq = expect_revision;

  detail::Attempts attempts(*state_->connection, budget_);
  const bool guarded = expect_revision > 0 && !w.expect_absent;  // a CAS on a revision
  while (true) {
    try {
      options.ExpectLastSeq = 0;
      if (guarded && state_->clustered != 0 && detail::needs_cas_guard(*state_->connection))
        if (auto last = cas_guard(attempts.wait())) options.ExpectLastSeq = *last;
    } catch (const Error& e) {
      if (!attempts.again_after(e)) throw;
      continue;
    }
    w.guard = options.ExpectLastSeq;
    options.MaxWait = attempts.wait().count();
    jsPubAck* ack = nullptr;
    jsErrCode code = jsErrCode(0);
    natsStatus status = js_PublishMsg(&ack, state_->js(), raw, &options, &code);
    detail::PubAckPtr owned_ack(ack);
    if (status == NATS_OK) return ack->Sequence;
    if (code == kTtlDisabledErr && natsMsgHeader_Delete(raw, kTtlHeader) == NATS_OK) {
      state_->ttl_refused = true;  // refused before it was stored: again without it
      continue;
    }
    try {
      fail(status, code);
    } catch (const Error& e) {
      if (auto revision = after_failure(e, w, attempts)) return *revision;
    }
  }
}

std::optional<std::uint64_t> Bucket::after_failure(const Error& e, PendingWrite& w, detail::Attempts& attempts) const {
  // Follow-up reads fit in what is left of this write's budget; the key is
  // read at most once for both questions below.
  const Bucket rest = with_budget(attempts.left());
  bool deleted = false;
  std::optional<std::optional<Entry>> read;
  auto key_now = [&]() -> const std::optional<Entry>& {
    if (!read) read = rest.latest(w.key, &deleted);
    return *read;
  };
  const std::string where_ = std::string(w.what) + " " + where(name_, w.key);
  // The key tells what a refused CAS means. After a send that got no answer,
  // the retry of a write that did land loses its own CAS: it is ours when the
  // key holds exactly what we wrote. A CAS on a revision refused while the key
  // still has a value at or before that revision (a new stream leader not yet
  // caught up with what it acknowledged; 2.15 refuses without saying the
  // key's revision) is tried again.
  const bool behind = !w.expect_absent && e.current_revision() < w.expect_revision;
  if (e.kind() == Errc::conflict && (w.maybe_stored || behind)) {
    const auto& now = key_now();
    if (w.maybe_stored)
      if (auto revision = landed(now, deleted, w.value, w.is_delete)) return revision;
    // A key with no value now (expired, deleted) is a real conflict.
    if (!w.expect_absent && now && !deleted && now->revision <= w.expect_revision) {
      Error again(Errc::unavailable, where_ + ": refused while the key is not past revision " +
                                         std::to_string(w.expect_revision) + " (a leader change); try again");
      if (!attempts.again_after(again)) throw again;
      return std::nullopt;
    }
  }
  if (e.kind() == Errc::conflict && w.guard != 0) {
    // The guard failed, or the key's own CAS: the key tells which.
    const auto& now = key_now();
    const std::uint64_t at = now ? now->revision : 0;
    if (at != w.expect_revision)
      throw Error(Errc::conflict,
                  where_ + ": wrong last sequence: " + std::to_string(at) + " (the key is no longer at revision " +
                      std::to_string(w.expect_revision) + ")",
                  at);
    // Only other keys moved: again, with the stream's new last sequence.
    Error moved(Errc::unavailable, where_ + ": the bucket kept changing under this CAS write; try again");
    if (!attempts.again_after(moved)) throw moved;
    return std::nullopt;
  }
  w.maybe_stored = w.maybe_stored || detail::is_transient(e);
  if (!attempts.again_after(e)) throw e;
  return std::nullopt;
}

std::uint64_t Bucket::put_hint(std::string_view key, std::string_view value) const {
  return publish(key, value, Expect::revision, 0, Op::put, "put");  // revision 0: no expectation
}

void Bucket::remove_hint(std::string_view key) const { publish(key, {}, Expect::revision, 0, Op::erase, "delete"); }

void Bucket::write_hints(const std::vector<HintWrite>& writes) const {
  if (writes.empty()) return;
  for (const auto& w : writes) {
    require_valid_key(name_, w.key);
    const std::string subject = state_->prefix + w.key;
    natsMsg* raw = nullptr;
    natsStatus s = natsMsg_Create(&raw, subject.c_str(), nullptr, w.value.data(), static_cast<int>(w.value.size()));
    if (s != NATS_OK) detail::raise(s, jsErrCode(0), "write hints to " + where(name_));
    if (w.erase) s = natsMsgHeader_Set(raw, detail::kOperationHeader, "DEL");
    if (s == NATS_OK) s = js_PublishMsgAsync(state_->js(), &raw, nullptr);  // takes the message when sent
    natsMsg_Destroy(raw);                                                   // null once taken
    if (s != NATS_OK) detail::raise(s, jsErrCode(0), "write hints to " + where(name_, w.key));
  }
  jsPubOptions wait;
  jsPubOptions_Init(&wait);
  wait.MaxWait = request_timeout().count();
  // Not all answered in time: hints only speed a reader, and the next
  // repair mends what did not land; the command goes on.
  (void)js_PublishAsyncComplete(state_->js(), &wait);
}

void Bucket::advance_to(std::uint64_t revision, std::string_view key) const {
  require_valid_key(name_, key);
  // Each round publishes what is missing, then reads where the stream is:
  // a write lost on the way (a leader change) is made up by the next round.
  constexpr int kRounds = 4;
  const std::string subject = state_->prefix + std::string(key);
  for (int round = 0; round < kRounds; ++round) {
    const std::uint64_t last = last_revision();
    if (last >= revision) return;
    for (std::uint64_t n = revision - last; n > 0; --n) {
      natsStatus s = js_PublishAsync(state_->js(), subject.c_str(), "", 0, nullptr);
      if (s != NATS_OK) detail::raise(s, jsErrCode(0), "advance " + where(name_));
    }
    jsPubOptions wait;
    jsPubOptions_Init(&wait);
    wait.MaxWait = request_timeout().count();
    natsStatus s = js_PublishAsyncComplete(state_->js(), &wait);
    if (s != NATS_OK && s != NATS_TIMEOUT) detail::raise(s, jsErrCode(0), "advance " + where(name_));
  }
  if (last_revision() < revision)
    throw Error(Errc::unavailable, "could not move " + where(name_) + " past revision " + std::to_string(revision) +
                                       "; try again");
}

std::optional<std::uint64_t> Bucket::cas_guard(std::chrono::milliseconds wait) const {
  // nats-server before 2.10 checks a clustered stream's "expected last
  // subject sequence" only before it proposes a write, against the writes it
  // has applied: two CAS writes on one revision that arrive together both
  // land (nats-server issue 4320). The expected last sequence of the whole
  // stream is checked as each write is applied, in log order. So a CAS write
  // on a clustered stream also carries the stream's last sequence, read just
  // before: it lands only if nothing at all was written to the bucket since,
  // so the key is still at the revision it was checked at (adr/0014).
  auto info = detail::stream_info_once(state_->js(), state_->stream, where(name_), wait);
  if (!info) throw Error(Errc::not_found, where(name_) + " no longer exists");
  state_->clustered = info->Cluster != nullptr ? 1 : 0;
  if (info->Cluster == nullptr) return std::nullopt;
  return info->State.LastSeq;
}

std::optional<std::uint64_t> Bucket::landed(const std::optional<Entry>& last, bool deleted, std::string_view value,
                                            bool is_delete) {
  if (is_delete) {
    if (!last || (deleted && last->value == value)) return last ? last->revision : 0;
    return std::nullopt;
  }
  if (last && !deleted && last->value == value) return last->revision;
  return std::nullopt;
}

namespace {

// A JetStream publish acknowledgement, read as the JSON it is:
// {"stream":..,"seq":N} or {"error":{"code":..,"err_code":..,"description":".."}}.
struct PubAck {
  bool parsed = false;
  bool failed = false;
  std::uint64_t seq = 0;
  std::uint64_t err_code = 0;
  std::string description;
};

std::uint64_t whole_number(const cJSON* item) {
  return cJSON_IsNumber(item) && item->valuedouble >= 0 ? static_cast<std::uint64_t>(item->valuedouble) : 0;
}

PubAck parse_pub_ack(std::string_view text) {
  PubAck out;
  std::unique_ptr<cJSON, CFree<cJSON_Delete>> doc(cJSON_ParseWithLength(text.data(), text.size()));
  if (!cJSON_IsObject(doc.get())) return out;
  out.parsed = true;
  // Any "error" member is a failure (its fields read when it is an object).
  if (const cJSON* error = cJSON_GetObjectItemCaseSensitive(doc.get(), "error"); error != nullptr) {
    out.failed = true;
    out.err_code = whole_number(cJSON_GetObjectItemCaseSensitive(error, "err_code"));
    const cJSON* description = cJSON_GetObjectItemCaseSensitive(error, "description");
    if (cJSON_IsString(description)) out.description = description->valuestring;
    return out;
  }
  out.seq = whole_number(cJSON_GetObjectItemCaseSensitive(doc.get(), "seq"));
  return out;
}

}  // namespace

// A pipelined write's answer: the new revision, or the failure (a conflict
// carries the current revision, as nats.c's own error text does).
Bucket::WriteResult detail::read_pub_ack(natsMsg* reply, const std::string& what, int* js_code) {
  Bucket::WriteResult out;
  const char* status = nullptr;
  if (natsMsgHeader_Get(reply, "Status", &status) == NATS_OK && status != nullptr && std::strcmp(status, "503") == 0) {
    out.error = Error(Errc::unavailable, what + ": No responders available for request");
    return out;
  }
  const PubAck ack = parse_pub_ack(std::string_view(natsMsg_GetData(reply) ? natsMsg_GetData(reply) : "",
                                                    static_cast<std::size_t>(natsMsg_GetDataLength(reply))));
  if (!ack.failed) {
    out.revision = ack.seq;
    if (out.revision == 0)
      out.error = Error(Errc::internal, what + (ack.parsed ? ": an acknowledgement without a sequence"
                                                           : ": an acknowledgement that is not JSON"));
    return out;
  }
  const auto code = ack.err_code;
  if (js_code != nullptr) *js_code = static_cast<int>(code);
  Errc kind = code == JSStreamWrongLastSequenceErr ? Errc::conflict : Errc::internal;
  if (code == JSClusterNotAvailErr || code == JSClusterNotLeaderErr || code == JSClusterIncompleteErr ||
      code == JSRaftGeneralErr)
    kind = Errc::unavailable;
  if (detail::store_full(code, ack.description)) kind = Errc::no_room;
  std::uint64_t current = 0;
  if (auto at = ack.description.find("wrong last sequence: "); at != std::string::npos)
    current = std::strtoull(ack.description.c_str() + at + 21, nullptr, 10);
  out.error = Error(kind, what + ": " + ack.description + " (JetStream error " + std::to_string(code) + ")", current);
  return out;
}

namespace detail {
std::size_t read_replies(ConnectionState& connection, std::uint64_t first, std::size_t sent,
                         std::chrono::steady_clock::time_point deadline,
                         const std::function<void(std::size_t i, natsMsg* reply)>& take) {
  std::vector<bool> heard(sent, false);
  std::size_t no_responders = 0;
  for (std::size_t left = sent; left > 0;) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    natsMsg* raw = nullptr;
    const natsStatus status =
        natsSubscription_NextMsg(&raw, connection.replies, std::max<std::int64_t>(1, ms.count()));
    if (status == NATS_NO_RESPONDERS) {
      // Read here, not left for a later batch to mistake; it may be an
      // earlier batch's, which at worst ends this one early.
      ++no_responders;
      --left;
      continue;
    }
    if (status != NATS_OK) return no_responders;
    MsgPtr reply(raw);
    std::string_view subject = natsMsg_GetSubject(raw);
    std::uint64_t n = std::strtoull(std::string(subject.substr(connection.reply_prefix.size())).c_str(), nullptr, 10);
    if (n < first || n >= first + sent || heard[n - first]) continue;  // another batch's (late) answer
    heard[n - first] = true;
    --left;
    take(n - first, raw);
  }
  return no_responders;
}

void subscribe_replies(ConnectionState& connection) {
  if (connection.replies != nullptr) return;
  char* inbox = nullptr;
  check(natsInbox_Create(&inbox), "make a reply inbox");
  connection.reply_prefix = std::string(inbox) + ".";
  natsInbox_Destroy(inbox);
  check(natsConnection_SubscribeSync(&connection.replies, connection.connection.get(),
                                     (connection.reply_prefix + "*").c_str()),
        "subscribe to replies");
  check(natsSubscription_SetPendingLimits(connection.replies, -1, -1), "subscribe to replies");
}
}  // namespace detail

std::vector<Bucket::WriteResult> Bucket::update_together(const std::vector<Write>& writes) {
  std::vector<WriteResult> out(writes.size());
  if (writes.empty()) return out;
  detail::ConnectionState& connection = *writes.front().bucket->state_->connection;
  for (const auto& w : writes) {
    if (&*w.bucket->state_->connection != &connection)
      throw Error(Errc::bad_request, "update_together: every bucket must be on one connection");
    require_valid_key(w.bucket->name_, w.key);
    if (w.revision == 0)
      throw Error(Errc::bad_request, "update " + where(w.bucket->name_, w.key) + ": revision 0 is not a revision");
  }
  // Every write is published with a reply to the connection's reply inbox,
  // then one flush puts them on the wire together (its PING is answered
  // after their acknowledgements, which the server sends in order): one round
  // trip for all. nats.c's publish alone would leave them to its flusher
  // thread, which waits to gather more.
  std::vector<bool> answered(writes.size(), false);
  // A CAS write on a clustered stream needs its own guard (see cas_guard):
  // those go one at a time.
  bool pipelined = true;
  for (const auto& w : writes)
    pipelined = pipelined && (w.bucket->state_->clustered == 0 || !detail::needs_cas_guard(*w.bucket->state_->connection));
  std::unique_lock lock(connection.reply_mu);
  natsConnection* nc = connection.connection.get();
  detail::subscribe_replies(connection);
  const std::uint64_t first = connection.next_reply;
  connection.next_reply += writes.size();
  std::size_t sent = 0;
  for (; pipelined && sent < writes.size(); ++sent) {
    const Write& w = writes[sent];
    const std::string subject = w.bucket->state_->prefix + w.key;
    const std::string reply = connection.reply_prefix + std::to_string(first + sent);
    natsMsg* raw = nullptr;
    if (natsMsg_Create(&raw, subject.c_str(), reply.c_str(), w.value.data(), static_cast<int>(w.value.size())) !=
        NATS_OK)
      break;
    detail::MsgPtr msg(raw);
    const std::string expected = std::to_string(w.revision);
    const std::string ttl = w.bucket->state_->ttl_header(w.message_ttl);
    if (natsMsgHeader_Set(raw, "Nats-Expected-Last-Subject-Sequence", expected.c_str()) != NATS_OK ||
        (!ttl.empty() && natsMsgHeader_Set(raw, kTtlHeader, ttl.c_str()) != NATS_OK) ||
        natsConnection_PublishMsg(nc, raw) != NATS_OK)
      break;  // it and the rest go one at a time below
  }
  detail::Attempts attempts(connection, writes.front().bucket->budget_);
  const auto wait = attempts.wait();
  // A failed flush (a timeout, a reconnect) leaves the answers to the wait
  // below, and what is still unanswered to the one-at-a-time path.
  if (sent > 0) natsConnection_FlushTimeout(nc, std::max<std::int64_t>(1, wait.count()));
  // A transient failure counts as no answer: that write goes alone below.
  detail::read_replies(connection, first, sent, std::chrono::steady_clock::now() + wait,
                       [&](std::size_t i, natsMsg* reply) {
                         int code = 0;
                         out[i] = detail::read_pub_ack(reply, "update " + where(writes[i].bucket->name(), writes[i].key),
                                               &code);
                         // A TTL the stream refused: alone below, without it.
                         const bool refused = out[i].error && code == kTtlDisabledErr;
                         if (refused) writes[i].bucket->state_->ttl_refused = true;
                         answered[i] = !(out[i].error && (detail::is_transient(*out[i].error) || refused));
                       });
  lock.unlock();
  // No answer in time (a failover, say), or never sent: alone, the usual way,
  // knowing a first send may have landed.
  for (std::size_t i = 0; i < writes.size(); ++i) {
    if (answered[i]) continue;
    const Write& w = writes[i];
    out[i] = {};
    try {
      const Sent earlier = i < sent ? Sent::maybe_stored : Sent::first;
      out[i].revision = w.bucket->with_message_ttl(w.message_ttl)
                            .publish(w.key, w.value, Expect::revision, w.revision, Op::put, "update", earlier);
    } catch (const Error& e) {
      out[i].error = e;
    }
  }
  return out;
}

std::uint64_t Bucket::create(std::string_view key, std::string_view value) const {
  try {
    return publish(key, value, Expect::absent, 0, Op::put, "create");
  } catch (const Error& e) {
    if (e.kind() != Errc::conflict) throw;
  }
  // The key has history. Its last word may be a delete marker, which counts as
  // absent: create over exactly that marker, so a racing writer still loses.
  bool deleted = false;
  auto last = latest(key, &deleted);
  if (!last) return publish(key, value, Expect::absent, 0, Op::put, "create");
  if (!deleted)
    throw Error(Errc::conflict, "create " + where(name_, key) + ": the key exists at revision " +
                                    std::to_string(last->revision),
                last->revision);
  return publish(key, value, Expect::revision, last->revision, Op::put, "create");
}

std::uint64_t Bucket::update(std::string_view key, std::string_view value, std::uint64_t revision) const {
  if (revision == 0)
    throw Error(Errc::bad_request, "update " + where(name_, key) + ": revision 0 is not a revision; use create");
  return publish(key, value, Expect::revision, revision, Op::put, "update");
}

void Bucket::erase(std::string_view key, std::uint64_t revision, std::string_view value) const {
  if (revision == 0)
    throw Error(Errc::bad_request, "erase " + where(name_, key) + ": revision 0 is not a revision");
  // nats.c has no conditional delete: publish the delete marker ourselves with
  // the expected-last-subject-sequence header (JetStream error 10071 on a miss).
  publish(key, value, Expect::revision, revision, Op::erase, "erase");
}

}  // namespace kv
