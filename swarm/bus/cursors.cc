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

std::string record_of(const std::string& name, std::uint64_t seq, std::int64_t bus) {
  Json j = Json::object();
  j.add("schema", kCursorSchema).add("inbox", name).add("seq", static_cast<std::int64_t>(seq)).add("bus", bus);
  return j.dump();
}

}  // namespace

void Cursors::ensure(const kv::Connection& connection, const WorkspaceNames& names, int replicas) {
  translating_kv([&] { kv::Bucket::ensure(connection, {.name = names.cursors, .replicas = replicas}); });
}

Cursors::Cursors(const kv::Connection& connection, const WorkspaceNames& names)
    : keys_(kv::Bucket::bind(connection, names.cursors)), bucket_(names.sessions), cursor_bucket_(names.cursors) {}

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
  if (seq > status.last_seq) return {0, entry->revision, false, true, seq};
  return {seq, entry->revision, false};
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
    try {
      translating_kv([&] {
        if (now.revision == 0) keys_.create(key_of(name), record_of(name, seq, bus));
        else keys_.update(key_of(name), record_of(name, seq, bus), now.revision);
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

std::map<std::string, std::uint64_t> Cursors::all(std::int64_t bus) const {
  std::map<std::string, std::uint64_t> out;
  const std::string prefix = bucket_ + ".";
  translating_kv([&] {
    keys_.for_each([&](kv::Entry&& e) {
      if (e.key.rfind(prefix, 0) != 0) return;
      const auto [seq, of] = parse(e.value);
      out[e.key.substr(prefix.size())] = of == bus ? seq : 0;
    }, false, prefix + "*");
  });
  return out;
}

}  // namespace swarm
