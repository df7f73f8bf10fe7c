// The baselines the benchmark holds swarm against: nats.c used directly, with
// no library in between (a connection, a KV bind, a pipelined pair of CAS
// writes, a watch of a whole bucket), and the session records it fills with.
#pragma once

#include <nats/nats.h>

#include <cstdint>
#include <string>

namespace bench {

// Ends the benchmark (fail) when a nats.c call did not return NATS_OK.
void check(natsStatus s, const char* what);

// Raw nats.c handles for the baselines.
struct Raw {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  explicit Raw(const std::string& url);
  ~Raw();
  Raw(const Raw&) = delete;
  Raw& operator=(const Raw&) = delete;
  kvStore* bucket(const char* name);
};

// Two CAS updates the raw way, sent together and both answers awaited: the
// floor of any pipelined pair (the server still stores two messages).
struct RawPair {
  natsConnection* nc;
  natsSubscription* replies = nullptr;
  std::string inbox;
  explicit RawPair(natsConnection* c);
  ~RawPair();
  RawPair(const RawPair&) = delete;
  RawPair& operator=(const RawPair&) = delete;
  // Updates both subjects at their revisions; returns the new revisions.
  void update(const std::string (&subjects)[2], const std::string& value, uint64_t (&revisions)[2]);
};

// Reads every entry of the bucket with one watch; returns how many.
int raw_watch_all(kvStore* kv);

// A session record as swarm writes it, for slot `slot`, the i-th of a fill.
std::string session_json(const std::string& slot, int i);

// Fills `bucket` with n session records, published asynchronously.
void fill(Raw& raw, const std::string& bucket, int n);

}  // namespace bench
