// A plain nats.c connection and JetStream context, for tests that plant what
// swarm never writes itself (a hostile event, a key with shell syntax in it)
// the way any other client of the server could.
#pragma once

#include <doctest/doctest.h>
#include <nats/nats.h>

#include <string>

namespace testing {

struct RawNats {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  explicit RawNats(const std::string& url) {
    REQUIRE(natsConnection_ConnectTo(&nc, url.c_str()) == NATS_OK);
    REQUIRE(natsConnection_JetStream(&js, nc, nullptr) == NATS_OK);
  }
  ~RawNats() {
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
  }
  RawNats(const RawNats&) = delete;
  RawNats& operator=(const RawNats&) = delete;

  // Stores `data` on `subject` through JetStream (a KV key is the subject
  // $KV.<bucket>.<key>, whatever the key holds); whether it was stored.
  bool publish(const std::string& subject, const std::string& data) {
    return js_Publish(nullptr, js, subject.c_str(), data.data(), static_cast<int>(data.size()), nullptr, nullptr) ==
           NATS_OK;
  }
};

}  // namespace testing
