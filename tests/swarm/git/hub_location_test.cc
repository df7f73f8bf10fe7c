// Hub locations as users give them to `swarm up --hub`, and the reachability probe.
#include <doctest/doctest.h>

#include "support/expect.h"
#include "support/nats_server.h"
#include "swarm/base/error.h"
#include "swarm/git/hub_location.h"

using namespace swarm;
using namespace std::chrono_literals;
using testing::kind_of;
using Transport = HubLocation::Transport;

TEST_CASE("HubLocation_ReadsEveryTransportWithItsHostAndPort") {
  struct Case {
    const char* given;
    Transport transport;
    const char* host;
    int port;
  };
  const Case cases[] = {
      {"ssh://git@build-1/srv/app.git", Transport::ssh, "build-1", 22},
      {"ssh://git@build-1:2222/srv/app.git", Transport::ssh, "build-1", 2222},
      {"ssh://build-1/~/app.git", Transport::ssh, "build-1", 22},
      {"git+ssh://git@10.0.0.7:2200/app.git", Transport::ssh, "10.0.0.7", 2200},
      {"git@build-1:srv/app.git", Transport::ssh, "build-1", 22},
      {"build-1:app.git", Transport::ssh, "build-1", 22},
      {"git://127.0.0.1:9419/app.git", Transport::git, "127.0.0.1", 9419},
      {"git://hub/app.git", Transport::git, "hub", 9418},
      {"http://hub/app.git", Transport::http, "hub", 80},
      {"https://user:secret@hub.example.com/org/app.git", Transport::https, "hub.example.com", 443},
      {"ssh://git@[::1]:2222/app.git", Transport::ssh, "::1", 2222},
  };
  for (const auto& c : cases) {
    CAPTURE(c.given);
    HubLocation hub = parse_hub_location(c.given, "/w");
    CHECK(hub.remote());
    CHECK(hub.transport == c.transport);
    CHECK(hub.host == c.host);
    CHECK(hub.port == c.port);
    CHECK(hub.text == c.given);  // what git is given, unchanged
  }
}

TEST_CASE("HubLocation_PathsAreLocalAndAbsolute") {
  CHECK(parse_hub_location("/srv/shared/app.git", "/w").text == "/srv/shared/app.git");
  CHECK(parse_hub_location("hubs/app.git", "/w").text == "/w/hubs/app.git");
  CHECK(parse_hub_location("./a:b", "/w").text == "/w/a:b");  // a slash before the colon: a path, as git reads it
  CHECK(parse_hub_location("file:///srv/x/../app.git", "/w").text == "/srv/app.git");
  CHECK_FALSE(parse_hub_location("/srv/app.git", "/w").remote());
  CHECK(parse_hub_location("/srv/app.git", "/w").session_url() == "file:///srv/app.git");
}

TEST_CASE("HubLocation_RefusesWhatNoGitCanPushTo") {
  for (const char* bad : {"", "ftp://hub/app.git", "foo://x/y", "ssh:///app.git", "ssh://host", "ssh://host/",
                          "git://host:0/app.git", "git://host:65536/app.git", "git://host:22x/app.git",
                          "ssh://[::1/app.git", "host:", "file://relative/path", "/srv/app\n.git", "a\tb"}) {
    CAPTURE(bad);
    CHECK(kind_of([&] { parse_hub_location(bad, "/w"); }) == Errc::bad_input);
  }
  try {
    parse_hub_location("ftp://hub/app.git", "/w");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("ftp://hub/app.git") != std::string::npos);  // names the value
  }
}

TEST_CASE("HubLocation_NeverShowsAPassword") {
  HubLocation hub = parse_hub_location("https://ann:s3cret@hub.example.com/app.git", "/w");
  CHECK(hub.shown() == "https://ann:***@hub.example.com/app.git");
  CHECK(hub.session_url() == hub.shown());
  CHECK(parse_hub_location("https://ann@hub.example.com/app.git", "/w").shown() ==
        "https://ann@hub.example.com/app.git");
  CHECK(parse_hub_location("git@hub:app.git", "/w").shown() == "git@hub:app.git");
  CHECK(hub.redact("could not reach https://ann:s3cret@hub.example.com") ==
        "could not reach https://ann:***@hub.example.com");
  try {
    parse_hub_location("https://ann:s3cret@hub:99999/app.git", "/w");
    FAIL("a bad port was taken");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("s3cret") == std::string::npos);  // not even in an error
    CHECK(std::string(e.what()).find("https://ann:***@hub:99999/app.git") != std::string::npos);
  }
}

TEST_CASE("HubLocation_ProbeTellsAClosedPortFromAnOpenOne") {
  testing::SilentListener open;
  HubLocation up = parse_hub_location("git://127.0.0.1:" + std::to_string(open.port()) + "/app.git", "/w");
  require_reachable(up, 2s);  // throws if it cannot connect
  HubLocation down = parse_hub_location("git://127.0.0.1:" + std::to_string(testing::free_port()) + "/app.git", "/w");
  auto start = std::chrono::steady_clock::now();
  CHECK(kind_of([&] { require_reachable(down, 2s); }) == Errc::unavailable);
  CHECK(std::chrono::steady_clock::now() - start < 2s);  // refused at once, not timed out
  HubLocation nowhere = parse_hub_location("ssh://no-such-host.invalid/app.git", "/w");
  CHECK(kind_of([&] { require_reachable(nowhere, 2s); }) == Errc::unavailable);
  require_reachable(parse_hub_location("/srv/app.git", "/w"), 2s);  // a path: nothing to probe
}
