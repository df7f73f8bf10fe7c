#include "swarm/bus/bus.h"

#include <algorithm>

#include "swarm/base/error.h"
#include "swarm/base/log.h"

namespace swarm {

namespace {


// One of the two subjects an inbox read merges: its reader, and the
// message read but not yet taken.
struct Source {
  kv::StreamReader reader;
  std::optional<kv::StreamMessage> head;
  bool done = false;
  std::string subject;
  std::uint64_t from = 0;  // the next sequence it may deliver
};

}  // namespace

std::int64_t generation_of(const kv::StreamStatus& bus) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(bus.created.time_since_epoch()).count();
}

Bus::Bus(const kv::Connection& connection, const WorkspaceNames& names)
    : connection_(connection),
      stream_(kv::Stream::bind(connection, names.bus)),
      root_(names.bus_root),
      bucket_(names.sessions) {}

std::vector<std::string> Bus::ensure(const kv::Connection& connection, const WorkspaceNames& names, int replicas,
                                     std::optional<std::chrono::milliseconds> max_age,
                                     std::optional<std::int64_t> max_bytes, std::int64_t default_bytes) {
  kv::StreamConfig defaults;
  defaults.name = names.bus;
  defaults.subjects = {names.bus_subjects()};
  defaults.max_age = kBusMaxAge;
  defaults.max_bytes = default_bytes;
  defaults.replicas = replicas;
  // Full, it refuses a new message rather than dropping unread ones
  // (adr/0051); a message bigger than swarm sends is refused at once.
  defaults.discard_new = true;
  defaults.max_msg_size = kBusMaxMessageBytes;
  try {
    return kv::Stream::ensure_log(connection, defaults, max_age, max_bytes);
  } catch (const kv::Error& e) {
    if (e.kind() != kv::Errc::no_room) throw from_kv(e);
    throw Error(Errc::filesystem, "the NATS server has no room for the message bus (stream " + names.bus +
                                      "); free room where it keeps its store, or give `swarm up "
                                      "--bus-max-bytes SIZE` with the room it has (at least 1MiB) (" + e.what() + ")");
  }
}

Bus::Sent Bus::send(const Message& message) const {
  const std::string subject = message.to == kToAll ? all_subject_of() : inbox_subject_of(message.to);
  try {
    auto published = stream_.publish(subject, message.to_json(), dedup_id(bucket_, message));
    return {published.seq, published.duplicate};
  } catch (const kv::Error& e) {
    if (!kv::at_own_limit(e)) throw from_kv(e);
    // At its limit the bus takes nothing new: no unread message is dropped to make room.
    throw Error(Errc::filesystem, "the message bus (stream " + stream_.name() + ") is full, so nothing was sent: "
                                  "it keeps every message until it ages out (`swarm up --bus-max-age`), and what its "
                                  "inboxes acked is removed as they ack; read and ack them (`swarm inbox --ack`), or "
                                  "raise `swarm up --bus-max-bytes` (" + std::string(e.what()) + ")");
  }
}

void Bus::forget_read(const std::string& name, std::uint64_t acked) const {
  // Messages to one inbox are read by it alone: once acked, nobody needs
  // them. Those to all stay until they age out.
  try {
    translating_kv([&] { stream_.purge_below(inbox_subject_of(name), acked + 1); });
  } catch (const Error& e) {
    log::debug("the bus kept {}'s acked messages: {}", name, e.what());
  }
}

void Bus::send_unanswered(const Message& message) const {
  const std::string subject = message.to == kToAll ? all_subject_of() : inbox_subject_of(message.to);
  translating_kv([&] { stream_.publish_unanswered(subject, message.to_json(), dedup_id(bucket_, message)); });
}

std::optional<kv::StreamStatus> Bus::state() const {
  return translating_kv([&] { return stream_.state(); });
}

InboxRead Bus::read(const std::string& name, std::uint64_t after, std::size_t limit,
                    const std::function<bool(const Message&)>& match,
                    const std::function<void(const Delivered&, bool shown)>& visit,
                    const kv::StreamStatus& bus) const {
  return translating_kv([&] {
    InboxRead out;
    out.last_seq = after;
    out.first_kept = bus.first_seq;
    if (bus.first_seq > after + 1) out.dropped = bus.first_seq - 1 - after;
    out.end = bus.last_seq;
    const std::uint64_t end = bus.last_seq;  // what is read: no later message jumps ahead
    if (end <= after) return out;
    const auto wait = connection_.request_timeout();
    std::vector<Source> sources;
    for (const std::string& subject : {inbox_subject_of(name), all_subject_of()}) {
      // The server's own count (from the stream's leader), never a replica's
      // idea of the subject's last message: a subject with none after the
      // cursor is not read at all (a read of nothing would never end).
      if (stream_.count_from(subject, after + 1) == 0) continue;
      sources.push_back(Source{stream_.read(subject, kv::ReadFrom{.seq = after + 1}), std::nullopt, false, subject, after + 1});
    }
    auto advance = [&](Source& s) {
      s.head.reset();
      if (s.done) return;
      auto m = s.reader.next(wait);
      // Another reader of this inbox may have acked (and so removed) what
      // was left since it was counted: nothing more there is the end.
      if (!m && stream_.count_from(s.subject, s.from) == 0) {
        s.done = true;
        return;
      }
      if (!m)
        throw Error(Errc::unavailable, "the read of inbox " + name + " stopped: the bus sent nothing for " +
                                           std::to_string(wait.count()) + " ms; try again");
      if (m->seq > end) {
        s.done = true;
        return;
      }
      if (s.reader.caught_up()) s.done = true;  // nothing after this one (yet)
      s.from = m->seq + 1;
      s.head = std::move(m);
    };
    for (auto& s : sources) advance(s);
    std::size_t shown_count = 0;
    for (;;) {
      Source* next = nullptr;
      for (auto& s : sources)
        if (s.head && (next == nullptr || s.head->seq < next->head->seq)) next = &s;
      if (next == nullptr) break;
      if (limit > 0 && shown_count == limit) {
        out.more = true;
        break;
      }
      const Delivered d = delivered_of(*next->head, root_, bucket_);
      const bool shown = d.corrupt() || !match || match(*d.message);
      shown_count += shown ? 1 : 0;
      out.all_shown = out.all_shown && shown;
      out.last_seq = d.seq;
      visit(d, shown);
      advance(*next);
    }
    for (auto& s : sources) s.reader.stop();
    return out;
  });
}

void Bus::for_each_message(const std::function<void(const Delivered&)>& visit) const {
  translating_kv([&] {
    auto st = stream_.state();
    if (!st || st->messages == 0) return;
    auto reader = stream_.read(root_ + ">", kv::ReadFrom{.seq = st->first_seq});
    const auto wait = connection_.request_timeout();
    for (;;) {
      auto m = reader.next(wait);
      if (!m) throw Error(Errc::unavailable, std::string("the read of the bus stopped before its end; try again"));
      // The session bucket is the token after the root: each message is judged against its own.
      const std::string_view rest = std::string_view(m->subject).substr(root_.size());
      visit(delivered_of(*m, root_, rest.substr(0, rest.find('.'))));
      if (m->seq >= st->last_seq) break;
    }
    reader.stop();
  });
}

std::vector<std::string> Bus::inboxes() const {
  const std::string prefix = root_ + bucket_ + ".to.";
  auto subjects = translating_kv([&] {
    try {
      return stream_.subjects(prefix + "*");
    } catch (const kv::Error& e) {
      if (e.kind() == kv::Errc::not_found) return std::vector<std::string>{};
      throw;
    }
  });
  std::vector<std::string> names;
  for (const auto& s : subjects)
    if (s.rfind(prefix, 0) == 0) names.push_back(s.substr(prefix.size()));
  return names;
}

kv::Doorbell Bus::doorbell(const std::string& name) const {
  return translating_kv([&] { return kv::Doorbell(connection_, {inbox_subject_of(name), all_subject_of()}); });
}

kv::Doorbell Bus::doorbell_all() const {
  return translating_kv([&] { return kv::Doorbell(connection_, {root_ + bucket_ + ".>"}); });
}

kv::StreamReader Bus::listen(const std::string& name) const {
  return translating_kv([&] { return stream_.read(inbox_subject_of(name), kv::ReadFrom{.new_only = true}); });
}

}  // namespace swarm
