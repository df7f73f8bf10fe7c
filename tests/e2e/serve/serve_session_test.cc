// The page's session, in a real headless Chromium (adr/0060): the link serve
// prints never puts the secret in the browser's history or anywhere in its
// profile; the cookie the browser sends to every port of 127.0.0.1 opens
// nothing of the workspace when a service on another port replays it, nor
// on another serve of the same workspace; a link signs in one browser, and
// serve prints the next one.
#include <doctest/doctest.h>
#include <httplib.h>

#include <mutex>
#include <thread>

#include "e2e/serve_fixture.h"
#include "e2e/swarm_fixture.h"
#include "support/browser.h"
#include "support/process.h"

using namespace testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// Every URL the profile's History database holds, one a line (Python's
// sqlite3 reads it once the browser has closed it).
std::string history_urls(const fs::path& profile) {
  const char* script =
      "import sqlite3, sys\n"
      "db = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True)\n"
      "for (url,) in db.execute('select url from urls'): print(url)\n";
  RunResult r = run({{"/usr/bin/env", "python3", "-c", script, (profile / "Default" / "History").string()}});
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  return r.out;
}

std::string ask(int port, const std::string& path, const std::string& cookie) {
  return raw_http(port, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\nCookie: " +
                            cookie + "\r\nConnection: close\r\n\r\n",
                  3s);
}

// The value of cookie `name` in a Cookie header ("" when absent).
std::string value_of(const std::string& header, const std::string& name) {
  const auto at = header.find(name + "=");
  if (at == std::string::npos) return {};
  const auto from = at + name.size() + 1;
  return header.substr(from, header.find(';', from) - from);
}

}  // namespace

TEST_CASE("ServeSession_TheSecretNeverReachesTheBrowsersHistory") {
  if (chromium_path().empty()) FAIL("chromium is not installed: scripts/setup.sh installs it");
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "render", "--task", "T-1"}).exit == 0);
  Served served(ws);
  REQUIRE(!served.secret().empty());
  HeadlessBrowser browser;
  browser.open(served.link());
  REQUIRE(browser.wait_for("document.querySelector('tr[data-slot=\"render\"]')", 10s));
  CHECK(browser.evaluate("location.search + location.hash") == "\"\"");  // nothing left in the address bar
  browser.close();
  const std::string urls = history_urls(browser.profile());
  // The visit was written (so a secret in it would be seen), and no URL holds the secret.
  CHECK_MESSAGE(urls.find("127.0.0.1:" + std::to_string(served.port())) != std::string::npos, urls);
  CHECK_MESSAGE(urls.find(served.secret()) == std::string::npos, urls);
  // Nor does any file of the profile (cookies, local storage, cache, the History journal).
  for (const auto& entry : fs::recursive_directory_iterator(browser.profile())) {
    if (!entry.is_regular_file() || entry.is_symlink()) continue;
    CHECK_MESSAGE(read_file(entry.path()).find(served.secret()) == std::string::npos, entry.path().string());
  }
}

TEST_CASE("ServeSession_ACookieTheBrowserSendsToAnotherPortOpensNothing") {
  if (chromium_path().empty()) FAIL("chromium is not installed: scripts/setup.sh installs it");
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "secret-slot", "--task", "T-1"}).exit == 0);
  Served first(ws);
  Served second(ws);
  // Another local user's service on another port: it keeps the Cookie header the browser sends it.
  std::mutex mu;
  std::string received;
  httplib::Server other;
  std::thread serving;
  struct Stop {
    httplib::Server& server;
    std::thread& thread;
    ~Stop() {
      server.stop();
      if (thread.joinable()) thread.join();
    }
  } stop_other{other, serving};
  other.Get("/", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    received = req.get_header_value("Cookie");
    res.set_content("<html><body>other</body></html>", "text/html");
  });
  const int other_port = other.bind_to_any_port("127.0.0.1");
  serving = std::thread([&] { other.listen_after_bind(); });
  HeadlessBrowser browser;
  browser.open(first.link());
  REQUIRE(browser.wait_for("document.querySelector('tr[data-slot=\"secret-slot\"]')", 10s));
  browser.open("http://127.0.0.1:" + std::to_string(other_port) + "/");
  REQUIRE(browser.wait_for("document.body && document.body.textContent === 'other'", 10s));
  std::string cookie;
  {
    std::lock_guard lock(mu);
    cookie = received;
  }
  const std::string name = "swarm_serve_" + std::to_string(first.port());
  // Cookies are per host, not per port: the other service was sent serve's session.
  REQUIRE_MESSAGE(!value_of(cookie, name).empty(), cookie);
  CHECK(value_of(cookie, name).find(first.secret()) == std::string::npos);
  // Replayed from there, it reads nothing of the workspace.
  for (const std::string path : {"/api/status", "/api/leases", "/metrics", "/events", "/api/log"}) {
    CAPTURE(path);
    const std::string answer = ask(first.port(), path, cookie);
    CHECK(status_of(answer) == 401);
    CHECK(answer.find("secret-slot") == std::string::npos);
  }
  // The page's key was given to the page that signed in, once.
  CHECK(status_of(ask(first.port(), "/session", cookie)) == 409);
  // Another serve of the same workspace, on another port, takes none of it: not as the browser sends it ...
  browser.open("http://127.0.0.1:" + std::to_string(second.port()) + "/");
  CHECK(browser.wait_for("document.body && document.body.textContent.includes('needs the workspace')", 10s));
  CHECK(browser.evaluate("document.body.textContent.includes('secret-slot')") == "false");
  // ... nor under its own cookie name.
  const std::string renamed = "swarm_serve_" + std::to_string(second.port()) + "=" + value_of(cookie, name);
  CHECK(status_of(ask(second.port(), "/api/status", renamed)) == 401);
  CHECK(status_of(ask(second.port(), "/", renamed)) == 401);
  // The link signed in one browser: another is refused with it, and let in with the next link serve printed.
  auto next = first.read_line(5s);
  REQUIRE_MESSAGE(next, "serve printed no new link");
  const auto at = next->find("http://");
  REQUIRE_MESSAGE(at != std::string::npos, *next);
  const std::string next_link = next->substr(at);
  CHECK(next_link != first.link());
  HeadlessBrowser stranger;
  stranger.open(first.link());
  CHECK(stranger.wait_for("document.body && document.body.textContent.includes('used already')", 10s));
  stranger.open(next_link);
  CHECK(stranger.wait_for("document.querySelector('tr[data-slot=\"secret-slot\"]')", 10s));
}
