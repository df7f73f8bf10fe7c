#include "swarm/bus/cursors.h"

#include <cJSON.h>

#include "swarm/base/error.h"
#include "swarm/base/json.h"
#include "swarm/bus/bus.h"

namespace swarm {

namespace {

// Acks racing on one inbox: each lost race rereads; this many is no race
// but a fault.
constexpr int kAckAttempts = 16;

// Exact in the doubles JSON numbers are read as.
constexpr double kMaxExact = 9007199254740992.0;

std::string record_of(const std::string& name, std::uint64_t seq, std::int64_t bus, std::int64_t at_ms) {
  Json j = Json::object();
  j.add("schema", kCursorSchema).add("inbox", name).add("seq", static_cast<std::int64_t>(seq)).add("bus", bus);
  if (at_ms >= 0) j.add("at", at_ms);
  return j.dump();
}

std::int64_t ms_of(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

}  // namespace

void Cursors::ensure(const kv::Connection& connection, const WorkspaceNames& names, int replicas) {
  translating_kv([&] { kv::Bucket::ensure(connection, {.name = names.cursors, .replicas = replicas}); });
}

Cursors::Cursors(const kv::Connection& connection, const WorkspaceNames& names)
    : keys_(kv::Bucket::bind(connection, names.cursors)),
      bus_(kv::Stream::bind(connection, names.bus)),
      bus_subjects_(names.bus_subjects()),
      bucket_(names.sessions),
      cursor_bucket_(names.cursors) {}

// The sequence a record holds and its bus; 0 for a record it cannot read
// (an ack writes over it: a cursor only ever says where reading resumes).
std::pair<std::uint64_t, std::int64_t> Cursors::parse(const std::string& value) {
  Json j = Json::parse(value);
  const cJSON* seq = j ? cJSON_GetObjectItemCaseSensitive(j.get(), "seq") : nullptr;
  const cJSON* bus = j ? cJSON_GetObjectItemCaseSensitive(j.get(), "bus") : nullptr;
  auto whole = [](const cJSON* n) { return cJSON_IsNumber(n) && n->valuedouble >= 0 && n->valuedouble <= kMaxExact; };
  return {whole(seq) ? static_cast<std::uint64_t>(seq->valuedouble) : 0,
          whole(bus) ? static_cast<std::int64_t>(bus->valuedouble) : -1};
}

std::int64_t Cursors::at_of(const std::string& value) {
  Json j = Json::parse(value);
  const cJSON* at = j ? cJSON_GetObjectItemCaseSensitive(j.get(), "at") : nullptr;
  return cJSON_IsNumber(at) && at->valuedouble >= 0 && at->valuedouble <= kMaxExact
             ? static_cast<std::int64_t>(at->valuedouble)
             : -1;
}

bool Cursors::age_may_have_dropped(std::int64_t at_ms, const kv::StreamStatus& bus) {
  if (at_ms < 0) return true;
  if (bus.config.max_age.count() <= 0) return false;  // kept until acked: nothing ages out
  return at_ms < ms_of(std::chrono::system_clock::now()) - bus.config.max_age.count();
}

Cursors::Cursor Cursors::get(const std::string& name, const kv::StreamStatus& status) const {
  const std::int64_t bus = generation_of(status);
  auto entry = translating_kv([&] {
    try {
      return keys_.get(key_of(name));
    } catch (const kv::Error& e) {
      if (e.kind() != kv::Errc::not_found) throw;
      throw Error(Errc::not_bootstrapped, "the inbox cursors (bucket " + cursor_bucket_ +
                                              ") do not exist on this NATS: run `swarm up` in the workspace");
    }
  });
  if (!entry) return {};
  const auto [seq, of] = parse(entry->value);
  if (of != bus) return {0, entry->revision, true};
  if (seq > status.last_seq) {
    // The caller's view of the bus may be older than another reader's ack:
    // only past the bus's last message as it is now is a cursor beyond it.
    std::optional<kv::StreamStatus> now;
    try {
      now = translating_kv([&] { return bus_.state(); });
    } catch (const Error&) {
    }
    if (!now || generation_of(*now) != bus || seq > now->last_seq) return {0, entry->revision, false, true, seq};
  }
  return {seq, entry->revision, false, false, 0, at_of(entry->value)};
}

Cursors::Acked Cursors::ack(const std::string& name, std::uint64_t seq, const kv::StreamStatus& status) const {
  if (seq > status.last_seq)
    throw Error(Errc::bad_input, "no message " + std::to_string(seq) + " on the bus yet (its last is " +
                                     std::to_string(status.last_seq) + "): an ack past it would skip what comes");
  const std::int64_t bus = generation_of(status);
  for (int attempt = 1;; ++attempt) {
    const Cursor now = get(name, status);
    Acked acked{now.seq, std::max(now.seq, seq), false};
    if (now.seq >= seq) return acked;  // never backwards
    // When message `seq` was stored: what tells a gap from an ack of
    // another inbox later (age_may_have_dropped). Gone already, the
    // cursor's earlier time still bounds every later message.
    std::int64_t at = now.at_ms;
    try {
      if (auto m = translating_kv([&] { return bus_.next(bus_subjects_, seq); }); m && m->seq == seq)
        at = ms_of(m->time);
    } catch (const Error&) {
    }
    try {
      translating_kv([&] {
        if (now.revision == 0) keys_.create(key_of(name), record_of(name, seq, bus, at));
        else keys_.update(key_of(name), record_of(name, seq, bus, at), now.revision);
      });
      acked.moved = true;
      return acked;
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict || attempt >= kAckAttempts) throw;
    }
  }
}

void Cursors::forget(const std::string& name, std::uint64_t revision) const {
  translating_kv([&] { keys_.erase(key_of(name), revision); });
}

std::map<std::string, Cursors::Cursor> Cursors::all(std::int64_t bus) const {
  std::map<std::string, Cursor> out;
  const std::string prefix = bucket_ + ".";
  translating_kv([&] {
    keys_.for_each([&](kv::Entry&& e) {
      if (e.key.rfind(prefix, 0) != 0) return;
      const auto [seq, of] = parse(e.value);
      Cursor c;
      c.seq = of == bus ? seq : 0;
      c.revision = e.revision;
      c.of_old_bus = of != bus;
      c.at_ms = at_of(e.value);
      out[e.key.substr(prefix.size())] = c;
    }, false, prefix + "*");
  });
  return out;
}

}  // namespace swarm
