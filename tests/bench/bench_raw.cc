// nats.c used directly: the floor every swarm measurement is compared with
// (bench_raw.h).
#include "bench/bench_raw.h"

#include <chrono>
#include <cstdlib>

#include "bench/bench_support.h"
#include "swarm/slots/session.h"

namespace bench {

void check(natsStatus s, const char* what) {
  if (s != NATS_OK) fail(std::string(what) + ": " + natsStatus_GetText(s) + " " + nats_GetLastError(nullptr));
}

Raw::Raw(const std::string& url) {
  check(natsConnection_ConnectTo(&nc, url.c_str()), "raw connect");
  check(natsConnection_JetStream(&js, nc, nullptr), "raw jetstream");
}

Raw::~Raw() {
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
}

kvStore* Raw::bucket(const char* name) {
  kvStore* kv = nullptr;
  check(js_KeyValue(&kv, js, name), "raw bind");
  return kv;
}

RawPair::RawPair(natsConnection* c) : nc(c) {
  char* raw_inbox = nullptr;
  check(natsInbox_Create(&raw_inbox), "raw inbox");
  inbox = raw_inbox;
  natsInbox_Destroy(raw_inbox);
  check(natsConnection_SubscribeSync(&replies, nc, (inbox + ".*").c_str()), "raw subscribe");
}

RawPair::~RawPair() { natsSubscription_Destroy(replies); }

void RawPair::update(const std::string (&subjects)[2], const std::string& value, uint64_t (&revisions)[2]) {
  for (int i = 0; i < 2; ++i) {
    natsMsg* m = nullptr;
    check(natsMsg_Create(&m, subjects[i].c_str(), (inbox + "." + std::to_string(i)).c_str(), value.data(),
                         static_cast<int>(value.size())),
          "raw msg");
    check(natsMsgHeader_Set(m, "Nats-Expected-Last-Subject-Sequence", std::to_string(revisions[i]).c_str()),
          "raw header");
    check(natsConnection_PublishMsg(nc, m), "raw publish");
    natsMsg_Destroy(m);
  }
  check(natsConnection_Flush(nc), "raw flush");
  for (int got = 0; got < 2; ++got) {
    natsMsg* reply = nullptr;
    check(natsSubscription_NextMsg(&reply, replies, 5000), "raw answer");
    std::string subject = natsMsg_GetSubject(reply);
    std::string data(natsMsg_GetData(reply), static_cast<std::size_t>(natsMsg_GetDataLength(reply)));
    natsMsg_Destroy(reply);
    auto at = data.find("\"seq\":");
    if (at == std::string::npos) fail("raw pair refused: " + data);
    revisions[subject.back() - '0'] = std::strtoull(data.c_str() + at + 6, nullptr, 10);
  }
}

int raw_watch_all(kvStore* kv) {
  kvWatcher* w = nullptr;
  kvWatchOptions options;
  kvWatchOptions_Init(&options);
  options.IgnoreDeletes = true;
  check(kvStore_WatchAll(&w, kv, &options), "raw watch");
  int n = 0;
  while (true) {
    kvEntry* e = nullptr;
    check(kvWatcher_Next(&e, w, 10000), "raw next");
    if (e == nullptr) break;
    ++n;
    kvEntry_Destroy(e);
  }
  kvWatcher_Destroy(w);
  return n;
}

std::string session_json(const std::string& slot, int i) {
  swarm::Session s;
  s.slot = slot;
  s.task_id = "T-" + std::to_string(i);
  s.agent_id = "slot-" + slot;
  s.host = "bench-host";
  s.host_id = "0123456789abcdef0123456789abcdef";
  s.leaf_pid = 40000 + i % 1000;
  s.hub_url = "file:///tmp/bench/.swarm/hub.git";
  s.started_at = std::chrono::system_clock::now();
  s.last_renewed = s.started_at;
  // Each kept by `swarm run` on its host, saying what its agent does.
  s.leaf_start = 1000000 + static_cast<std::uint64_t>(i);
  s.agent_pid = 50000 + i % 1000;
  s.agent_start = 1000001 + static_cast<std::uint64_t>(i);
  static const char* const kSaid[] = {"working", "blocked", "idle", "waiting"};
  s.status = kSaid[i % 4];
  s.note = "step " + std::to_string(i % 17) + " of the render fix: waiting on the API review";
  return swarm::to_json(s);
}

void fill(Raw& raw, const std::string& bucket, int n) {
  jsPubOptions options;
  jsPubOptions_Init(&options);
  for (int i = 0; i < n; ++i) {
    std::string slot = "s" + std::to_string(i);
    std::string subject = "$KV." + bucket + "." + slot;
    std::string value = session_json(slot, i);
    check(js_PublishAsync(raw.js, subject.c_str(), value.data(), static_cast<int>(value.size()), &options),
          "fill publish");
  }
  jsPubOptions complete;
  jsPubOptions_Init(&complete);
  complete.MaxWait = 60000;
  check(js_PublishAsyncComplete(raw.js, &complete), "fill complete");
}

}  // namespace bench
