// Connection: unreachable servers fail fast and as "unavailable", never hang.
#include "kv/connection.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>

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

namespace {

// Runs a shell command (openssl) and fails the test when it fails.
void sh(const std::string& command) {
  int rc = std::system((command + " >/dev/null 2>&1").c_str());
  REQUIRE_MESSAGE(rc == 0, command);
}

// A CA and a server certificate for 127.0.0.1 signed by it, plus a client
// certificate signed by the same CA, made with the openssl CLI.
struct Certificates {
  testing::TempDir dir{"swarm-tls"};
  std::string ca() const { return (dir / "ca.pem").string(); }
  std::string server_cert() const { return (dir / "server.pem").string(); }
  std::string server_key() const { return (dir / "server.key").string(); }
  std::string client_cert() const { return (dir / "client.pem").string(); }
  std::string client_key() const { return (dir / "client.key").string(); }

  Certificates() {
    auto d = dir.path().string();
    sh("cd " + d + " && openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=swarm-test-ca -keyout ca.key -out ca.pem");
    testing::write_file(dir / "san.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
    for (std::string who : {"server", "client"}) {
      sh("cd " + d + " && openssl req -newkey rsa:2048 -nodes -subj /CN=" + who + " -keyout " + who + ".key -out " +
         who + ".csr");
      sh("cd " + d + " && openssl x509 -req -in " + who + ".csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 " +
         "-extfile san.ext -out " + who + ".pem");
    }
  }
};

// A connection is usable when a bucket can be made and written through it.
void usable(const kv::ConnectionOptions& options) {
  auto connection = kv::Connection::connect(options);
  auto bucket = kv::Bucket::ensure(connection, {.name = "auth"});
  CHECK(bucket.create("k", "v") > 0);
}

}  // namespace

TEST_CASE("Connection_UserAndPassword") {
  // right credentials connect; a wrong password or none is bad_request at once, not a hang or "unavailable".
  testing::NatsServer server({.name = "userpass", .extra_args = {"--user", "alice", "--pass", "s3cret"}});
  usable({.urls = {server.url()}, .user = "alice", .password = "s3cret"});
  auto start = std::chrono::steady_clock::now();
  CHECK(connect_error({.urls = {server.url()}, .user = "alice", .password = "wrong"}) == kv::Errc::bad_request);
  CHECK(connect_error({.urls = {server.url()}}) == kv::Errc::bad_request);
  CHECK(std::chrono::steady_clock::now() - start < 3s);
}

TEST_CASE("Connection_Token") {
  // a token server accepts its token and refuses another.
  testing::NatsServer server({.name = "token", .extra_args = {"--auth", "t0ken"}});
  usable({.urls = {server.url()}, .token = "t0ken"});
  CHECK(connect_error({.urls = {server.url()}, .token = "other"}) == kv::Errc::bad_request);
}

TEST_CASE("Connection_TlsWithCaAndClientCertificate") {
  // TLS: the CA file verifies the server; a server that demands client certificates accepts ours.
  Certificates certs;
  testing::NatsServer tls({.name = "tls", .extra_args = {"--tls", "--tlscert", certs.server_cert(), "--tlskey",
                                                           certs.server_key()}});
  usable({.urls = {tls.url()}, .tls_ca = certs.ca()});
  // Without the CA the server's certificate cannot be verified.
  CHECK(connect_error({.urls = {tls.url()}, .tls_cert = certs.client_cert(), .tls_key = certs.client_key()}) ==
        kv::Errc::bad_request);

  testing::NatsServer mutual({.name = "mtls", .extra_args = {"--tlsverify", "--tlscert", certs.server_cert(),
                                                               "--tlskey", certs.server_key(), "--tlscacert",
                                                               certs.ca()}});
  usable({.urls = {mutual.url()}, .tls_ca = certs.ca(), .tls_cert = certs.client_cert(), .tls_key = certs.client_key()});
  // Without a client certificate that server hangs up during the handshake,
  // saying nothing: it looks unreachable, and the message names the likely cause.
  try {
    kv::Connection::connect({.urls = {mutual.url()}, .tls_ca = certs.ca()});
    FAIL("connected without a client certificate");
  } catch (const kv::Error& e) {
    CHECK(e.kind() == kv::Errc::unavailable);
    CHECK(std::string(e.what()).find("--tls-cert") != std::string::npos);
  }
  // A server that is simply not there gets no such hint.
  try {
    kv::Connection::connect({.urls = {"nats://127.0.0.1:" + std::to_string(testing::free_port())}, .tls_ca = certs.ca()});
    FAIL("connected to nothing");
  } catch (const kv::Error& e) {
    CHECK(e.kind() == kv::Errc::unavailable);
    CHECK(std::string(e.what()).find("--tls-cert") == std::string::npos);
  }
}

TEST_CASE("Connection_BadAuthOptionsAreBadRequests") {
  // a missing creds or CA file, or a certificate without its key, is refused before connecting.
  testing::NatsServer server;
  CHECK(connect_error({.urls = {server.url()}, .creds_file = "/nonexistent/user.creds"}) == kv::Errc::bad_request);
  CHECK(connect_error({.urls = {server.url()}, .tls_ca = "/nonexistent/ca.pem"}) == kv::Errc::bad_request);
  CHECK(connect_error({.urls = {server.url()}, .tls_cert = "/nonexistent/c.pem"}) == kv::Errc::bad_request);
}
