#include "swarm/bus/cursors.h"

#include <cJSON.h>

#include "swarm/base/error.h"
#include "swarm/base/json.h"

namespace swarm {

namespace {

// Acks racing on one inbox: each lost race rereads; this many is no race
// but a fault.
constexpr int kAckAttempts = 16;

std::string record_of(const std::string& name, std::uint64_t seq) {
  Json j = Json::object();
  j.add("schema", kCursorSchema).add("inbox", name).add("seq", static_cast<std::int64_t>(seq));
  return j.dump();
}

// The sequence a record holds; 0 for a record it cannot read (an ack
// writes over it: a cursor only ever says where reading resumes).
std::uint64_t seq_of(const std::string& value) {
  Json j = Json::parse(value);
  const cJSON* seq = j ? cJSON_GetObjectItemCaseSensitive(j.get(), "seq") : nullptr;
  return cJSON_IsNumber(seq) && seq->valuedouble >= 0 ? static_cast<std::uint64_t>(seq->valuedouble) : 0;
}

}  // namespace

void Cursors::ensure(const kv::Connection& connection, int replicas) {
  translating_kv([&] { kv::Bucket::ensure(connection, {.name = kCursorBucket, .replicas = replicas}); });
}

Cursors::Cursors(const kv::Connection& connection, std::string bucket)
    : keys_(kv::Bucket::bind(connection, kCursorBucket)), bucket_(std::move(bucket)) {}

Cursors::Cursor Cursors::get(const std::string& name) const {
  auto entry = translating_kv([&] {
    try {
      return keys_.get(key_of(name));
    } catch (const kv::Error& e) {
      if (e.kind() != kv::Errc::not_found) throw;
      throw Error(Errc::not_bootstrapped, std::string("the inbox cursors (bucket ") + kCursorBucket +
                                              ") do not exist on this NATS: run `swarm up` in the workspace");
    }
  });
  if (!entry) return {};
  return {seq_of(entry->value), entry->revision};
}

Cursors::Acked Cursors::ack(const std::string& name, std::uint64_t seq) const {
  for (int attempt = 1;; ++attempt) {
    const Cursor now = get(name);
    Acked acked{now.seq, std::max(now.seq, seq), false};
    if (now.seq >= seq) return acked;  // never backwards
    try {
      translating_kv([&] {
        if (now.revision == 0) keys_.create(key_of(name), record_of(name, seq));
        else keys_.update(key_of(name), record_of(name, seq), now.revision);
      });
      acked.moved = true;
      return acked;
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict || attempt >= kAckAttempts) throw;
    }
  }
}

std::map<std::string, std::uint64_t> Cursors::all() const {
  std::map<std::string, std::uint64_t> out;
  const std::string prefix = bucket_ + ".";
  translating_kv([&] {
    keys_.for_each([&](kv::Entry&& e) {
      if (e.key.rfind(prefix, 0) == 0) out[e.key.substr(prefix.size())] = seq_of(e.value);
    }, false, prefix + "*");
  });
  return out;
}

}  // namespace swarm
