#include "kv/stream.h"

#include <algorithm>
#include <atomic>

#include "kv/ack_subject.h"
#include "kv/bucket.h"
#include "kv/bucket_state.h"
#include "kv/connection_state.h"
#include "kv/retry.h"
#include "kv/stream_state.h"

namespace kv {

using detail::check;
using detail::with_retries;
using detail::time_of;
using detail::waiting;
using detail::config_of;
using detail::info_once;
using detail::kNanosPerMilli;
using detail::stream_where;
using namespace std::chrono_literals;

namespace detail {

StreamConfig config_of(const jsStreamConfig& c) {
  StreamConfig config;
  config.name = c.Name != nullptr ? c.Name : "";
  for (int i = 0; i < c.SubjectsLen; ++i) config.subjects.emplace_back(c.Subjects[i]);
  config.max_age = std::chrono::milliseconds(c.MaxAge / kNanosPerMilli);
  config.max_bytes = c.MaxBytes;
  config.replicas = static_cast<int>(c.Replicas);
  config.duplicate_window = std::chrono::milliseconds(c.Duplicates / kNanosPerMilli);
  config.discard_new = c.Discard == js_DiscardNew;
  config.max_msg_size = c.MaxMsgSize;
  return config;
}

StreamInfoPtr info_once(jsCtx* js, const std::string& name, std::chrono::milliseconds wait) {
  return stream_info_once(js, name, stream_where(name), wait);
}

}  // namespace detail

namespace {

// Whether `subject` matches `pattern` (tokens, "*" one, a final ">" the rest).
bool subject_matches(std::string_view pattern, std::string_view subject) {
  while (true) {
    const auto p_dot = pattern.find('.'), s_dot = subject.find('.');
    const std::string_view p = pattern.substr(0, p_dot), s = subject.substr(0, s_dot);
    if (p == ">") return !s.empty();
    if (p != "*" && p != s) return false;
    if (p_dot == std::string_view::npos || s_dot == std::string_view::npos)
      return p_dot == std::string_view::npos && s_dot == std::string_view::npos;
    pattern.remove_prefix(p_dot + 1);
    subject.remove_prefix(s_dot + 1);
  }
}

// No responder to a request of the stream: it is gone, or does not take
// `subject` (not_found, at once), or (a cluster) it has no leader yet,
// which a retry may get past.
[[noreturn]] void no_responder(jsCtx* js, const std::string& name, const std::string& what,
                               std::chrono::milliseconds wait, std::string_view subject = {}) {
  auto info = info_once(js, name, wait);
  if (!info) throw Error(Errc::not_found, what + ": " + stream_where(name) + " does not exist");
  if (!subject.empty()) {
    bool takes = false;
    for (int i = 0; i < info->Config->SubjectsLen; ++i) takes = takes || subject_matches(info->Config->Subjects[i], subject);
    if (!takes) throw Error(Errc::not_found, what + ": " + stream_where(name) + " does not take that subject");
  }
  throw Error(Errc::unavailable, what + ": " + stream_where(name) + " has no leader yet");
}

StreamMessage message_of(natsMsg* raw) {
  StreamMessage m;
  const char* subject = natsMsg_GetSubject(raw);
  m.subject = subject != nullptr ? subject : "";
  const char* data = natsMsg_GetData(raw);
  m.data.assign(data != nullptr ? data : "", static_cast<std::size_t>(natsMsg_GetDataLength(raw)));
  m.seq = natsMsg_GetSequence(raw);
  m.time = time_of(natsMsg_GetTime(raw));
  return m;
}

}  // namespace

Stream Stream::bind(const Connection& connection, const std::string& name) {
  require_valid_bucket_name(name);
  auto state = std::make_shared<State>();
  state->connection = connection.state();
  return Stream(std::move(state), name);
}

std::optional<StreamStatus> Stream::state() const {
  auto info = with_retries(*state_->connection, budget_, [&](std::chrono::milliseconds wait) {
    return info_once(state_->js(), name_, wait);
  });
  if (!info) return std::nullopt;
  StreamStatus s;
  s.config = config_of(*info->Config);
  s.first_seq = info->State.FirstSeq;
  s.last_seq = info->State.LastSeq;
  s.messages = info->State.Msgs;
  s.bytes = info->State.Bytes;
  s.sealed = info->Config->Sealed;
  if (info->Cluster != nullptr && info->Cluster->Leader != nullptr) s.leader = info->Cluster->Leader;
  s.created = time_of(info->Created);
  return s;
}

Stream::Published Stream::publish(std::string_view subject, std::string_view data, const std::string& msg_id) const {
  const std::string subj(subject);
  const std::string what = "publish to " + stream_where(name_) + " subject " + subj;
  return with_retries(*state_->connection, budget_, [&](std::chrono::milliseconds wait) {
    jsPubOptions options;
    check(jsPubOptions_Init(&options), what);
    options.MsgId = msg_id.c_str();
    options.ExpectStream = name_.c_str();
    options.MaxWait = wait.count();
    jsPubAck* raw = nullptr;
    jsErrCode code = jsErrCode(0);
    natsStatus status = js_Publish(&raw, state_->js(), subj.c_str(), data.data(), static_cast<int>(data.size()),
                                   &options, &code);
    detail::PubAckPtr ack(raw);
    if (status == NATS_NO_RESPONDERS) no_responder(state_->js(), name_, what, wait, subj);
    check(status, what, code);
    return Published{ack->Sequence, ack->Duplicate};
  });
}

void Stream::publish_unanswered(std::string_view subject, std::string_view data, const std::string& msg_id) const {
  const std::string subj(subject);
  const std::string what = "publish to " + stream_where(name_) + " subject " + subj;
  natsMsg* raw = nullptr;
  check(natsMsg_Create(&raw, subj.c_str(), nullptr, data.data(), static_cast<int>(data.size())), what);
  detail::MsgPtr msg(raw);
  check(natsMsgHeader_Set(raw, "Nats-Msg-Id", msg_id.c_str()), what);
  check(natsConnection_PublishMsg(state_->connection->connection.get(), raw), what);
  check(natsConnection_FlushTimeout(state_->connection->connection.get(), state_->connection->request_timeout.count()),
        what);
}

namespace {
using ConsumerInfoPtr = detail::ConsumerInfoPtr;
// How long the server keeps a counting consumer nobody reads.
constexpr std::chrono::seconds kCountConsumerLife{5};
}  // namespace

std::uint64_t Stream::count_from(std::string_view filter, std::uint64_t seq) const {
  const std::string subj(filter);
  const std::string what = "count " + subj + " in " + stream_where(name_);
  return with_retries(*state_->connection, budget_, [&](std::chrono::milliseconds wait) -> std::uint64_t {
    jsConsumerConfig config;
    check(jsConsumerConfig_Init(&config), what);
    config.FilterSubject = subj.c_str();
    config.DeliverPolicy = js_DeliverByStartSequence;
    config.OptStartSeq = std::max<std::uint64_t>(seq, 1);
    config.AckPolicy = js_AckNone;
    config.MemoryStorage = true;
    config.Replicas = 1;
    config.InactiveThreshold = std::chrono::duration_cast<std::chrono::nanoseconds>(kCountConsumerLife).count();
    jsOptions options = waiting(wait);
    jsConsumerInfo* raw = nullptr;
    jsErrCode code = jsErrCode(0);
    natsStatus status = js_AddConsumer(&raw, state_->js(), name_.c_str(), &config, &options, &code);
    ConsumerInfoPtr info(raw);
    if (status == NATS_NO_RESPONDERS) no_responder(state_->js(), name_, what, wait);
    if (status == NATS_NOT_FOUND || code == JSStreamNotFoundErr)
      throw Error(Errc::not_found, what + ": " + stream_where(name_) + " does not exist");
    check(status, what, code);
    return info->NumPending;
  });
}

namespace {
std::optional<StreamMessage> direct_get(detail::ConnectionState& connection, std::chrono::milliseconds budget,
                                        const std::string& stream, const jsDirectGetMsgOptions& get,
                                        const std::string& what) {
  return with_retries(connection, budget, [&](std::chrono::milliseconds wait) -> std::optional<StreamMessage> {
    natsMsg* raw = nullptr;
    jsOptions options = waiting(wait);
    jsDirectGetMsgOptions copy = get;
    natsStatus status = js_DirectGetMsg(&raw, connection.js.get(), stream.c_str(), &options, &copy);
    if (status == NATS_NOT_FOUND) return std::nullopt;
    if (status == NATS_NO_RESPONDERS) no_responder(connection.js.get(), stream, what, wait);
    // nats-server 2.9 keeps answering direct gets of a deleted stream with
    // silence: a timeout asks whether the stream is still there.
    if (status == NATS_TIMEOUT && !info_once(connection.js.get(), stream, wait))
      throw Error(Errc::not_found, what + ": " + stream_where(stream) + " does not exist");
    check(status, what);
    detail::MsgPtr msg(raw);
    return message_of(raw);
  });
}
}  // namespace

std::optional<StreamMessage> Stream::last(std::string_view subject) const {
  const std::string subj(subject);
  jsDirectGetMsgOptions get;
  check(jsDirectGetMsgOptions_Init(&get), "get from " + stream_where(name_));
  get.LastBySubject = subj.c_str();
  return direct_get(*state_->connection, budget_, name_, get, "get the last of " + subj + " from " + stream_where(name_));
}

std::optional<StreamMessage> Stream::next(std::string_view filter, std::uint64_t seq) const {
  const std::string subj(filter);
  jsDirectGetMsgOptions get;
  check(jsDirectGetMsgOptions_Init(&get), "get from " + stream_where(name_));
  get.Sequence = std::max<std::uint64_t>(seq, 1);
  get.NextBySubject = subj.c_str();
  return direct_get(*state_->connection, budget_, name_, get, "get the next of " + subj + " from " + stream_where(name_));
}

std::vector<std::string> Stream::subjects(std::string_view filter) const {
  const std::string subj(filter);
  auto info = with_retries(*state_->connection, budget_, [&](std::chrono::milliseconds wait) {
    jsStreamInfo* raw = nullptr;
    jsErrCode code = jsErrCode(0);
    jsOptions options = waiting(wait);
    options.Stream.Info.SubjectsFilter = subj.c_str();
    natsStatus status = js_GetStreamInfo(&raw, state_->js(), name_.c_str(), &options, &code);
    if (status == NATS_NOT_FOUND || code == JSStreamNotFoundErr)
      throw Error(Errc::not_found, stream_where(name_) + " does not exist");
    check(status, "list the subjects of " + stream_where(name_), code);
    return detail::StreamInfoPtr(raw);
  });
  std::vector<std::string> out;
  if (info->State.Subjects != nullptr)
    for (int i = 0; i < info->State.Subjects->Count; ++i) out.emplace_back(info->State.Subjects->List[i].Subject);
  std::sort(out.begin(), out.end());
  return out;
}

void Stream::purge(std::string_view subject) const { purge_below(subject, 0); }

void Stream::purge_below(std::string_view subject, std::uint64_t below) const {
  // `below` 0: no bound (the server's Purge.Sequence unset), every message.
  const std::string subj(subject);
  const std::string what = "purge " + subj + (below > 0 ? " below " + std::to_string(below) : std::string()) +
                           " from " + stream_where(name_);
  with_retries(*state_->connection, budget_, [&](std::chrono::milliseconds wait) {
    jsOptions options = waiting(wait);
    options.Stream.Purge.Subject = subj.c_str();
    options.Stream.Purge.Sequence = below;
    jsErrCode code = jsErrCode(0);
    natsStatus status = js_PurgeStream(state_->js(), name_.c_str(), &options, &code);
    if (status == NATS_NOT_FOUND || code == JSStreamNotFoundErr)
      throw Error(Errc::not_found, what + ": " + stream_where(name_) + " does not exist");
    check(status, what, code);
    return true;
  });
}

Stream Stream::with_budget(std::chrono::milliseconds budget) const {
  Stream copy = *this;
  copy.budget_ = budget;
  return copy;
}

// An ordered push consumer of the stream, filtered; it knows it is caught up
// when a message says nothing more is pending after it.
struct StreamReader::Impl {
  std::shared_ptr<Stream::State> stream;  // keeps the connection alive
  detail::JsPtr js;
  detail::SubscriptionPtr sub;
  std::string what;
  bool caught_up = false;
  std::atomic<bool> stopped{false};

  ~Impl() {
    if (sub && !stopped) natsSubscription_Unsubscribe(sub.get());
  }
};

StreamReader::StreamReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StreamReader::StreamReader(StreamReader&&) noexcept = default;
StreamReader& StreamReader::operator=(StreamReader&&) noexcept = default;
StreamReader::~StreamReader() = default;

bool StreamReader::caught_up() const { return impl_->caught_up; }

std::optional<StreamMessage> StreamReader::next(std::chrono::milliseconds timeout) {
  Impl& r = *impl_;
  if (r.stopped) return std::nullopt;
  natsMsg* raw = nullptr;
  natsStatus status = natsSubscription_NextMsg(&raw, r.sub.get(), std::max<long>(1, timeout.count()));
  if (r.stopped || status == NATS_TIMEOUT) return std::nullopt;
  if (status != NATS_OK) detail::raise(status, jsErrCode(0), r.what);
  detail::MsgPtr msg(raw);
  StreamMessage m;
  const char* subject = natsMsg_GetSubject(raw);
  m.subject = subject != nullptr ? subject : "";
  const char* data = natsMsg_GetData(raw);
  m.data.assign(data != nullptr ? data : "", static_cast<std::size_t>(natsMsg_GetDataLength(raw)));
  const detail::Delivery d = detail::delivery_of(raw, r.what);
  m.seq = d.stream_seq;
  m.time = time_of(d.timestamp);
  if (d.pending == 0) r.caught_up = true;
  return m;
}

void StreamReader::stop() {
  if (impl_->stopped.exchange(true)) return;
  natsSubscription_Unsubscribe(impl_->sub.get());
}

StreamReader Stream::read(std::string_view filter, const ReadFrom& from) const {
  const std::string subject(filter);
  const std::string what = "read " + subject + " from " + stream_where(name_);
  return with_retries(*state_->connection, budget_, [&](std::chrono::milliseconds wait) {
    jsSubOptions options;
    check(jsSubOptions_Init(&options), what);
    options.Stream = name_.c_str();
    options.Ordered = true;
    if (from.new_only) {
      options.Config.DeliverPolicy = js_DeliverNew;
    } else {
      options.Config.DeliverPolicy = js_DeliverByStartSequence;
      options.Config.OptStartSeq = std::max<std::uint64_t>(from.seq, 1);
    }
    jsOptions js_options = waiting(wait);
    jsCtx* js = nullptr;
    check(natsConnection_JetStream(&js, state_->connection->connection.get(), &js_options), what);
    auto reader = std::make_unique<StreamReader::Impl>();
    reader->stream = state_;
    reader->what = what;
    reader->js.reset(js);
    natsSubscription* sub = nullptr;
    jsErrCode code = jsErrCode(0);
    check(js_SubscribeSync(&sub, js, subject.c_str(), nullptr, &options, &code), what, code);
    reader->sub.reset(sub);
    check(natsSubscription_SetPendingLimits(sub, -1, -1), what);
    return StreamReader(std::move(reader));
  });
}

}  // namespace kv
