#include "swarm/bus/bus.h"

#include <algorithm>

#include "swarm/base/error.h"

namespace swarm {

namespace {

constexpr const char* kBusSubjects = "swarm.bus.>";

[[noreturn]] void no_bus() {
  throw Error(Errc::not_bootstrapped, std::string("the message bus (stream ") + kBusStream +
                                          ") does not exist on this NATS: run `swarm up` in the workspace");
}

// One of the two subjects an inbox read merges: its reader, the last
// sequence to read, and the message read but not yet taken.
struct Source {
  kv::StreamReader reader;
  std::uint64_t end = 0;
  std::optional<kv::StreamMessage> head;
  bool done = false;
};

}  // namespace

Bus::Bus(const kv::Connection& connection, std::string bucket)
    : connection_(connection), stream_(kv::Stream::bind(connection, kBusStream)), bucket_(std::move(bucket)) {}

std::vector<std::string> Bus::ensure(const kv::Connection& connection, int replicas,
                                     std::optional<std::chrono::milliseconds> max_age,
                                     std::optional<std::int64_t> max_bytes) {
  auto existing = translating_kv([&] { return kv::Stream::bind(connection, kBusStream).state(); });
  kv::StreamConfig want;
  want.name = kBusStream;
  want.subjects = {kBusSubjects};
  want.max_age = max_age.value_or(existing ? existing->config.max_age : kBusMaxAge);
  want.max_bytes = max_bytes.value_or(existing ? existing->config.max_bytes : kBusMaxBytes);
  want.replicas = replicas;
  want.shrink_to_fit = !max_bytes.has_value();
  std::vector<std::string> changed;
  try {
    kv::Stream::ensure(connection, want, true, &changed);
  } catch (const kv::Error& e) {
    if (e.kind() != kv::Errc::no_room) throw from_kv(e);
    throw Error(Errc::filesystem, std::string("the NATS server has no room for the message bus (stream ") +
                                      kBusStream + "); free room where it keeps its store, or give `swarm up "
                                      "--bus-max-bytes SIZE` with the room it has (at least 1MiB) (" + e.what() + ")");
  }
  std::erase_if(changed, [](const std::string& d) {
    return d.rfind("replicas", 0) != 0 && d.find("no room") == std::string::npos;
  });
  return changed;
}

Bus::Sent Bus::send(const Message& message) const {
  const std::string subject = message.to == kToAll ? all_subject(bucket_) : inbox_subject(bucket_, message.to);
  auto published = translating_kv([&] { return stream_.publish(subject, message.to_json(), message.id); });
  return {published.seq, published.duplicate};
}

void Bus::send_unanswered(const Message& message) const {
  const std::string subject = message.to == kToAll ? all_subject(bucket_) : inbox_subject(bucket_, message.to);
  translating_kv([&] { stream_.publish_unanswered(subject, message.to_json(), message.id); });
}

std::optional<kv::StreamStatus> Bus::state() const {
  return translating_kv([&] { return stream_.state(); });
}

InboxRead Bus::read(const std::string& name, std::uint64_t after, std::size_t limit,
                    const std::function<bool(const Message&)>& match) const {
  return translating_kv([&] {
    auto st = stream_.state();
    if (!st) no_bus();
    InboxRead out;
    out.last_seq = after;
    out.first_kept = st->first_seq;
    if (st->first_seq > after + 1) out.dropped = st->first_seq - 1 - after;
    const std::uint64_t end = st->last_seq;  // what is read: no later message jumps ahead
    if (end <= after) return out;
    const auto wait = connection_.request_timeout();
    std::vector<Source> sources;
    for (const std::string& subject : {inbox_subject(bucket_, name), all_subject(bucket_)}) {
      auto last = stream_.last(subject);
      if (!last || last->seq <= after) continue;
      Source s{stream_.read(subject, kv::ReadFrom{.seq = after + 1}), std::min(last->seq, end), std::nullopt, false};
      sources.push_back(std::move(s));
    }
    auto advance = [&](Source& s) {
      s.head.reset();
      if (s.done) return;
      auto m = s.reader.next(wait);
      if (!m)
        throw Error(Errc::unavailable, "the read of inbox " + name + " stopped: the bus sent nothing for " +
                                           std::to_string(wait.count()) + " ms; try again");
      if (m->seq > end) {
        s.done = true;
        return;
      }
      if (m->seq >= s.end) s.done = true;  // this one is its last
      s.head = std::move(m);
    };
    for (auto& s : sources) advance(s);
    std::size_t matched = 0;
    for (;;) {
      Source* next = nullptr;
      for (auto& s : sources)
        if (s.head && (next == nullptr || s.head->seq < next->head->seq)) next = &s;
      if (next == nullptr) break;
      if (limit > 0 && matched == limit) {
        out.more = true;
        break;
      }
      Delivered d = delivered_of(*next->head, bucket_);
      const bool shown = d.corrupt() || !match || match(*d.message);
      matched += shown ? 1 : 0;
      out.last_seq = d.seq;
      out.messages.push_back(std::move(d));
      out.shown.push_back(shown);
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
    auto reader = stream_.read(kBusSubjects, kv::ReadFrom{.seq = st->first_seq});
    const auto wait = connection_.request_timeout();
    for (;;) {
      auto m = reader.next(wait);
      if (!m) throw Error(Errc::unavailable, std::string("the read of the bus stopped before its end; try again"));
      // The workspace's bucket is the subject's third token: each message is judged against its own.
      const std::string_view rest = std::string_view(m->subject).substr(std::string_view("swarm.bus.").size());
      visit(delivered_of(*m, rest.substr(0, rest.find('.'))));
      if (m->seq >= st->last_seq) break;
    }
    reader.stop();
  });
}

std::uint64_t Bus::unread(const std::string& name, std::uint64_t after) const {
  return translating_kv([&] {
    std::uint64_t n = 0;
    for (const std::string& subject : {inbox_subject(bucket_, name), all_subject(bucket_)}) {
      auto last = stream_.last(subject);
      if (!last || last->seq <= after) continue;
      n += stream_.count_from(subject, after + 1);
    }
    return n;
  });
}

std::vector<std::string> Bus::inboxes() const {
  const std::string prefix = "swarm.bus." + bucket_ + ".to.";
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
  return translating_kv([&] { return kv::Doorbell(connection_, {inbox_subject(bucket_, name), all_subject(bucket_)}); });
}

kv::Doorbell Bus::doorbell_all() const {
  return translating_kv([&] { return kv::Doorbell(connection_, {"swarm.bus." + bucket_ + ".>"}); });
}

kv::StreamReader Bus::listen(const std::string& name) const {
  return translating_kv([&] { return stream_.read(inbox_subject(bucket_, name), kv::ReadFrom{.new_only = true}); });
}

}  // namespace swarm
