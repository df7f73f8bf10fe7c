// The dashboard, in a real headless Chromium: it follows the workspace live,
// fits the window (no horizontal scroll) with long names, tells what each
// act did, names task leases by their task, draws a timeline over a chosen
// range with a legend, shows the branches, runs no inline script, and reads
// nothing for a page of another origin or another Host.
#include <doctest/doctest.h>
#include <httplib.h>

#include <thread>

#include "e2e/serve_fixture.h"
#include "e2e/swarm_fixture.h"
#include "support/browser.h"
#include "support/eventually.h"
#include "support/nats_server.h"
#include "support/raw_nats.h"
#include "swarm/base/json.h"

using namespace testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST_CASE("ServePage_FollowsTheWorkspaceLive") {
  if (chromium_path().empty()) FAIL("chromium is not installed: scripts/setup.sh installs it");
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "render", "--task", "T-42"}).exit == 0);
  REQUIRE(ws.swarm({"lease", "acquire", "nightly", "--ttl", "60s"}).exit == 0);
  Served served(ws);
  HeadlessBrowser browser;
  browser.open(served.link());
  REQUIRE(browser.wait_for("document.querySelector('tr[data-slot=\"render\"]')", 10s));
  CHECK(browser.evaluate("location.search") == "\"\"");  // the token left the address bar
  CHECK(browser.evaluate("document.querySelector('tr[data-slot=\"render\"] .state').textContent") == "\"fresh\"");
  CHECK(browser.wait_for("document.querySelector('tr[data-lease=\"nightly\"]')", 5s));
  // The task lease is named by its task and slot, not by its key.
  CHECK(browser.wait_for("[...document.querySelectorAll('#leases td')].some(td => td.textContent === 'task T-42 (render)')", 5s));
  // Joined after load: on the page within 2 s, pushed (no reload).
  const std::string loads = browser.evaluate("performance.getEntriesByType('navigation').length");
  REQUIRE(ws.swarm({"join", "--slot", "after-load", "--task", "T-43"}, kHostB).exit == 0);
  const auto joined = std::chrono::steady_clock::now();
  CHECK(browser.wait_for("document.querySelector('tr[data-slot=\"after-load\"]')", 2s));
  CHECK(std::chrono::steady_clock::now() - joined < 2s);
  CHECK(browser.evaluate("performance.getEntriesByType('navigation').length") == loads);
  // Ages tick on the page by themselves.
  const std::string age = browser.evaluate("document.querySelector('tr[data-slot=\"render\"] td:nth-child(5)').textContent");
  std::this_thread::sleep_for(2200ms);
  CHECK(browser.evaluate("document.querySelector('tr[data-slot=\"render\"] td:nth-child(5)').textContent") != age);
  // Record text is text, never markup: a task id with a tag in it.
  REQUIRE(ws.swarm({"join", "--slot", "odd", "--task", "<img src=x onerror=alert(1)>"}).exit == 0);
  CHECK(browser.wait_for("document.querySelector('tr[data-slot=\"odd\"]')", 2s));
  CHECK(browser.evaluate("document.querySelectorAll('img').length") == "0");
  // A close says how it ended, in the acts and on the timeline.
  write_file(ws.worktree("render") / "r.txt", "r\n");
  REQUIRE(ws.swarm({"commit", "--slot", "render", "-m", "r"}).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "render", "--result", "success"}).exit == 0);
  CHECK(browser.wait_for("[...document.querySelectorAll('#events td')].some(td => td.textContent.includes('result=success'))", 3s));
  CHECK(browser.wait_for("document.querySelector('tr[data-branch=\"render\"] .state').textContent === 'done'", 5s));
  REQUIRE(ws.swarm({"land", "--slot", "render"}).exit == 0);
  CHECK(browser.wait_for("document.querySelector('tr[data-branch=\"render\"] .state').textContent === 'landed'", 5s));
  CHECK(browser.wait_for("document.querySelectorAll('#timeline rect').length >= 3", 2s));
  CHECK(browser.evaluate("document.querySelectorAll('#timeline text.end-success').length >= 1") == "true");
}

TEST_CASE("ServePage_FitsTheWindowWithLongNamesAndKeepsItsPictures") {
  // 40 sessions of long task and host names, leases, acts: no horizontal scroll at 1280x800 or 1920x1080, every
  // long cell cut with an ellipsis and whole in its title; the range buttons move the timeline; screenshots kept.
  if (chromium_path().empty()) FAIL("chromium is not installed: scripts/setup.sh installs it");
  SwarmWorkspace ws;
  for (int i = 1; i <= 40; ++i) {
    auto host = kHostA;
    host["SWARM_HOST"] = "build-host-with-a-really-long-name-in-rack-" + std::to_string(i % 4);
    host["SWARM_HOST_ID"] = "id-" + std::to_string(i % 4);
    const std::string slot = "agent-" + std::to_string(i);
    REQUIRE(ws.swarm({"join", "--slot", slot, "--task",
                      "PROJ-" + std::to_string(1000 + i) + " make the renderer handle every long edge case we found"},
                     host).exit == 0);
    if (i <= 4)  // what a few of them say they do, for the picture
      REQUIRE(ws.swarm({"renew", "--slot", slot, "--status", i == 3 ? "blocked" : "working", "--note",
                        i == 3 ? "waiting for the API review" : "step " + std::to_string(i) + " of 5: the parser"},
                       host).exit == 0);
  }
  for (int i = 1; i <= 3; ++i)
    REQUIRE(ws.swarm({"lease", "acquire", "deploy.production.region-" + std::to_string(i) + ".a-very-long-lease-name",
                      "--ttl", "60s", "--holder", "release-manager-on-a-far-away-host-" + std::to_string(i)}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "finished", "--task", "T-done"}).exit == 0);
  write_file(ws.worktree("finished") / "done.txt", "done\n");
  REQUIRE(ws.swarm({"commit", "--slot", "finished", "-m", "done"}).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "finished", "--result", "fail"}).exit == 0);
  Served served(ws);
  HeadlessBrowser browser;
  for (auto [w, h] : {std::pair{1280, 800}, std::pair{1920, 1080}}) {
    CAPTURE(w);
    browser.open(served.link(), w, h);
    REQUIRE(browser.wait_for("document.querySelectorAll('#sessions tbody tr').length === 40", 10s));
    CHECK(browser.wait_for("document.querySelectorAll('#branches tbody tr').length >= 1", 10s));
    CHECK(browser.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth") == "true");
    CHECK(browser.evaluate("[...document.querySelectorAll('section')].every(s => s.scrollWidth <= s.clientWidth)") ==
          "true");
    // Each cell's title is its whole text (a time's: its date).
    CHECK(browser.evaluate("[...document.querySelectorAll('td:not(.time)')].every(td => td.title === td.textContent)") ==
          "true");
    CHECK(browser.evaluate("[...document.querySelectorAll('#sessions td')].some(td => td.scrollWidth > td.clientWidth)") ==
          "true");  // cut with an ellipsis, the whole in the title
    CHECK(browser.evaluate("getComputedStyle(document.querySelector('#sessions td')).textOverflow") == "\"ellipsis\"");
    for (const char* range : {"900000", "21600000", "86400000", "3600000"}) {
      browser.evaluate(std::string("document.querySelector('#ranges button[data-range=\"") + range + "\"]').click()");
      CHECK(browser.evaluate(std::string("document.querySelector('#ranges button.on').dataset.range")) ==
            "\"" + std::string(range) + "\"");
    }
    CHECK(browser.evaluate("document.querySelector('.legend').textContent.includes('slot held')") == "true");
    CHECK(browser.evaluate("[...document.querySelectorAll('#timeline text')].some(t => t.textContent === 'now')") == "true");
    browser.screenshot((artifacts() / (w == 1280 ? "dashboard.png" : "dashboard-1920.png")).string());
  }
  CHECK(fs::file_size(artifacts() / "dashboard.png") > 10000);
}

TEST_CASE("ServePage_AnotherOriginAndAnotherHostReadNothing") {
  // the browser holds the dashboard's cookie; a page of another origin (another port) cannot read /api/status
  // with it, and a page that reaches the server under another name (DNS rebinding, mapped by the resolver
  // rules) is refused (421). The dashboard's own scripts run under a CSP with no 'unsafe-inline'.
  if (chromium_path().empty()) FAIL("chromium is not installed: scripts/setup.sh installs it");
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "secret-slot", "--task", "T-1"}).exit == 0);
  Served served(ws);
  auto page = served.get("/", true);
  REQUIRE(page);
  const std::string csp = page->get_header_value("Content-Security-Policy");
  CHECK(csp.find("unsafe-inline") == std::string::npos);
  CHECK(csp.find("script-src 'self'") != std::string::npos);
  CHECK(page->body.find("<script>") == std::string::npos);

  httplib::Server other;
  const std::string target = "http://127.0.0.1:" + std::to_string(served.port());
  other.Get("/evil.html", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content("<html><body><script>"
                    "fetch('" + target + "/api/status', {credentials: 'include'})"
                    ".then(r => r.text()).then(t => { document.title = 'read ' + t.length; })"
                    ".catch(e => { document.title = 'blocked'; });"
                    "</script></body></html>",
                    "text/html");
  });
  const int other_port = other.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { other.listen_after_bind(); });
  HeadlessBrowser browser({"--host-resolver-rules=MAP rebound.example 127.0.0.1"});
  browser.open(served.link());
  REQUIRE(browser.wait_for("document.querySelector('tr[data-slot=\"secret-slot\"]')", 10s));
  browser.open("http://127.0.0.1:" + std::to_string(other_port) + "/evil.html");
  CHECK(browser.wait_for("document.title === 'blocked'", 10s));
  browser.open("http://rebound.example:" + std::to_string(served.port()) + "/api/status");
  CHECK(browser.wait_for("document.body && document.body.textContent.includes('is not this server')", 10s));
  CHECK(browser.evaluate("document.body.textContent.includes('secret-slot')") == "false");
  other.stop();
  serving.join();
}

TEST_CASE("ServePage_HasATasksPanelThatFollowsTheQueue") {
  // ready, waiting (after another) and working tasks with their ages; a title with markup is text;
  // a close moves its row live (approved), counts included.
  if (chromium_path().empty()) FAIL("chromium is not installed: scripts/setup.sh installs it");
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"task", "add", "Parser", "--id", "A"}).exit == 0);
  REQUIRE(ws.swarm({"task", "add", "<img src=x onerror=alert(1)>", "--id", "B", "--after", "A"}).exit == 0);
  REQUIRE(ws.swarm({"task", "add", "Docs", "--id", "C"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "s1", "--task", "A"}).exit == 0);
  Served served(ws);
  HeadlessBrowser browser;
  browser.open(served.link());
  auto stands = [](const char* id) {
    return std::string("(document.querySelector('tr[data-task=\"") + id + "\"] .state') || {}).textContent";
  };
  REQUIRE(browser.wait_for(stands("A") + " === 'working'", 10s));
  CHECK(browser.evaluate(stands("B")) == "\"waiting\"");
  CHECK(browser.evaluate(stands("C")) == "\"ready\"");
  CHECK(browser.evaluate("document.querySelector('tr[data-task=\"A\"] td:nth-child(4)').textContent") == "\"s1\"");
  CHECK(browser.evaluate("document.querySelectorAll('img').length") == "0");
  CHECK(browser.evaluate("document.getElementById('task-counts').textContent.startsWith('1 ready, 1 waiting, 1 working')") ==
        "true");
  write_file(ws.worktree("s1") / "a.txt", "a\n");
  REQUIRE(ws.swarm({"commit", "--slot", "s1", "-m", "a"}).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "s1", "--result", "success"}).exit == 0);
  CHECK(browser.wait_for(stands("A") + " === 'approved'", 3s));
  REQUIRE(ws.swarm({"land", "--slot", "s1"}).exit == 0);
  CHECK(browser.wait_for(stands("A") + " === 'completed' && " + stands("B") + " === 'ready'", 3s));
}

TEST_CASE("ServePage_ShowsWhatEachAgentSays") {
  // renew --status/--note shows in the session's row, as text (markup in a note stays text), and a new
  // status reaches the page without a reload.
  if (chromium_path().empty()) FAIL("chromium is not installed: scripts/setup.sh installs it");
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  REQUIRE(ws.swarm({"renew", "--slot", "s", "--status", "blocked", "--note", "waiting for <b>API</b> review"}).exit == 0);
  Served served(ws);
  HeadlessBrowser browser;
  browser.open(served.link());
  const std::string doing = "(document.querySelector('tr[data-slot=\"s\"] .doing') || {}).textContent";
  REQUIRE(browser.wait_for(doing + " === 'blocked: waiting for <b>API</b> review'", 10s));
  CHECK(browser.evaluate("document.querySelectorAll('#sessions b, tr[data-slot] b').length") == "0");
  REQUIRE(ws.swarm({"renew", "--slot", "s", "--status", "working", "--note", "writing tests"}).exit == 0);
  CHECK(browser.wait_for(doing + " === 'working: writing tests'", 5s));
}

TEST_CASE("ServePage_ShowsInboxesAndNeverABody") {
  // The inboxes panel: each inbox and its unread count, following sends and acks; no message's body anywhere
  // on the page (the dashboard's readers are not every message's).
  if (chromium_path().empty()) FAIL("chromium is not installed: scripts/setup.sh installs it");
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"send", "--to", "a", "--from", "lead", "secret-body-one"}).exit == 0);
  REQUIRE(ws.swarm({"send", "--all", "--from", "lead", "secret-body-all"}).exit == 0);
  Served served(ws);
  HeadlessBrowser browser;
  browser.open(served.link());
  const std::string unread = "(document.querySelector('tr[data-inbox=\"a\"] .unread') || {}).textContent";
  REQUIRE(browser.wait_for(unread + " === '2'", 10s));
  REQUIRE(ws.swarm({"send", "--to", "a", "--from", "lead", "secret-body-two"}).exit == 0);
  CHECK(browser.wait_for(unread + " === '3'", 10s));
  REQUIRE(ws.swarm({"inbox", "--as", "a", "--ack"}).exit == 0);
  CHECK(browser.wait_for(unread + " === '0'", 10s));
  CHECK(browser.evaluate("document.body.textContent.includes('secret-body')") == "false");
}

namespace {

// Puts `text` (raw bytes: control characters, bidi overrides) in slot's
// session record as its note, the way any client of the server could:
// the record as swarm wrote it, its note rewritten.
void plant_note(SwarmWorkspace& ws, const std::string& slot, const std::string& placeholder,
                const std::string& json_text) {
  auto status = swarm::Json::parse(ws.swarm({"status", "--json"}).out);
  REQUIRE(status);
  const std::string bucket = cJSON_GetObjectItemCaseSensitive(status.get(), "bucket")->valuestring;
  RawNats raw(ws.server()->url());
  kvStore* kv = nullptr;
  REQUIRE(js_KeyValue(&kv, raw.js, bucket.c_str()) == NATS_OK);
  kvEntry* entry = nullptr;
  REQUIRE(kvStore_Get(&entry, kv, slot.c_str()) == NATS_OK);
  std::string record(kvEntry_ValueString(entry));
  kvEntry_Destroy(entry);
  const auto at = record.find(placeholder);
  REQUIRE_MESSAGE(at != std::string::npos, record);
  record.replace(at, placeholder.size(), json_text);
  uint64_t revision = 0;
  REQUIRE(kvStore_PutString(&revision, kv, slot.c_str(), record.c_str()) == NATS_OK);
  kvStore_Destroy(kv);
}

}  // namespace

TEST_CASE("ServePage_ShowsWhatAgentsSayAndCutsNothingThatMatters") {
  // At 1280 and 1920 px: each agent's status and note whole (a note of 200 bytes wraps, never cut), every
  // header, state, number, head and time whole (times as "3m ago", the date in the title); names may be cut, whole
  // in their title. A note's markup stays text, its control bytes and bidi overrides are shown, not obeyed.
  if (chromium_path().empty()) FAIL("chromium is not installed: scripts/setup.sh installs it");
  SwarmWorkspace ws;
  const std::string long_note = "rewriting the parser error recovery: " + std::string(140, 'x') + " <b>bold</b>";
  REQUIRE(long_note.size() <= 200);
  for (int i = 1; i <= 6; ++i) {
    auto host = kHostA;
    host["SWARM_HOST"] = "build-host-with-a-really-long-name-in-rack-" + std::to_string(i);
    host["SWARM_HOST_ID"] = "id-" + std::to_string(i);
    const std::string slot = "agent-" + std::to_string(i);
    REQUIRE(ws.swarm({"join", "--slot", slot, "--task", "PROJ-" + std::to_string(1000 + i) + " the renderer's long edge cases"},
                     host).exit == 0);
    const std::string note = i == 1 ? long_note : i == 2 ? "PLACEHOLDER" : "step " + std::to_string(i) + " of 9";
    REQUIRE(ws.swarm({"renew", "--slot", slot, "--status", i % 2 ? "working" : "waiting", "--note", note}, host).exit == 0);
  }
  plant_note(ws, "agent-2", "PLACEHOLDER", "red\\u001b[31m \\u202eevil\\u0007");
  // Tasks done, waiting and ready; a slot's branch ahead of main, closed and not landed.
  REQUIRE(ws.swarm({"task", "add", "finished work", "--id", "T-done"}).exit == 0);
  REQUIRE(ws.swarm({"task", "add", "still open", "--id", "T-open"}).exit == 0);
  REQUIRE(ws.swarm({"task", "add", "after it", "--id", "T-after", "--after", "T-open"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "lander", "--task", "T-done"}).exit == 0);
  write_file(ws.worktree("lander") / "l.txt", "l\n");
  REQUIRE(ws.swarm({"commit", "--slot", "lander", "-m", "l"}).exit == 0);
  REQUIRE(ws.swarm({"close", "--slot", "lander", "--result", "success"}).exit == 0);
  REQUIRE(ws.swarm({"land", "--slot", "lander"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "ahead-slot", "--task", "T-x"}).exit == 0);
  for (int i = 0; i < 3; ++i) {
    write_file(ws.worktree("ahead-slot") / ("a" + std::to_string(i)), "a\n");
    REQUIRE(ws.swarm({"commit", "--slot", "ahead-slot", "-m", "a" + std::to_string(i)}).exit == 0);
  }
  REQUIRE(ws.swarm({"close", "--slot", "ahead-slot", "--result", "success"}).exit == 0);
  Served served(ws);
  HeadlessBrowser browser;
  const std::string doing = "(document.querySelector('tr[data-slot=\"agent-1\"] .doing') || {}).textContent";
  const std::string whole = "[...document.querySelectorAll('th, td.state, td.num, td.time, td.head, td.doing')]";
  for (auto [w, h] : {std::pair{1280, 800}, std::pair{1920, 1080}}) {
    CAPTURE(w);
    browser.open(served.link(), w, h);
    REQUIRE(browser.wait_for(doing + " === 'working: " + long_note + "'", 10s));
    REQUIRE(browser.wait_for("(document.querySelector('tr[data-task=\"T-done\"] .state') || {}).textContent === 'completed'", 10s));
    REQUIRE(browser.wait_for("document.querySelector('tr[data-branch=\"ahead-slot\"]')", 10s));
    CHECK(browser.evaluate("document.querySelector('tr[data-slot=\"agent-3\"] .doing').textContent") == "\"working: step 3 of 9\"");
    CHECK(browser.evaluate("document.querySelectorAll('#sessions b').length") == "0");
    // Nothing that matters is cut: each such cell (and every header) holds its text whole, and is seen.
    const std::string cut = browser.evaluate(whole + ".filter(e => e.scrollWidth > e.clientWidth || e.clientWidth === 0)"
                                             ".map(e => e.textContent)");
    CHECK_MESSAGE(cut == "[]", "cut at ", w, " px: ", cut);
    CHECK(browser.evaluate(whole + ".length > 40") == "true");
    CHECK(browser.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth") == "true");
    // Times are relative, the date whole in the title.
    CHECK(browser.evaluate("/^(just now|\\d+[smhd] ago)$/.test("
                           "document.querySelector('tr[data-branch=\"ahead-slot\"] td:nth-child(5)').textContent)") == "true");
    CHECK(browser.evaluate("/^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC$/.test("
                           "document.querySelector('tr[data-branch=\"ahead-slot\"] td:nth-child(5)').title)") == "true");
    CHECK(browser.evaluate("document.querySelector('tr[data-branch=\"ahead-slot\"] td:nth-child(3)').textContent") == "\"3\"");
    // The planted note: its escape and bell are shown as such, its bidi override is not obeyed.
    const std::string planted = "document.querySelector('tr[data-slot=\"agent-2\"] .doing').textContent";
    CHECK(browser.evaluate("/[\\u0000-\\u001f\\u007f-\\u009f\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]/.test(" + planted + ")") ==
          "false");
    CHECK(browser.evaluate(planted + ".includes('red\\u241b[31m')") == "true");
    browser.screenshot((artifacts() / (w == 1280 ? "dashboard-agents.png" : "dashboard-agents-1920.png")).string());
  }
}
