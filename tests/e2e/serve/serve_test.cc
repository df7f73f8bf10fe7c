// swarm serve, from outside, left running as an operator leaves it: only the
// workspace's users read it (the secret, the Host), nothing a client does
// stalls it, it follows NATS going and coming back, every /metrics page is
// valid whatever the journal holds, it writes nothing, and a real
// Prometheus scrapes it with the bearer file through a NATS restart.
#include <doctest/doctest.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <ifaddrs.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "e2e/serve_fixture.h"
#include "e2e/swarm_fixture.h"
#include "support/eventually.h"
#include "support/json_fields.h"
#include "support/nats_server.h"
#include "support/raw_nats.h"

using namespace testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// A socket connected to 127.0.0.1:`port` (-1 when it could not).
int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Every file under `dir` with its size and mode, links as their target.
std::map<std::string, std::string> listing(const fs::path& dir) {
  std::map<std::string, std::string> out;
  if (!fs::exists(dir)) return out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    const auto rel = fs::relative(it->path(), dir).string();
    struct stat st {};
    ::lstat(it->path().c_str(), &st);
    out[rel] = std::to_string(st.st_mode) + ":" + (it->is_regular_file() ? read_file(it->path()) : std::string());
  }
  return out;
}

std::string seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count()) + " ms";
}

}  // namespace

TEST_CASE("Serve_MetricsAndApiFollowTheWorkspaceLive") {
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "render", "--task", "T-1"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "api", "--task", "T-2"}, kHostB).exit == 0);
  Process holder(ws.command({"lock", "merge", "--ttl", "5s", "--", "sleep", "30"}));
  REQUIRE(eventually([&] { return ws.swarm({"lease", "show", "merge"}).out.find("held") != std::string::npos; }));
  Process waiter(ws.command({"lock", "merge", "--", "true"}, kHostB));

  Served served(ws);
  // Everything sampled below arrives by the feeds, each in its own time:
  // waited for together, bounded, before any is checked.
  CHECK(eventually_body(served, "/metrics", [](const std::string& m) {
    return sample(m, "swarm_lease_waiters{lease=\"merge\"}") == 1 && sample(m, "swarm_nats_up") == 1 &&
           sample(m, "swarm_sessions{state=\"fresh\",host=\"host-a\"}") == 1 &&
           sample(m, "swarm_sessions{state=\"fresh\",host=\"host-b\"}") == 1 &&
           sample(m, "swarm_leases{state=\"held\"}") >= 3 && sample(m, "swarm_events_total{kind=\"join\"}") == 2;
  }));
  const std::string m = served.body("/metrics");
  CHECK(m.find("# TYPE swarm_events_total counter") != std::string::npos);
  CHECK(m.find("host=\"\"") == std::string::npos);  // no series with an empty label
  auto metrics = served.get("/metrics");
  CHECK(metrics->get_header_value("Content-Type").find("text/plain; version=0.0.4") == 0);

  // The verbs' documents: the same sessions and leases as the verbs print.
  auto status = swarm::Json::parse(served.body("/api/status"));
  REQUIRE(status);
  CHECK(text_of(status.get(), "schema") == "swarm.status.v1");
  CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(status.get(), "sessions")) == 2);
  auto leases = swarm::Json::parse(served.body("/api/leases"));
  CHECK(text_of(leases.get(), "schema") == "swarm.lease.v1");
  CHECK(served.body("/api/leases").find("\"name\":\"merge\"") != std::string::npos);
  const std::string log = served.body("/api/log?n=2");
  CHECK(std::count(log.begin(), log.end(), '\n') == 2);
  CHECK(served.get("/api/log?n=0")->status == 400);
  CHECK(served.get("/api/log?n=x")->status == 400);
  CHECK(eventually_body(served, "/api/branches",
                        [](const std::string& b) { return b.find("\"schema\":\"swarm.branches.v1\"") != std::string::npos; }));
  CHECK(served.get("/nosuch")->status == 404);

  // Live: a join after start is counted, a close and its release too.
  REQUIRE(ws.swarm({"join", "--slot", "late-comer", "--task", "T-3"}).exit == 0);
  CHECK(eventually_body(served, "/metrics", [](const std::string& page) {
    return sample(page, "swarm_sessions{state=\"fresh\",host=\"host-a\"}") == 2 &&
           sample(page, "swarm_events_total{kind=\"join\"}") == 3;
  }));
  REQUIRE(ws.swarm({"close", "--slot", "render", "--result", "fail"}).exit == 0);
  CHECK(eventually_body(served, "/api/status", [](const std::string& body) { return body.find("\"render\"") == std::string::npos; }));
  holder.signal(SIGTERM);
  holder.wait();
  waiter.wait();
}

TEST_CASE("Serve_OnlyTheWorkspacesUsersReadIt") {
  // the secret is made by up (0600); a request without it is 401 on every path; the link's one-time code
  // becomes an HttpOnly SameSite=Strict cookie and leaves the address; a Bearer header, or the cookie with
  // the key the page is given once, reads.
  SwarmWorkspace ws;
  const fs::path token_file = ws.root() / ".swarm/serve/token";
  REQUIRE(fs::exists(token_file));
  const auto mode = fs::status(token_file).permissions() & fs::perms::all;
  CHECK(mode == (fs::perms::owner_read | fs::perms::owner_write));
  Served served(ws);
  std::string secret = read_file(token_file);
  while (!secret.empty() && secret.back() == '\n') secret.pop_back();
  CHECK(served.secret() == secret);
  const std::string code_path = "/?code=" + served.link().substr(served.link().find("?code=") + 6);
  CHECK(served.link() == "http://127.0.0.1:" + std::to_string(served.port()) + code_path);
  CHECK(served.link().find(secret) == std::string::npos);
  for (const char* path : {"/", "/app.js", "/app.css", "/metrics", "/api/status", "/api/leases", "/api/log",
                           "/api/branches", "/events"}) {
    auto bare = served.get(path, false);
    REQUIRE(bare);
    CHECK_MESSAGE(bare->status == 401, path);
    CHECK(bare->body.find("\"sessions\"") == std::string::npos);
    auto wrong = served.get(path, false, {{"Authorization", "Bearer " + std::string(secret.size(), '0')}});
    CHECK_MESSAGE(wrong->status == 401, path);
  }
  CHECK(served.get("/api/status")->status == 200);
  // The link: 303 to / with the cookie; the cookie then opens the page, and with the page's key the API.
  auto link = served.get(code_path, false);
  REQUIRE(link);
  CHECK(link->status == 303);
  CHECK(link->get_header_value("Location") == "/");
  const std::string cookie = link->get_header_value("Set-Cookie");
  CHECK(cookie.find("HttpOnly") != std::string::npos);
  CHECK(cookie.find("SameSite=Strict") != std::string::npos);
  CHECK(cookie.find(secret) == std::string::npos);
  const std::string pair = cookie.substr(0, cookie.find(';'));
  CHECK(served.get("/", false, {{"Cookie", pair}})->status == 200);
  CHECK(served.get("/api/status", false, {{"Cookie", pair}})->status == 401);  // the cookie alone reads nothing
  auto session = served.get("/session", false, {{"Cookie", pair}});
  REQUIRE(session);
  REQUIRE(session->status == 200);
  const std::string key = session->body.substr(session->body.find("\"key\":\"") + 7, 48);
  CHECK(served.get("/session", false, {{"Cookie", pair}})->status == 409);  // given once
  CHECK(served.get("/api/status", false, {{"Cookie", "other=1; " + pair}, {"X-Swarm-Key", key}})->status == 200);
  CHECK(served.get("/api/status?key=" + key, false, {{"Cookie", pair}})->status == 200);
  CHECK(served.get("/api/status?key=" + key, false)->status == 401);  // the key alone neither
  // A used link, a wrong code, and the secret itself in a link: refused.
  CHECK(served.get(code_path, false)->status == 401);
  CHECK(served.get("/?code=wrong", false)->status == 401);
  CHECK(served.get("/?token=" + secret, false)->status == 401);
  // Another local user: cannot read the secret, and without it reads nothing.
  const std::string as_nobody = "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups ";
  auto read = run(Command{{"/bin/sh", "-c", as_nobody + "cat " + token_file.string()}, {}, "/"});
  CHECK(read.exit != 0);
  const std::string request = "exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(served.port()) +
                              "; printf 'GET /api/status HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n' "
                              ">&3; head -c 12 <&3";
  auto nobody = run(Command{{"/bin/sh", "-c", as_nobody + "/bin/bash -c \"" + request + "\""}, {}, "/"});
  CHECK(nobody.out == "HTTP/1.1 401");
  // --no-auth only on loopback, and it says so.
  CHECK(ws.swarm({"serve", "--listen", "0.0.0.0:0", "--no-auth"}).exit == 2);
  Served open(ws, {"--no-auth"});
  CHECK(open.link() == "http://127.0.0.1:" + std::to_string(open.port()) + "/");
  CHECK(open.get("/api/status", false)->status == 200);
  CHECK(open.get("/session", false)->body == "{\"key\":null}\n");
}

TEST_CASE("Serve_AnotherHostIsRefusedAsARebindingPageWouldSendIt") {
  SwarmWorkspace ws;
  Served served(ws);
  const std::string port = std::to_string(served.port());
  auto ask = [&](const std::string& host) {
    return status_of(raw_http(served.port(), "GET /api/status HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " +
                                                 served.secret() + "\r\nConnection: close\r\n\r\n"));
  };
  CHECK(ask("evil.example:" + port) == 421);
  CHECK(ask("evil.example") == 421);
  CHECK(ask("127.0.0.1.evil.example:" + port) == 421);
  CHECK(ask("127.0.0.1:1") == 421);  // another port
  CHECK(ask("[::1") == 421);
  CHECK(ask("127.0.0.1:" + port) == 200);
  CHECK(ask("localhost:" + port) == 200);
  CHECK(ask("LOCALHOST") == 200);
  CHECK(ask("127.9.9.9:" + port) == 200);
  CHECK(ask("[::1]:" + port) == 200);
  CHECK(status_of(raw_http(served.port(), "GET /api/status HTTP/1.0\r\n\r\n")) == 400);  // no Host at all
}

TEST_CASE("Serve_OtherMethodsAre405AndBadRequestsAreRefused") {
  SwarmWorkspace ws;
  Served served(ws);
  const std::string auth = "Host: 127.0.0.1\r\nAuthorization: Bearer " + served.secret() + "\r\n";
  for (const char* method : {"POST", "PUT", "DELETE", "OPTIONS", "PATCH"}) {
    const std::string answer = raw_http(served.port(), std::string(method) + " /api/status HTTP/1.1\r\n" + auth +
                                                           "Content-Length: 0\r\nConnection: close\r\n\r\n");
    CHECK_MESSAGE(status_of(answer) == 405, method);
    CHECK(answer.find("Allow: GET, HEAD") != std::string::npos);
  }
  const std::string head = raw_http(served.port(), "HEAD /api/status HTTP/1.1\r\n" + auth + "Connection: close\r\n\r\n");
  CHECK(status_of(head) == 200);
  CHECK(head.substr(head.find("\r\n\r\n") + 4).empty());
  CHECK(status_of(raw_http(served.port(), "GARBAGE\r\n\r\n")) == 400);
  CHECK(status_of(raw_http(served.port(), "GET / HTTP/1.1\r\n" + std::string(20000, 'x') + "\r\n\r\n")) == 431);
}

TEST_CASE("Serve_StreamsAndSlowClientsNeverStallIt") {
  // 200 /events streams (64 are kept, the rest 503 with Retry-After) and 50 sockets that trickle a request's
  // head: /metrics and /api/status still answer at once; the trickled heads are cut off by their deadline.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  Served served(ws);
  const std::string events = "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + served.secret() +
                             "\r\n\r\n";
  std::vector<int> streams;
  int refused = 0, kept = 0;
  for (int i = 0; i < 200; ++i) {
    const int fd = connect_to(served.port());
    REQUIRE(fd >= 0);
    (void)!::send(fd, events.data(), events.size(), MSG_NOSIGNAL);
    streams.push_back(fd);
  }
  for (int fd : streams) {
    char buffer[512];
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    const std::string first = n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
    if (status_of(first) == 503 && first.find("Retry-After") != std::string::npos) ++refused;
    if (status_of(first) == 200) ++kept;
  }
  CHECK(kept == 64);
  CHECK(refused == 136);
  std::vector<int> slow;
  for (int i = 0; i < 50; ++i) {
    const int fd = connect_to(served.port());
    REQUIRE(fd >= 0);
    (void)!::send(fd, "GET /metrics HTTP/1.1\r\nHo", 25, MSG_NOSIGNAL);  // and no more
    slow.push_back(fd);
  }
  // The median of ten asks, each a new connection: the bench has the figure; a stall is seconds.
  for (const char* path : {"/metrics", "/api/status"}) {
    std::vector<long> took;
    for (int i = 0; i < 10; ++i) {
      const auto start = std::chrono::steady_clock::now();
      auto r = served.get(path);
      took.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
      REQUIRE(r);
      CHECK(r->status == 200);
    }
    std::sort(took.begin(), took.end());
    CHECK_MESSAGE(took[5] < 100, path << ": median " << took[5] << " ms, slowest " << took.back() << " ms");
  }
  for (int fd : streams) ::close(fd);
  for (int fd : slow) ::close(fd);
}

TEST_CASE("Serve_FollowsNatsGoingAndComingBack") {
  // the embedded server stopped under a running serve: swarm_nats_up is 0 within 2 s, the page says since when;
  // up again (on the same port): 1 within 2 s of it answering, the feeds rebuilt (a join made meanwhile shows).
  SwarmWorkspace ws({.embedded = true});
  REQUIRE(ws.swarm({"join", "--slot", "before", "--task", "T-1"}).exit == 0);
  Served served(ws);
  REQUIRE(eventually_body(served, "/metrics", [](const std::string& m) { return sample(m, "swarm_nats_up") == 1; }));
  REQUIRE(ws.swarm({"down"}).exit == 0);
  const auto down = std::chrono::steady_clock::now();
  CHECK(eventually_body(served, "/metrics", [](const std::string& m) { return sample(m, "swarm_nats_up") == 0; }, 2s));
  INFO("down seen after " << seconds_between(down, std::chrono::steady_clock::now()));
  CHECK(served.get("/api/status")->status == 200);  // still answers, from what it saw
  REQUIRE(ws.swarm({"up"}).exit == 0);
  const auto up = std::chrono::steady_clock::now();
  CHECK(eventually_body(served, "/metrics", [](const std::string& m) { return sample(m, "swarm_nats_up") == 1; }, 2500ms));
  INFO("up seen after " << seconds_between(up, std::chrono::steady_clock::now()));
  REQUIRE(ws.swarm({"join", "--slot", "after", "--task", "T-2"}).exit == 0);
  CHECK(eventually_body(served, "/api/status",
                        [](const std::string& b) { return b.find("\"after\"") != std::string::npos; }));
  // And once more: it never gives up.
  REQUIRE(ws.swarm({"down"}).exit == 0);
  CHECK(eventually_body(served, "/metrics", [](const std::string& m) { return sample(m, "swarm_nats_up") == 0; }, 2s));
  REQUIRE(ws.swarm({"up"}).exit == 0);
  CHECK(eventually_body(served, "/metrics", [](const std::string& m) { return sample(m, "swarm_nats_up") == 1; }, 2500ms));
}

TEST_CASE("Serve_FollowsAClusterLosingTheNodeItIsOn") {
  NatsCluster cluster;
  SwarmWorkspace ws({.up = false, .own_server = false});
  REQUIRE(up_on_cluster(ws, cluster, {"--replicas", "3"}).exit == 0);
  Served served(ws);
  REQUIRE(eventually_body(served, "/metrics", [](const std::string& m) { return sample(m, "swarm_nats_up") == 1; }, 20s));
  cluster.node(0).stop();
  // Down for at most a moment, then up through another node.
  CHECK(eventually_body(served, "/metrics", [](const std::string& m) { return sample(m, "swarm_nats_up") == 1; }, 20s));
  // A 2.9 cluster elects new stream leaders in seconds, more on a machine running two suites at once.
  REQUIRE(eventually([&] { return ws.swarm({"join", "--slot", "moved", "--task", "T-1"}).exit == 0; }, 40s));
  CHECK(eventually_body(served, "/api/status", [](const std::string& b) { return b.find("\"moved\"") != std::string::npos; },
                        40s));
  cluster.node(0).start();
}

TEST_CASE("Serve_MetricsAreValidWhateverTheJournalHolds") {
  // events planted by another client, with ESC, bad UTF-8, quotes, backslashes and newlines in kind and host:
  // promtool finds /metrics valid, and no label is empty.
  if (::access("/usr/bin/promtool", X_OK) != 0) FAIL("promtool is not installed: scripts/setup.sh installs prometheus");
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  {
    RawNats raw(ws.server()->url());
    for (const std::string kind : {"join\\u001b[31m", "evil\\\"kind\\\\\\n{x=\\\"1\\\"}", "", "\xff\xfe bad utf-8"}) {
      const std::string event = "{\"schema\":\"swarm.event.v1\",\"kind\":\"" + kind +
                                "\",\"slot\":\"s\",\"bucket\":\"" + ws.names().sessions +
                                "\",\"host\":\"h\\u001b\\n\\\"\"}";
      REQUIRE(raw.publish(ws.names().event_root + ws.names().sessions + ".slot.s", event));
    }
    REQUIRE(raw.publish("$KV." + ws.names().sessions + ".odd", "{\"slot\":\"odd\",\"host\":\"\\u001b]0;x\\u0007\\\"\\n\","
                                                   "\"started_at\":\"2026-11-24T00:00:00Z\",\"last_renewed\":\"2026-11-24T00:00:00Z\"}"));
  }
  Served served(ws);
  std::string page;
  REQUIRE(eventually([&] {
    page = served.body("/metrics");
    return sample(page, "swarm_nats_up") == 1 && page.find("bad utf-8") != std::string::npos;
  }));
  const fs::path file = ws.home() / "metrics.txt";
  write_file(file, page);
  auto check = run(Command{{"/bin/sh", "-c", "/usr/bin/promtool check metrics < " + file.string()}, {}, ws.home()});
  INFO(page);
  CHECK_MESSAGE(check.exit == 0, check.out << check.err);
  CHECK(check.err.find("error") == std::string::npos);
  CHECK(page.find("=\"\"") == std::string::npos);
  CHECK(page.find('\x1b') == std::string::npos);
}

TEST_CASE("Serve_ACrawlOfEveryPathWritesNothing") {
  // every path, GET and HEAD and POST, with and without the secret: .swarm/, the hub and NATS (the buckets'
  // and the journal's last sequences) are as they were; GET /api/branches makes no .swarm/land/.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  write_file(ws.worktree("s") / "f.txt", "x\n");
  REQUIRE(ws.swarm({"commit", "--slot", "s", "-m", "f"}).exit == 0);
  fs::remove_all(ws.root() / ".swarm/land");
  auto nats_state = [&] {
    RawNats raw(ws.server()->url());
    std::string out;
    const swarm::WorkspaceNames names = ws.names();
    for (const std::string& stream : {names.events, "KV_" + names.sessions, "KV_" + names.leases}) {
      jsStreamInfo* info = nullptr;
      if (js_GetStreamInfo(&info, raw.js, stream.c_str(), nullptr, nullptr) == NATS_OK) {
        out += std::string(stream) + ":" + std::to_string(info->State.LastSeq) + " ";
        jsStreamInfo_Destroy(info);
      }
    }
    return out;
  };
  Served served(ws);
  REQUIRE(eventually_body(served, "/api/branches", [](const std::string& b) { return b.find("\"s\"") != std::string::npos; }));
  const auto files = listing(ws.root() / ".swarm");
  const auto nats = nats_state();
  const std::string refs = ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "show-ref"}).out;
  for (const char* path : {"/", "/app.js", "/app.css", "/metrics", "/api/status", "/api/leases", "/api/log",
                           "/api/log?n=5", "/api/branches", "/nosuch", "/?token=x"}) {
    for (const char* method : {"GET", "HEAD", "POST"}) {
      for (bool auth : {true, false}) {
        raw_http(served.port(), std::string(method) + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                                    (auth ? "Authorization: Bearer " + served.secret() + "\r\n" : "") +
                                    "Connection: close\r\n\r\n", 2s);
      }
    }
  }
  CHECK(listing(ws.root() / ".swarm") == files);
  CHECK(!fs::exists(ws.root() / ".swarm/land"));
  CHECK(nats_state() == nats);
  CHECK(ws.git({"--git-dir", (ws.root() / ".swarm/hub.git").string(), "show-ref"}).out == refs);
}

TEST_CASE("Serve_SigintEndsItAtOnce") {
  SwarmWorkspace ws;
  Served served(ws);
  // A stream open, as a dashboard tab would hold one.
  const int fd = connect_to(served.port());
  const std::string events = "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + served.secret() +
                             "\r\n\r\n";
  (void)!::send(fd, events.data(), events.size(), MSG_NOSIGNAL);
  REQUIRE(eventually_body(served, "/metrics", [](const std::string& m) { return sample(m, "swarm_nats_up") == 1; }));
  const auto start = std::chrono::steady_clock::now();
  auto r = served.stop(SIGINT);
  const auto took = std::chrono::steady_clock::now() - start;
  ::close(fd);
  CHECK(r.exit == 0);
  // 200 ms is the promise; the bound here leaves room for a loaded machine.
  CHECK_MESSAGE(took < 1s, seconds_between(start, start + took));
}

TEST_CASE("Serve_ARealPrometheusScrapesWithTheBearerFileThroughANatsRestart") {
  if (::access("/usr/bin/prometheus", X_OK) != 0) FAIL("prometheus is not installed: scripts/setup.sh installs it");
  SwarmWorkspace ws({.embedded = true});
  for (const char* slot : {"a", "b", "c"}) REQUIRE(ws.swarm({"join", "--slot", slot, "--task", std::string("T-") + slot}).exit == 0);
  Served served(ws);
  TempDir dir("swarm-prometheus");
  const int port = free_port();
  write_file(dir.path() / "prometheus.yml",
             "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: swarm\n"
             "    authorization:\n      credentials_file: " + (ws.root() / ".swarm/serve/token").string() + "\n"
             "    static_configs:\n      - targets: ['127.0.0.1:" + std::to_string(served.port()) + "']\n");
  Process prometheus(Command{{"/usr/bin/prometheus", "--config.file=" + (dir.path() / "prometheus.yml").string(),
                              "--storage.tsdb.path=" + (dir.path() / "data").string(),
                              "--web.listen-address=127.0.0.1:" + std::to_string(port)},
                             {},
                             dir.path()});
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(5, 0);
  auto query = [&](const std::string& q) {
    auto r = client.Get(("/api/v1/query?query=" + q).c_str());
    return r && r->status == 200 ? r->body : std::string();
  };
  CHECK(eventually([&] { return query("sum(swarm_sessions)").find("\"3\"]") != std::string::npos; }, 40s));
  CHECK(eventually([&] { return query("swarm_nats_up").find("\"1\"]") != std::string::npos; }, 10s));
  REQUIRE(ws.swarm({"down"}).exit == 0);
  CHECK(eventually([&] { return query("swarm_nats_up").find("\"0\"]") != std::string::npos; }, 10s));
  std::this_thread::sleep_for(3s);
  REQUIRE(ws.swarm({"up"}).exit == 0);
  CHECK(eventually([&] { return query("swarm_nats_up").find("\"1\"]") != std::string::npos; }, 10s));
  // The target itself never went down: every scrape of the last minute answered.
  std::this_thread::sleep_for(2s);
  CHECK(query("min_over_time(up{job=\"swarm\"}[1m])").find("\"1\"]") != std::string::npos);
  prometheus.signal(SIGTERM);
  prometheus.wait();
}

TEST_CASE("Serve_RefusesBadListenAddressesBeforeAnyIo") {
  SwarmWorkspace ws;
  for (const char* bad : {"127.0.0.1:99999", "nohost:80", "127.0.0.1:", "127.0.0.1:8o", "", "[::1"})
    CHECK_MESSAGE(ws.swarm({"serve", "--listen", bad}).exit == 2, bad);
  // A port that is taken: exit 3 naming it.
  Served first(ws);
  auto taken = ws.swarm({"serve", "--listen", "127.0.0.1:" + std::to_string(first.port())});
  CHECK(taken.exit == 3);
  CHECK(taken.err.find(std::to_string(first.port())) != std::string::npos);
  // Outside a workspace: exit 6, as every verb.
  CHECK(ws.swarm({"serve", "--listen", "127.0.0.1:0", "--workspace", ws.home().string()}).exit == 6);
}

namespace {

// CPU time (user + system) process `pid` has used, from /proc.
std::chrono::milliseconds cpu_time_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  long ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i)
    if (i == 14 || i == 15) ticks += std::stol(field);
  return std::chrono::milliseconds(ticks * 1000 / ::sysconf(_SC_CLK_TCK));
}

// This process's soft limit of open files raised to at least `want` (to its
// hard limit when that is lower); what it is now.
rlim_t raise_file_limit(rlim_t want) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < want) {
    limit.rlim_cur = std::min(want, limit.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
  ::getrlimit(RLIMIT_NOFILE, &limit);
  return limit.rlim_cur;
}

}  // namespace

// Any local user can open connections without the secret: 2,000 held open
// (beyond serve's file limit of 1,024) never make it spin, and the owner's
// scrapes are answered within a second all the while.
TEST_CASE("Serve_AFloodOfConnectionsNeverStopsTheOwnersScrape") {
  constexpr int kFlood = 2000;
  REQUIRE_MESSAGE(raise_file_limit(kFlood + 256) >= kFlood + 256, "this test needs 2,256 open files");
  SwarmWorkspace ws;
  for (const std::string limits : {"ulimit -Sn 1024", "ulimit -n 1024"}) {
    CAPTURE(limits);
    Served served(ws, {}, kHostA, limits);
    std::vector<int> flood;
    for (int i = 0; i < kFlood; ++i) {
      const int fd = connect_to(served.port());
      if (fd >= 0) flood.push_back(fd);
    }
    CHECK(flood.size() >= static_cast<std::size_t>(kFlood) * 9 / 10);
    const auto cpu_before = cpu_time_of(served.pid());
    const auto wall_before = std::chrono::steady_clock::now();
    for (int scrape = 0; scrape < 5; ++scrape) {
      const auto asked = std::chrono::steady_clock::now();
      auto r = served.get("/metrics");
      const auto took = std::chrono::steady_clock::now() - asked;
      REQUIRE(r);
      CHECK(r->status == 200);
      CHECK_MESSAGE(took < 1s, "scrape ", scrape, " took ", std::chrono::duration_cast<std::chrono::milliseconds>(took).count(), " ms");
      // More of the stranger's connections keep coming between scrapes.
      for (int i = 0; i < 100; ++i)
        if (const int fd = connect_to(served.port()); fd >= 0) flood.push_back(fd);
      std::this_thread::sleep_for(200ms);
    }
    // Idle connections cost no CPU: no loop spins on a full file table.
    const auto cpu = cpu_time_of(served.pid()) - cpu_before;
    const auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - wall_before);
    MESSAGE("serve used ", cpu.count(), " ms of CPU in ", wall.count(), " ms under ", flood.size(), " connections");
    CHECK(cpu < wall / 2);
    for (int fd : flood) ::close(fd);
  }
}

// The link's one-time code is traded for a session cookie that is not the
// secret, expires, and is good only for the serve that made it, with the
// key its page was given.
TEST_CASE("Serve_TheSessionCookieIsNotTheSecretAndOnlyForItsAddress") {
  SwarmWorkspace ws;
  Served first(ws);
  Served second(ws);
  auto link = first.get(first.link().substr(first.link().find("/?code=")), false);
  REQUIRE(link);
  REQUIRE(link->status == 303);
  const std::string cookie = link->get_header_value("Set-Cookie");
  CHECK(cookie.find(first.secret()) == std::string::npos);
  CHECK(cookie.find("Max-Age=") != std::string::npos);
  const std::string pair = cookie.substr(0, cookie.find(';'));
  auto session = first.get("/session", false, {{"Cookie", pair}});
  REQUIRE(session);
  const std::string key = session->body.substr(session->body.find("\"key\":\"") + 7, 48);
  CHECK(first.get("/api/status", false, {{"Cookie", pair}, {"X-Swarm-Key", key}})->status == 200);
  // The same value and key for the other serve (its own cookie name): refused.
  const std::string value = pair.substr(pair.find('=') + 1);
  const std::string for_second = "swarm_serve_" + std::to_string(second.port()) + "=" + value;
  CHECK(second.get("/api/status", false, {{"Cookie", for_second}, {"X-Swarm-Key", key}})->status == 401);
  CHECK(second.get("/", false, {{"Cookie", for_second}})->status == 401);
  // A made-up value, or the secret itself as the cookie: refused.
  const std::string name = pair.substr(0, pair.find('='));
  CHECK(first.get("/", false, {{"Cookie", name + "=" + first.secret()}})->status == 401);
  CHECK(first.get("/", false, {{"Cookie", name + "=" + std::string(48, '0')}})->status == 401);
  std::string altered = value;
  altered.back() = altered.back() == '0' ? '1' : '0';
  CHECK(first.get("/api/status", false, {{"Cookie", name + "=" + altered}, {"X-Swarm-Key", key}})->status == 401);
}

// Listening on a wildcard address, the machine's own addresses are its
// Hosts (a name another site controls still is not).
TEST_CASE("Serve_AWildcardListenTakesTheMachinesOwnAddresses") {
  SwarmWorkspace ws;
  std::string own;
  ifaddrs* list = nullptr;
  REQUIRE(::getifaddrs(&list) == 0);
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
    if (std::string(text).rfind("127.", 0) != 0) own = text;
  }
  ::freeifaddrs(list);
  Process serve(ws.command({"serve", "--listen", "0.0.0.0:0"}));
  auto line = serve.read_line(20s);
  REQUIRE(line);
  const std::string prefix = "serving http://0.0.0.0:";
  REQUIRE_MESSAGE(line->rfind(prefix, 0) == 0, *line);
  const int port = std::stoi(line->substr(prefix.size()));
  std::string secret = read_file(ws.root() / ".swarm/serve/token");
  while (!secret.empty() && secret.back() == '\n') secret.pop_back();
  auto ask = [&](const std::string& host) {
    return status_of(raw_http(port, "GET /api/status HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " +
                                        secret + "\r\nConnection: close\r\n\r\n"));
  };
  CHECK(ask("127.0.0.1:" + std::to_string(port)) == 200);
  CHECK(ask("evil.example:" + std::to_string(port)) == 421);
  CHECK(ask("192.0.2.7:" + std::to_string(port)) == 421);  // TEST-NET-1: no machine has it
  if (own.empty()) MESSAGE("no non-loopback IPv4 address here: only loopback checked");
  else CHECK(ask(own + ":" + std::to_string(port)) == 200);
  serve.signal(SIGTERM);
  serve.wait();
}

namespace {

// The view the first message of /events carries (empty when none came).
swarm::Json first_view(const Served& served) {
  const std::string answer = raw_http(served.port(), "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                                                         served.secret() + "\r\n\r\n",
                                      2s);
  const auto data = answer.find("data: ");
  if (data == std::string::npos) return swarm::Json();
  return swarm::Json::parse(answer.substr(data + 6, answer.find('\n', data) - data - 6));
}

// The timeline's span of `thing`/`name` in a view, as "open", "expired" or how it ended ("" when none).
std::string span_end(const swarm::Json& view, const std::string& thing, const std::string& name) {
  const cJSON* spans = cJSON_GetObjectItemCaseSensitive(view.get(), "spans");
  const double now = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(view.get(), "server_time_ms"));
  std::string out;
  const cJSON* span = nullptr;
  cJSON_ArrayForEach(span, spans) {
    if (text_of(span, "thing") != thing || text_of(span, "name") != name) continue;
    const cJSON* to = cJSON_GetObjectItemCaseSensitive(span, "to_ms");
    const cJSON* until = cJSON_GetObjectItemCaseSensitive(span, "until_ms");
    if (!cJSON_IsNull(to)) out = text_of(span, "end");
    else out = cJSON_IsNumber(until) && until->valuedouble <= now ? "expired" : "open";
  }
  return out;
}

}  // namespace

// A session or a lease that expired without a word (its holder died) ends
// on the timeline at its expiry: never drawn as held now while the tables
// say it expired.
TEST_CASE("Serve_TheTimelineEndsAHoldAtItsExpiry") {
  SwarmWorkspace ws({.up_args = {"--ttl", "3s"}});
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  REQUIRE(ws.swarm({"lease", "acquire", "long", "--ttl", "1h"}).exit == 0);
  Served served(ws);
  // Renewed as it is looked at: held now.
  CHECK(eventually([&] {
    return ws.swarm({"renew", "--slot", "s"}).exit == 0 && span_end(first_view(served), "slot", "s") == "open";
  }));
  REQUIRE(ws.swarm({"lease", "acquire", "short", "--ttl", "1s"}).exit == 0);
  REQUIRE(eventually([&] { return ws.swarm({"status", "--slot", "s"}).exit == 4; }));
  CHECK(eventually([&] {
    const auto view = first_view(served);
    return span_end(view, "slot", "s") == "expired" && span_end(view, "lease", "short") == "expired";
  }));
  CHECK(span_end(first_view(served), "lease", "long") == "open");
}

// With no session at all, swarm_sessions still has samples (0), so that
// sum(swarm_sessions) is 0, not empty.
TEST_CASE("Serve_SessionsHaveSamplesAtZero") {
  SwarmWorkspace ws;
  Served served(ws);
  REQUIRE(eventually_body(served, "/metrics", [](const std::string& m) { return sample(m, "swarm_nats_up") == 1; }));
  const std::string metrics = served.body("/metrics");
  CHECK(sample(metrics, "swarm_sessions{state=\"fresh\",host=\"host-a\"}") == 0);
  CHECK(sample(metrics, "swarm_sessions{state=\"stale\",host=\"host-a\"}") == 0);
}

TEST_CASE("Serve_FollowsTheTaskQueueInMetricsApiAndPage") {
  // swarm_tasks{state} has a sample for every state (0 when none); /api/tasks is task list --json's
  // document; the page's panel counts ready and waiting apart; a task with control bytes in its record
  // (planted by another client) is data everywhere; a change after start arrives live.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"task", "add", "First", "--id", "A"}).exit == 0);
  REQUIRE(ws.swarm({"task", "add", "After A", "--id", "B", "--after", "A"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "s1", "--task", "A"}).exit == 0);
  {
    RawNats raw(ws.server()->url());
    REQUIRE(raw.publish("$KV." + ws.names().tasks + ".E", "{\"schema\":\"swarm.task.v1\",\"id\":\"E\",\"title\":\"evil\\u001b[2J\\\"x\","
                                             "\"state\":\"open\",\"priority\":1}"));
  }
  Served served(ws);
  CHECK(eventually_body(served, "/metrics", [](const std::string& m) {
    return sample(m, "swarm_tasks{state=\"working\"}") == 1 && sample(m, "swarm_tasks{state=\"open\"}") == 2 &&
           sample(m, "swarm_tasks{state=\"completed\"}") == 0 && sample(m, "swarm_tasks{state=\"corrupt\"}") == 0;
  }));
  const std::string tasks = served.body("/api/tasks");
  auto doc = swarm::Json::parse(tasks);
  REQUIRE(doc);
  CHECK(text_of(doc.get(), "schema") == "swarm.tasks.v1");
  CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc.get(), "tasks")) == 3);
  CHECK(tasks.find('\x1b') == std::string::npos);
  // The same document as the verb's.
  auto verb = ws.swarm({"task", "list", "--json"});
  CHECK(swarm::Json::parse(verb.out).dump() == swarm::Json::parse(served.body("/api/tasks")).dump());
  write_file(ws.worktree("s1") / "a.txt", "a\n");
  REQUIRE(ws.swarm({"commit", "--slot", "s1", "-m", "a"}).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "s1", "--result", "success"}).exit == 0);
  CHECK(eventually_body(served, "/metrics", [](const std::string& m) {
    return sample(m, "swarm_tasks{state=\"approved\"}") == 1 && sample(m, "swarm_tasks{state=\"working\"}") == 0 &&
           sample(m, "swarm_events_total{kind=\"task.state\"}") >= 1;
  }));
}

TEST_CASE("Serve_ShowsInboxesWithUnreadCountsAndNoBodies") {
  // /metrics has swarm_inbox_unread{inbox} (an inbox's own messages and everyone's after its cursor);
  // /api/inboxes has each inbox's cursor and count; an ack lowers the count within seconds; neither, nor the
  // page, carries a message's body.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"send", "--to", "a", "--from", "lead", "secret-body-one"}).exit == 0);
  REQUIRE(ws.swarm({"send", "--to", "a", "--from", "lead", "secret-body-two"}).exit == 0);
  REQUIRE(ws.swarm({"send", "--all", "--from", "lead", "secret-body-all"}).exit == 0);
  Served served(ws);
  CHECK(eventually_body(served, "/metrics", [](const std::string& m) {
    return sample(m, "swarm_inbox_unread{inbox=\"a\"}") == 3;
  }));
  REQUIRE(ws.swarm({"ack", "--as", "a", "2"}).exit == 0);
  CHECK(eventually_body(served, "/metrics", [](const std::string& m) {
    return sample(m, "swarm_inbox_unread{inbox=\"a\"}") == 1;
  }, 10s));
  // A send is seen soon after (the bus's bell), not only at the next look.
  REQUIRE(ws.swarm({"send", "--to", "b", "--from", "lead", "secret-body-b"}).exit == 0);
  CHECK(eventually_body(served, "/api/inboxes", [](const std::string& body) {
    return body.find("\"name\":\"b\",\"cursor\":0,\"unread\":2") != std::string::npos;
  }, 10s));
  const std::string inboxes = served.body("/api/inboxes");
  CHECK(inboxes.find("\"schema\":\"swarm.inboxes.v1\"") != std::string::npos);
  CHECK(inboxes.find("\"name\":\"a\",\"cursor\":2,\"unread\":1") != std::string::npos);
  for (const std::string path : {"/api/inboxes", "/metrics", "/api/status"}) {
    CAPTURE(path);
    CHECK(served.body(path).find("secret-body") == std::string::npos);
  }
}
