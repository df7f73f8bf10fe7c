// swarm serve, from outside: its metrics scraped by a real Prometheus, its
// dashboard drawn by a real headless Chromium, its /api paths against the
// verbs' own --json, and its refusals.
#include <doctest/doctest.h>
#include <httplib.h>

#include <signal.h>

#include <fstream>
#include <thread>

#include "cli/swarm_fixture.h"
#include "support/eventually.h"
#include "support/browser.h"
#include "support/json_fields.h"
#include "support/nats_server.h"

using namespace testing;
namespace fs = std::filesystem;

namespace {

// `swarm serve` on a free port of 127.0.0.1, stopped (SIGTERM) when it goes.
class Served {
 public:
  explicit Served(const SwarmWorkspace& ws, const std::map<std::string, std::string>& env = kHostA)
      : process_(ws.command({"serve", "--listen", "127.0.0.1:0"}, env)) {
    auto line = process_.read_line(std::chrono::seconds(20));
    REQUIRE_MESSAGE(line, "swarm serve printed no URL");
    const std::string prefix = "serving http://127.0.0.1:";
    REQUIRE(line->rfind(prefix, 0) == 0);
    port_ = std::stoi(line->substr(prefix.size()));
    url_ = line->substr(8);
  }
  ~Served() {
    if (!stopped_) stop();
  }
  RunResult stop() {
    stopped_ = true;
    process_.signal(SIGTERM);
    return process_.wait(std::chrono::seconds(20));
  }
  int port() const { return port_; }
  const std::string& url() const { return url_; }
  httplib::Result get(const std::string& path) const {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(10, 0);
    return client.Get(path.c_str());
  }
  std::string body(const std::string& path) const {
    auto r = get(path);
    const std::string what = "GET " + path + " failed";
    REQUIRE_MESSAGE(r, what);
    CHECK_MESSAGE(r->status == 200, path);
    return r->body;
  }

 private:
  Process process_;
  int port_ = 0;
  std::string url_;
  bool stopped_ = false;
};

// The value of the sample `series` (its name and labels exactly) in a Prometheus text page; -1 when absent.
double sample(const std::string& page, const std::string& series) {
  auto at = page.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(page.substr(at + series.size() + 2));
}

// Waits until `ok(body of path)` holds, within `limit`.
bool eventually(const Served& served, const std::string& path, const std::function<bool(const std::string&)>& ok,
                std::chrono::milliseconds limit = std::chrono::seconds(15)) {
  return testing::eventually([&] {
    auto r = served.get(path);
    return r && r->status == 200 && ok(r->body);
  }, limit);
}


// Where the tests keep what people look at (screenshots), for the README and CI artifacts.
fs::path artifacts() {
  fs::path dir = fs::path(SWARM_TEST_ARTIFACTS);
  fs::create_directories(dir);
  return dir;
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
  CHECK(eventually(served, "/metrics", [](const std::string& m) {
    return sample(m, "swarm_lease_waiters{lease=\"merge\"}") == 1 && sample(m, "swarm_nats_up") == 1 &&
           sample(m, "swarm_sessions{state=\"fresh\",host=\"host-a\"}") == 1 &&
           sample(m, "swarm_sessions{state=\"fresh\",host=\"host-b\"}") == 1 &&
           sample(m, "swarm_leases{state=\"held\"}") >= 3 && sample(m, "swarm_events_total{kind=\"join\"}") == 2;
  }));
  const std::string m = served.body("/metrics");
  CHECK(sample(m, "swarm_sessions{state=\"fresh\",host=\"host-a\"}") == 1);
  CHECK(sample(m, "swarm_sessions{state=\"fresh\",host=\"host-b\"}") == 1);
  CHECK(sample(m, "swarm_leases{state=\"held\"}") >= 3);  // two task leases and merge
  CHECK(sample(m, "swarm_events_total{kind=\"join\"}") == 2);
  CHECK(m.find("# TYPE swarm_events_total counter") != std::string::npos);
  auto metrics = served.get("/metrics");
  CHECK(metrics->get_header_value("Content-Type").find("text/plain; version=0.0.4") == 0);

  // The verbs' documents: the same sessions and leases as the verbs print.
  auto status = swarm::Json::parse(served.body("/api/status"));
  REQUIRE(status);
  CHECK(text_of(status.get(), "schema") == "swarm.status.v1");
  CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(status.get(), "sessions")) == 2);
  auto verb = json_of(ws.swarm({"status", "--json"}));
  CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(verb.get(), "sessions")) == 2);
  auto leases = swarm::Json::parse(served.body("/api/leases"));
  CHECK(text_of(leases.get(), "schema") == "swarm.lease.v1");
  CHECK(served.body("/api/leases").find("\"name\":\"merge\"") != std::string::npos);
  const std::string log = served.body("/api/log?n=2");
  CHECK(std::count(log.begin(), log.end(), '\n') == 2);
  CHECK(served.get("/api/log?n=0")->status == 400);
  CHECK(served.get("/api/log?n=x")->status == 400);
  CHECK(served.body("/api/branches").find("\"schema\":\"swarm.branches.v1\"") != std::string::npos);
  CHECK(served.get("/nosuch")->status == 404);

  // Live: a join after start is counted, a close and its release too.
  REQUIRE(ws.swarm({"join", "--slot", "late-comer", "--task", "T-3"}).exit == 0);
  CHECK(eventually(served, "/metrics", [](const std::string& page) {
    return sample(page, "swarm_sessions{state=\"fresh\",host=\"host-a\"}") == 2 &&
           sample(page, "swarm_events_total{kind=\"join\"}") == 3;
  }));
  REQUIRE(ws.swarm({"close", "--slot", "render", "--result", "fail"}).exit == 0);
  CHECK(eventually(served, "/api/status", [](const std::string& body) { return body.find("\"render\"") == std::string::npos; }));

  // Read-only: nothing it serves writes; SIGTERM ends it with exit 0.
  holder.signal(SIGTERM);
  holder.wait();
  waiter.wait();
  auto ended = served.stop();
  CHECK(ended.exit == 0);
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

TEST_CASE("Serve_ARealPrometheusScrapesIt") {
  if (::access("/usr/bin/prometheus", X_OK) != 0) FAIL("prometheus is not installed: scripts/setup.sh installs it");
  SwarmWorkspace ws;
  for (const char* slot : {"a", "b", "c"}) REQUIRE(ws.swarm({"join", "--slot", slot, "--task", std::string("T-") + slot}).exit == 0);
  Served served(ws);
  TempDir dir("swarm-prometheus");
  const int port = free_port();
  write_file(dir.path() / "prometheus.yml", "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: swarm\n"
                                            "    static_configs:\n      - targets: ['127.0.0.1:" +
                                                std::to_string(served.port()) + "']\n");
  Process prometheus(Command{{"/usr/bin/prometheus", "--config.file=" + (dir.path() / "prometheus.yml").string(),
                              "--storage.tsdb.path=" + (dir.path() / "data").string(),
                              "--web.listen-address=127.0.0.1:" + std::to_string(port)},
                             {},
                             dir.path()});
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(5, 0);
  std::string answer;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(40);
  while (std::chrono::steady_clock::now() < end) {
    if (auto r = client.Get("/api/v1/query?query=sum(swarm_sessions)"); r && r->status == 200) {
      answer = r->body;
      if (answer.find("\"3\"]") != std::string::npos) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  INFO(answer);
  CHECK(answer.find("\"status\":\"success\"") != std::string::npos);
  CHECK(answer.find("\"3\"]") != std::string::npos);  // [time, "3"]: the session count through PromQL
  auto up = client.Get("/api/v1/query?query=swarm_nats_up");
  REQUIRE(up);
  CHECK(up->body.find("\"1\"]") != std::string::npos);
  prometheus.signal(SIGTERM);
  prometheus.wait();
}

TEST_CASE("Serve_AHeadlessChromiumSeesASlotJoinedAfterLoad") {
  if (chromium_path().empty()) FAIL("chromium is not installed: scripts/setup.sh installs it");
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "render", "--task", "T-42"}).exit == 0);
  REQUIRE(ws.swarm({"lease", "acquire", "nightly", "--ttl", "60s"}).exit == 0);
  Served served(ws);
  HeadlessBrowser browser;
  browser.open(served.url());
  REQUIRE(browser.wait_for("document.querySelector('tr[data-slot=\"render\"]')", std::chrono::seconds(10)));
  CHECK(browser.evaluate("document.querySelector('tr[data-slot=\"render\"] .state').textContent") == "\"fresh\"");
  CHECK(browser.wait_for("document.querySelector('tr[data-lease=\"nightly\"]')", std::chrono::seconds(5)));
  // Joined after load: on the page within 2 s, pushed (no reload).
  const std::string loads = browser.evaluate("performance.getEntriesByType('navigation').length");
  REQUIRE(ws.swarm({"join", "--slot", "after-load", "--task", "T-43"}, kHostB).exit == 0);
  const auto joined = std::chrono::steady_clock::now();
  CHECK(browser.wait_for("document.querySelector('tr[data-slot=\"after-load\"]')", std::chrono::seconds(2)));
  CHECK(std::chrono::steady_clock::now() - joined < std::chrono::seconds(2));
  CHECK(browser.evaluate("performance.getEntriesByType('navigation').length") == loads);
  // Ages tick on the page by themselves.
  const std::string age = browser.evaluate("document.querySelector('tr[data-slot=\"render\"] td:nth-child(5)').textContent");
  std::this_thread::sleep_for(std::chrono::milliseconds(2200));
  CHECK(browser.evaluate("document.querySelector('tr[data-slot=\"render\"] td:nth-child(5)').textContent") != age);
  // The timeline has a bar for each slot held.
  CHECK(browser.wait_for("document.querySelectorAll('#timeline rect').length >= 3", std::chrono::seconds(2)));
  // Record text is text, never markup: a task id with a tag in it.
  REQUIRE(ws.swarm({"join", "--slot", "odd", "--task", "<img src=x onerror=alert(1)>"}).exit == 0);
  CHECK(browser.wait_for("document.querySelector('tr[data-slot=\"odd\"]')", std::chrono::seconds(2)));
  CHECK(browser.evaluate("document.querySelectorAll('#sessions img').length") == "0");
  browser.screenshot((artifacts() / "dashboard.png").string());
  CHECK(fs::file_size(artifacts() / "dashboard.png") > 10000);
}
