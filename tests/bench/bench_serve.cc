// Benchmark case of `swarm serve`: /metrics and /api/status of a workspace
// with 10,000 sessions, against the same server's static page (the HTTP
// round trip alone); then /metrics again while 200 event streams and 50
// sockets that trickle a request's head are open.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>

#include "bench/bench_cases.h"
#include "kv/bucket.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace bench {

namespace {

// A socket to 127.0.0.1:`port` that has sent `text` (and keeps still).
int open_with(int port, const std::string& text) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail("cannot connect to swarm serve");
  (void)!::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
  return fd;
}

}  // namespace

// 22. GET /metrics and /api/status with 10,000 sessions (target: /metrics < 100 ms).
void serve_ten_thousand(Bench& b) {
  ShmDir shm;
  const auto root = shm.path / "ws";
  std::filesystem::create_directories(root);
  auto made = swarm::up({.root = root, .nats_url = b.server.url(), .bucket = "bench-serve", .connection = {}});
  auto bucket = kv::Bucket::open(b.nats, "bench-serve");
  const int sessions = 10000;
  for (int i = 0; i < sessions; ++i) {
    const std::string slot = "s" + std::to_string(i);
    bucket.create(slot, R"({"slot":")" + slot + R"(","task_id":"T-)" + std::to_string(i) + R"(","agent_id":"a","host":"host-)" +
                         std::to_string(i % 7) + R"(","host_id":"id","leaf_pid":1,"started_at":"2026-11-24T00:00:00.000Z",)"
                         R"("last_renewed":"2026-11-24T00:00:00.000Z"})");
  }
  testing::Process serve(testing::Command{{b.swarm_bin, "serve", "--listen", "127.0.0.1:0"},
                                          {{"SWARM_WORKSPACE", root.string()}, {"SWARM_HOST", "bench-host"}},
                                          {}});
  auto line = serve.read_line(std::chrono::seconds(30));
  const std::string prefix = "serving http://127.0.0.1:";
  if (!line || line->rfind(prefix, 0) != 0) fail("swarm serve printed no URL");
  const int port = std::stoi(line->substr(prefix.size()));
  std::string secret = testing::read_file(root / ".swarm/serve/token");  // never in the link (adr/0060)
  while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.back()))) secret.pop_back();
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(30, 0);
  client.set_bearer_token_auth(secret);
  // Until the watch has all of them.
  const auto ready_by = Clock::now() + std::chrono::seconds(60);
  for (;;) {
    auto r = client.Get("/metrics");
    if (r && r->status == 200 && r->body.find("swarm_sessions{state=\"fresh\",host=\"host-0\"} 1429") != std::string::npos)
      break;
    if (Clock::now() > ready_by) fail("swarm serve did not see the 10,000 sessions within 60 s");
  }
  const int n = b.quick ? 20 : 60;
  std::vector<double> metrics_ms, status_ms, page_ms;
  for (int i = 0; i < n; ++i) {
    auto t = Clock::now();
    if (auto r = client.Get("/metrics"); !r || r->status != 200) fail("GET /metrics failed");
    metrics_ms.push_back(ms_since(t));
    t = Clock::now();
    if (auto r = client.Get("/api/status"); !r || r->status != 200) fail("GET /api/status failed");
    status_ms.push_back(ms_since(t));
    t = Clock::now();
    if (auto r = client.Get("/"); !r || r->status != 200) fail("GET / failed");
    page_ms.push_back(ms_since(t));
  }
  // The same, with 200 event streams (64 kept, the rest refused) and 50
  // trickled heads held open.
  std::vector<int> held;
  for (int i = 0; i < 200; ++i)
    held.push_back(open_with(port, "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + secret +
                                       "\r\n\r\n"));
  for (int i = 0; i < 50; ++i) held.push_back(open_with(port, "GET /metrics HTTP/1.1\r\nHo"));
  std::vector<double> loaded_ms;
  for (int i = 0; i < n; ++i) {
    auto t = Clock::now();
    if (auto r = client.Get("/metrics"); !r || r->status != 200) fail("GET /metrics failed with streams open");
    loaded_ms.push_back(ms_since(t));
  }
  for (int fd : held) ::close(fd);
  serve.signal(SIGTERM);
  serve.wait();
  Row metrics{.name = "serve: GET /metrics, 10,000 sessions", .swarm = stats_of(metrics_ms), .baseline = stats_of(page_ms),
              .target = "< 100 ms"};
  finish(metrics, 1e9);
  metrics.met = metrics.swarm.p50 < 100;
  metrics.note = "baseline: GET / of the same server (the page, no work)";
  b.rows.push_back(metrics);
  Row status{.name = "serve: GET /api/status, 10,000 sessions", .swarm = stats_of(status_ms),
             .baseline = stats_of(page_ms), .target = "report"};
  finish(status, 1e9);
  status.note = "swarm.status.v1 of 10,000 sessions (about 3 MB)";
  b.rows.push_back(status);
  Row loaded{.name = "serve: GET /metrics, 200 streams + 50 slow heads open", .swarm = stats_of(loaded_ms),
             .baseline = stats_of(metrics_ms), .target = "< 100 ms"};
  finish(loaded, 1e9);
  loaded.met = loaded.swarm.p50 < 100;
  loaded.note = "baseline: the same GET with nothing else open";
  b.rows.push_back(loaded);
}

}  // namespace bench
