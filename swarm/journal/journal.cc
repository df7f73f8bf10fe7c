#include "swarm/journal/journal.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>

#include "kv/error.h"
#include "swarm/base/error.h"
#include "swarm/base/text.h"
#include "swarm/base/warnings.h"

namespace swarm {

namespace {

// How long recording an act may add to it, at most (retries included).
constexpr std::chrono::milliseconds kRecordBudget{2000};
// A window of `log -n N` starts this many times N messages back, and grows
// this many times while it finds fewer.
constexpr std::uint64_t kFirstWindowFactor = 4;
constexpr std::uint64_t kWindowGrowth = 8;
constexpr std::uint64_t kSmallestWindow = 64;
// Fields every event has; the rest of a stored object is the kind's detail.
constexpr const char* kCommonFields[] = {"schema", "kind",    "slot", "lease",   "task",  "bucket",
                                         "host",   "host_id", "pid",  "task_id", "token", "revision"};

const char* string_of(const cJSON* object, const char* key) {
  const cJSON* item = cJSON_GetObjectItemCaseSensitive(object, key);
  return cJSON_IsString(item) ? item->valuestring : nullptr;
}

std::uint64_t number_of(const cJSON* object, const char* key) {
  constexpr double kBeyond = 18446744073709551616.0;  // 2^64: no token or pid is that large
  const cJSON* item = cJSON_GetObjectItemCaseSensitive(object, key);
  return cJSON_IsNumber(item) && item->valuedouble >= 0 && item->valuedouble < kBeyond
             ? static_cast<std::uint64_t>(item->valuedouble)
             : 0;
}

bool is_common(const char* key) {
  for (const char* common : kCommonFields)
    if (std::strcmp(key, common) == 0) return true;
  return false;
}

// Runs a read of the journal `stream`: one that does not exist is named,
// with what makes it (exit 6), rather than a bare "not found".
template <typename Read>
auto reading_of(const std::string& stream, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const kv::Error& e) {
    if (e.kind() == kv::Errc::not_found)
      throw Error(Errc::not_bootstrapped, "no journal: stream " + stream + " does not exist; `swarm up` makes it");
    throw from_kv(e);
  }
}

}  // namespace

std::string_view to_string(Thing thing) {
  switch (thing) {
    case Thing::slot: return "slot";
    case Thing::lease: return "lease";
    case Thing::task: return "task";
  }
  return "slot";
}

std::string event_subject(std::string_view root, Thing thing, std::string_view bucket, std::string_view name) {
  std::string s(root);
  s.append(bucket).append(".").append(to_string(thing)).append(".").append(name);
  return s;
}

Actor Actor::here(const HostIdentity& me) { return {me.host, me.host_id, static_cast<std::int64_t>(::getpid())}; }

Json Event::to_json() const {
  Json j = Json::object();
  j.add("schema", kEventSchema)
      .add("kind", kind)
      .add(std::string(to_string(thing)).c_str(), name)
      .add("bucket", bucket)
      .add("host", actor.host)
      .add("host_id", actor.host_id)
      .add("pid", actor.pid)
      .add("task_id", task_id)
      .set("token", token)
      .set("revision", revision);
  j.adopt_members(Json::copy(detail.get()));
  if (time) j.set("time", format_rfc3339(*time));
  if (seq != 0) j.set("seq", seq);
  return j;
}

std::optional<Event> Event::from_message(const kv::StreamMessage& message, std::string_view root) {
  Json doc = Json::parse(message.data);
  const cJSON* o = doc.get();
  if (!cJSON_IsObject(o)) return std::nullopt;
  const char* schema = string_of(o, "schema");
  const char* kind = string_of(o, "kind");
  const char* bucket = string_of(o, "bucket");
  const char* slot = string_of(o, "slot");
  const char* lease = string_of(o, "lease");
  const char* task_key = string_of(o, "task");
  // One thing an event is about: a slot, a lease or a task.
  const int things = (slot != nullptr) + (lease != nullptr) + (task_key != nullptr);
  if (schema == nullptr || std::strcmp(schema, kEventSchema) != 0 || kind == nullptr || bucket == nullptr ||
      things != 1)
    return std::nullopt;
  Event e;
  e.kind = kind;
  e.thing = slot != nullptr ? Thing::slot : lease != nullptr ? Thing::lease : Thing::task;
  e.bucket = bucket;
  e.name = slot != nullptr ? slot : lease != nullptr ? lease : task_key;
  // An event sits on its own thing's subject: one that claims another is not trusted.
  if (message.subject != event_subject(root, e.thing, e.bucket, e.name)) return std::nullopt;
  const char* host = string_of(o, "host");
  const char* host_id = string_of(o, "host_id");
  const char* task = string_of(o, "task_id");
  e.actor = {host ? host : "", host_id ? host_id : "", static_cast<std::int64_t>(number_of(o, "pid"))};
  e.task_id = task ? task : "";
  e.token = number_of(o, "token");
  e.revision = number_of(o, "revision");
  for (const cJSON* item = o->child; item != nullptr; item = item->next)
    if (item->string != nullptr && !is_common(item->string) && std::strcmp(item->string, "time") != 0 &&
        std::strcmp(item->string, "seq") != 0)
      e.detail.set(item->string, Json::copy(item));
  e.seq = message.seq;
  e.time = message.time;
  return e;
}

std::string Event::message_id() const {
  // One act is one kind of write at one revision of one thing's record.
  std::string id =
      bucket + "/" + std::string(to_string(thing)) + "/" + name + "/" + std::to_string(revision) + "/" + kind;
  // Two fixes of one record are two acts.
  if (const char* check = string_of(detail.get(), "check")) id += std::string("/") + check;
  return id;
}

Event slot_event(std::string kind, std::string_view bucket, std::string_view slot, const Actor& actor,
                 std::string_view task_id, std::uint64_t token, std::uint64_t revision) {
  Event e;
  e.kind = std::move(kind);
  e.thing = Thing::slot;
  e.bucket = bucket;
  e.name = slot;
  e.actor = actor;
  e.task_id = task_id;
  e.token = token;
  e.revision = revision;
  return e;
}

Event lease_event(std::string kind, std::string_view bucket, std::string_view lease, const Actor& actor,
                  std::uint64_t token, std::uint64_t revision) {
  Event e = slot_event(std::move(kind), bucket, lease, actor, {}, token, revision);
  e.thing = Thing::lease;
  return e;
}

Event task_event(std::string kind, std::string_view bucket, std::string_view key, const Actor& actor,
                 std::string_view task_id, std::uint64_t revision) {
  Event e = slot_event(std::move(kind), bucket, key, actor, task_id, 0, revision);
  e.thing = Thing::task;
  return e;
}

namespace {

// A commit id as people read it (git's short form); anything else as it is.
std::string shortened(std::string_view key, std::string_view value) {
  constexpr std::size_t kShortId = 12;
  const bool commit_id = value.size() == 40 && value.find_first_not_of("0123456789abcdef") == std::string_view::npos;
  const bool commit_key = key == "head" || key == "from" || key == "to";
  return commit_id && commit_key ? std::string(value.substr(0, kShortId)) : std::string(value);
}

}  // namespace

std::string detail_text(const Json& detail) {
  std::string out;
  for (const cJSON* item = detail.get() ? detail.get()->child : nullptr; item != nullptr; item = item->next) {
    if (cJSON_IsNull(item)) continue;
    if (!out.empty()) out += ' ';
    out += printable(item->string);
    out += '=';
    if (cJSON_IsString(item)) out += printable(shortened(item->string, item->valuestring));
    else out += printable(Json::copy(item).dump());
  }
  return out;
}

bool JournalQuery::matches(const Event& event) const {
  if (thing && (event.thing != *thing || (!name.empty() && event.name != name))) return false;
  if (!buckets.empty() && buckets.count(event.bucket) == 0) return false;
  if (!kinds.empty() && kinds.count(event.kind) == 0) return false;
  if (since && event.time && *event.time < *since) return false;
  if (!onto.empty()) {
    const cJSON* branch = event.detail ? cJSON_GetObjectItemCaseSensitive(event.detail.get(), "onto") : nullptr;
    if (!cJSON_IsString(branch) || onto != branch->valuestring) return false;
  }
  return true;
}

std::optional<Event> JournalFollow::next(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    auto message = reading_of("the journal", [&] { return reader_.next(left); });
    if (!message) return std::nullopt;
    auto event = Event::from_message(*message, root_);
    if (event && query_.matches(*event)) return event;
  }
}

Journal::Journal(const kv::Connection& connection, const WorkspaceNames& names)
    : stream_name_(names.events),
      root_(names.event_root),
      stream_(kv::Stream::bind(connection, names.events)),
      writer_(stream_.with_budget(std::min(connection.request_timeout(), kRecordBudget))),
      wait_(connection.request_timeout()) {}

std::vector<std::string> Journal::ensure(const kv::Connection& connection, const WorkspaceNames& names, int replicas,
                                         std::optional<std::chrono::milliseconds> max_age,
                                         std::optional<std::int64_t> max_bytes, std::int64_t default_bytes) {
  kv::StreamConfig defaults;
  defaults.name = names.events;
  defaults.subjects = {names.event_subjects()};
  defaults.max_age = kEventsMaxAge;
  defaults.max_bytes = default_bytes;
  defaults.replicas = replicas;
  try {
    return kv::Stream::ensure_log(connection, defaults, max_age, max_bytes);
  } catch (const kv::Error& e) {
    if (e.kind() != kv::Errc::no_room) throw from_kv(e);
    // The server keeps a stream's whole size in reserve: a store smaller than
    // that refuses it (exit 9), and --events-max-bytes is the way out.
    const std::int64_t smallest = max_bytes ? *max_bytes : kv::kSmallestStream;
    throw Error(Errc::filesystem,
                "the NATS server has no room for the journal (stream " + names.events + "): it needs " +
                    std::to_string(smallest >> 20) + " MiB of free store at least" +
                    (max_bytes ? "" : " (tried from " + std::to_string(default_bytes >> 20) + " MiB down)") +
                    "; free room where the server keeps its store, or give `swarm up --events-max-bytes SIZE` with "
                    "the room it has (at least 1MiB); nothing was made (" + e.what() + ")");
  }
}

Error Journal::missing() const {
  return Error(Errc::not_bootstrapped, "no journal: stream " + stream_name_ + " does not exist; `swarm up` makes it");
}

std::optional<kv::StreamStatus> Journal::state() const {
  return translating_kv([&] { return stream_.state(); });
}

bool Journal::record(const Event& event) const noexcept {
  try {
    std::string id = event.message_id();
    // An act that wrote or removed no record (a close of an expired slot, a
    // fix of a folder) has no revision to name it: this send makes it one.
    if (event.revision == 0) {
      static std::atomic<std::uint64_t> sent{0};
      id += "/" + event.actor.host_id + "/" + std::to_string(::getpid()) + "/" +
            std::to_string(std::chrono::system_clock::now().time_since_epoch().count()) + "/" +
            std::to_string(++sent);
    }
    writer_.publish(subject_of(event.thing, event.bucket, event.name), event.to_json().dump(), id);
    return true;
  } catch (const std::exception& e) {
    warn("the journal did not record the " + event.kind + " of " + std::string(to_string(event.thing)) + " " +
         event.name + " (the " + event.kind + " itself is done): " + printable(e.what()));
  } catch (...) {
    warn("the journal did not record the " + event.kind + " of " + event.name);
  }
  return false;
}

std::optional<Event> Journal::last(Thing thing, std::string_view bucket, std::string_view name) const {
  auto message = reading_of(stream_name_, [&] { return stream_.last(subject_of(thing, bucket, name)); });
  if (!message) return std::nullopt;
  return Event::from_message(*message, root_);
}

std::string Journal::filter_of(const JournalQuery& query) const {
  if (query.thing && !query.name.empty()) return subject_of(*query.thing, *query.buckets.begin(), query.name);
  if (query.buckets.size() == 1) {
    std::string f = root_ + *query.buckets.begin() + ".";
    return f + (query.thing ? std::string(to_string(*query.thing)) + ".>" : ">");
  }
  return root_ + ">";
}

std::uint64_t Journal::last_match(const std::string& filter, std::uint64_t head, std::uint64_t to) const {
  // A binary search by direct gets: `next` gives the first match at or after
  // a sequence. (A direct get of the last match of a pattern is no help:
  // 2.9.10 finds none when the stream's last messages were deleted.)
  std::uint64_t found = head, lo = head + 1, hi = to;
  while (lo <= hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    auto m = reading_of(stream_name_, [&] { return stream_.next(filter, mid); });
    if (m && m->seq <= to) {
      found = m->seq;
      lo = m->seq + 1;
    } else {
      hi = mid - 1;
    }
  }
  return found;
}

std::vector<Event> Journal::read_range(const std::string& filter, const JournalQuery& query, std::uint64_t from,
                                       std::uint64_t to) const {
  std::vector<Event> events;
  // Nothing of the filter in the range: no consumer at all. Else the read
  // starts at its first match and stops at a sequence known before it
  // starts, never at the server's pending count (2.9.10's promised messages
  // no read delivered, and `log -n 3` waited for them): before the first
  // match past `to`, or after the last match up to `to` when none lies past.
  auto head = reading_of(stream_name_, [&] { return stream_.next(filter, from); });
  if (!head || head->seq > to) return events;
  std::uint64_t stop_after = std::numeric_limits<std::uint64_t>::max();
  if (!reading_of(stream_name_, [&] { return stream_.next(filter, to + 1); })) stop_after = last_match(filter, head->seq, to);
  kv::ReadFrom start;
  start.seq = head->seq;
  auto reader = reading_of(stream_name_, [&] { return stream_.read(filter, start); });
  while (true) {
    auto message = reading_of(stream_name_, [&] { return reader.next(wait_); });
    if (!message)
      throw Error(Errc::unavailable, "reading the journal stalled after " + std::to_string(events.size()) + " events");
    if (message->seq > to) break;
    if (auto event = Event::from_message(*message, root_); event && query.matches(*event))
      events.push_back(std::move(*event));
    if (message->seq >= stop_after) break;
  }
  return events;
}

std::vector<Event> Journal::read(const JournalQuery& query) const {
  if (query.thing && !query.name.empty() && query.buckets.size() != 1)
    throw Error(Errc::bad_input, "a journal query of one thing names its bucket");
  const std::string filter = filter_of(query);
  std::uint64_t first = 1, end = 0;
  if (query.thing && !query.name.empty() && !query.since) {
    // One thing: its last message bounds the read, with no stream request.
    auto last_message = reading_of(stream_name_, [&] { return stream_.last(filter); });
    if (!last_message) return {};
    end = last_message->seq;
  } else {
    auto s = state();
    if (!s) throw missing();
    if (s->messages == 0) return {};
    first = s->first_seq;
    end = s->last_seq;
  }
  if (query.since) {
    first = seq_at(*query.since, first, end);
    if (first > end) return {};
  }
  if (query.last == 0) return read_range(filter, query, first, end);

  // The last N: windows reaching further back until N are found or the
  // start (of the stream, or of `since`) is reached.
  std::vector<Event> found;
  std::uint64_t window = std::max<std::uint64_t>(kSmallestWindow, query.last * kFirstWindowFactor);
  std::uint64_t to = end;
  while (true) {
    const std::uint64_t from = to + 1 > window ? std::max(first, to + 1 - window) : first;
    auto older = read_range(filter, query, from, to);
    found.insert(found.begin(), std::make_move_iterator(older.begin()), std::make_move_iterator(older.end()));
    if (found.size() >= query.last || from <= first) break;
    to = from - 1;
    window *= kWindowGrowth;
  }
  if (found.size() > query.last) found.erase(found.begin(), found.end() - static_cast<std::ptrdiff_t>(query.last));
  return found;
}

std::uint64_t Journal::seq_at(TimePoint time, std::uint64_t first, std::uint64_t end) const {
  // The stream's times grow with its sequence: a binary search by direct
  // gets (about 20 for a million events), no consumer.
  const std::string all = root_ + ">";
  std::uint64_t lo = first, hi = end + 1;  // the answer is in [lo, hi]
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    auto m = reading_of(stream_name_, [&] { return stream_.next(all, mid); });
    if (!m || m->seq > end) {
      hi = mid;
    } else if (m->time >= time) {
      hi = mid;
    } else {
      lo = m->seq + 1;
    }
  }
  return lo;
}

JournalFollow Journal::follow(const JournalQuery& query, std::optional<std::uint64_t> after_seq) const {
  kv::ReadFrom start;
  if (after_seq) {
    start.seq = *after_seq + 1;
  } else if (query.since) {
    auto s = state();
    start.seq = s ? seq_at(*query.since, s->first_seq, s->last_seq) : 1;
  } else {
    start.new_only = true;
  }
  JournalQuery q = query;
  q.last = 0;
  return JournalFollow(reading_of(stream_name_, [&] { return stream_.read(filter_of(query), start); }), std::move(q), root_);
}

std::vector<Event> Journal::last_each(Thing thing, std::string_view bucket) const {
  // The subjects under the prefix, then each one's last message: a direct
  // get per thing, whatever the history behind it.
  std::vector<Event> events;
  for (const auto& subject : reading_of(stream_name_, [&] {
         return stream_.subjects(root_ + std::string(bucket) + "." +
                                 std::string(to_string(thing)) + ".>");
       })) {
    auto message = reading_of(stream_name_, [&] { return stream_.last(subject); });
    if (!message) continue;  // dropped meanwhile (age or size)
    if (auto event = Event::from_message(*message, root_)) events.push_back(std::move(*event));
  }
  return events;
}

}  // namespace swarm
