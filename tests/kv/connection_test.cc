// Connection: unreachable servers fail fast and as "unavailable", never hang.
#include "kv/connection.h"

#include <doctest/doctest.h>

#include <chrono>

#include "kv/bucket.h"
#include "kv/error.h"
#include "support/expect.h"
#include "support/nats_server.h"

using namespace std::chrono_literals;

namespace {

kv::Errc connect_error(const kv::ConnectionOptions& options) {
  return testing::kv_kind_of([&] { kv::Connection::connect(options); });
}

}  // namespace

TEST_CASE("Connection_RefusedPortIsUnavailableAtOnce") {
  // nothing listening: unavailable, well within the connect timeout.
  int port = testing::free_port();
  auto start = std::chrono::steady_clock::now();
  CHECK(connect_error({.urls = {"nats://127.0.0.1:" + std::to_string(port)}, .connect_timeout = 2s}) ==
        kv::Errc::unavailable);
  CHECK(std::chrono::steady_clock::now() - start < 2s);
}

TEST_CASE("Connection_SilentServerIsUnavailableWithinTimeout") {
  // a socket that accepts but never speaks NATS: unavailable once the timeout passes, no hang.
  testing::SilentListener silent;
  auto start = std::chrono::steady_clock::now();
  CHECK(connect_error({.urls = {silent.url()}, .connect_timeout = 1s}) == kv::Errc::unavailable);
  auto took = std::chrono::steady_clock::now() - start;
  CHECK(took >= 900ms);
  CHECK(took < 3s);
}

TEST_CASE("Connection_FallsThroughToALiveUrl") {
  // with several URLs, a dead first one does not stop the connection.
  testing::NatsServer server;
  std::string dead = "nats://127.0.0.1:" + std::to_string(testing::free_port());
  auto connection = kv::Connection::connect({.urls = {dead, server.url()}});
  CHECK(connection.connected_url().find(std::to_string(server.port())) != std::string::npos);
}

TEST_CASE("Connection_RequestsToAStoppedServerFail") {
  // once the server goes away, a bucket operation reports unavailable or timeout, within the timeout.
  testing::NatsServer server;
  auto connection = kv::Connection::connect({.urls = {server.url()}, .request_timeout = 1s});
  auto bucket = kv::Bucket::ensure(connection, {.name = "gone"});
  server.stop();
  auto start = std::chrono::steady_clock::now();
  try {
    bucket.get("k");
    FAIL("get on a stopped server succeeded");
  } catch (const kv::Error& e) {
    CHECK((e.kind() == kv::Errc::unavailable || e.kind() == kv::Errc::timeout));
  }
  CHECK(std::chrono::steady_clock::now() - start < 2s);
}

TEST_CASE("Connection_SplitUrls") {
  // comma-separated URL lists, with spaces and empty parts, split cleanly.
  CHECK(kv::split_urls("nats://a:1, nats://b:2,,") == std::vector<std::string>{"nats://a:1", "nats://b:2"});
  CHECK(kv::split_urls("").empty());
}
