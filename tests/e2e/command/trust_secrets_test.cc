// The trust boundaries around secrets (adr/0018): hub and NATS passwords that
// must never leak or travel in the clear, pushes that go only to the configured
// hub, and the embedded server's token, which only that server may receive.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "e2e/swarm_fixture.h"
#include "kv/bucket.h"

using namespace testing;
namespace fs = std::filesystem;

namespace {

std::string mode_of(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "missing";
  char text[8];
  std::snprintf(text, sizeof text, "%03o", st.st_mode & 0777);
  return text;
}

// A plain HTTP server that answers every request with 401 asking for Basic
// credentials, and keeps what it was sent: whether a password reached it.
class HttpTrap {
 public:
  HttpTrap() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    ::listen(fd_, 16);
    thread_ = std::thread([this] { serve(); });
  }
  ~HttpTrap() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  int port() const { return port_; }
  int connections() const { return connections_; }
  std::string requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void serve() {
    while (!stop_) {
      int client = ::accept(fd_, nullptr, nullptr);
      if (client < 0) return;
      ++connections_;
      timeval tv{2, 0};
      ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      char buffer[4096];
      ssize_t n = ::recv(client, buffer, sizeof buffer, 0);
      if (n > 0) {
        std::lock_guard lock(mutex_);
        requests_.append(buffer, static_cast<std::size_t>(n));
      }
      const std::string reply =
          "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"trap\"\r\nContent-Length: 0\r\n"
          "Connection: close\r\n\r\n";
      (void)!::send(client, reply.data(), reply.size(), MSG_NOSIGNAL);
      ::close(client);
    }
  }
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::mutex mutex_;
  std::string requests_;
  std::thread thread_;
};

// A plain TCP listener on 127.0.0.1:`port` that greets like a NATS server
// and keeps what clients send it: what a local user squatting a workspace's
// port while its server is down would see.
class FakeNats {
 public:
  explicit FakeNats(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int yes = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::listen(fd_, 16);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeNats() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  bool bound() const { return bound_; }
  std::string received() {
    std::lock_guard lock(mutex_);
    return received_;
  }

 private:
  void serve() {
    while (!stop_) {
      int client = ::accept(fd_, nullptr, nullptr);
      if (client < 0) return;
      const std::string info = "INFO {\"server_id\":\"fake\",\"version\":\"2.9.10\",\"proto\":1,\"headers\":true,"
                               "\"max_payload\":1048576,\"auth_required\":true}\r\n";
      (void)!::send(client, info.data(), info.size(), MSG_NOSIGNAL);
      timeval tv{1, 0};
      ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      char buffer[4096];
      ssize_t n = ::recv(client, buffer, sizeof buffer, 0);
      if (n > 0) {
        std::lock_guard lock(mutex_);
        received_.append(buffer, static_cast<std::size_t>(n));
      }
      const std::string no = "-ERR 'Authorization Violation'\r\n";
      (void)!::send(client, no.data(), no.size(), MSG_NOSIGNAL);
      ::close(client);
    }
  }
  int fd_ = -1;
  bool bound_ = false;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::string received_;
  std::thread thread_;
};

std::string embedded_url(const SwarmWorkspace& ws) {
  return field(swarm::Json::parse(read_file(ws.root() / ".swarm/config.json")), "nats_url");
}

}  // namespace

TEST_CASE("Trust_PushesGoToTheConfiguredHubWhateverTheCloneSays") {
  // origin repointed, a pushurl and an insteadOf: commit and close still push to config.json's hub, and only there.
  SwarmWorkspace ws;
  HttpTrap trap;
  TempDir other{"swarm-other-hub"};
  REQUIRE(ws.git({"init", "-q", "--bare", (other / "elsewhere.git").string()}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  const fs::path wt = ws.worktree("s");
  const std::string trap_url = "http://127.0.0.1:" + std::to_string(trap.port()) + "/x.git";
  REQUIRE(ws.git({"remote", "set-url", "origin", trap_url}, wt).exit == 0);
  REQUIRE(ws.git({"config", "remote.origin.pushurl", trap_url}, wt).exit == 0);
  const std::string hub = (ws.root() / ".swarm/hub.git").string();
  REQUIRE(ws.git({"config", "url." + (other / "elsewhere.git").string() + ".insteadOf", hub}, wt).exit == 0);
  write_file(wt / "a.txt", "a\n");
  auto commit = ws.swarm({"commit", "--slot", "s", "-m", "a", "--json"},
                         {{"SWARM_HOST", "host-a"}, {"SWARM_HOST_ID", "id-a"}, {"SWARM_HUB_USERNAME", "ops"},
                          {"SWARM_HUB_PASSWORD", "hub-secret-123"}});
  REQUIRE_MESSAGE(commit.exit == 0, commit.err);
  CHECK(field(json_of(commit), "commit").size() == 40);
  CHECK(cJSON_IsTrue(cJSON_GetObjectItem(json_of(commit).get(), "pushed")));
  CHECK(ws.git({"--git-dir", hub, "rev-parse", "swarm/s"}).out.substr(0, 40) == field(json_of(commit), "commit"));
  CHECK(trap.connections() == 0);
  CHECK(ws.git({"--git-dir", (other / "elsewhere.git").string(), "for-each-ref"}).out.empty());
  // close salvages history to the hub the same way.
  REQUIRE(ws.git({"checkout", "-q", "-b", "side"}, wt).exit == 0);
  REQUIRE(ws.git({"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "side"}, wt).exit == 0);
  auto close = ws.swarm({"close", "--slot", "s", "--result", "fail", "--json"});
  REQUIRE_MESSAGE(close.exit == 0, close.err);
  CHECK(ws.git({"--git-dir", hub, "for-each-ref", "refs/recovery/"}).out.find("side") != std::string::npos);
  CHECK(trap.connections() == 0);
  CHECK(ws.git({"--git-dir", (other / "elsewhere.git").string(), "for-each-ref"}).out.empty());
}

TEST_CASE("Trust_APasswordIsNeverSentOverPlainHttp") {
  // a password in an http:// hub URL, or $SWARM_HUB_PASSWORD for one: exit 2 naming the URL, nothing sent.
  SwarmWorkspace ws({.up = false});
  HttpTrap trap;
  const std::string host = "127.0.0.1:" + std::to_string(trap.port());
  auto in_url = ws.swarm({"up", "--nats-url", "nats://127.0.0.1:1", "--hub", "http://ops:url-secret-9@" + host + "/x.git"});
  CHECK(in_url.exit == 2);
  CHECK(in_url.err.find("http://ops:***@" + host) != std::string::npos);
  CHECK(in_url.err.find("url-secret-9") == std::string::npos);
  auto in_env = ws.swarm({"up", "--nats-url", ws.server()->url(), "--hub", "http://" + host + "/x.git"},
                         {{"SWARM_HOST", "host-a"}, {"SWARM_HOST_ID", "id-a"}, {"SWARM_HUB_USERNAME", "ops"},
                          {"SWARM_HUB_PASSWORD", "env-secret-7"}});
  CHECK(in_env.exit == 2);
  CHECK(in_env.err.find("http://") != std::string::npos);
  CHECK(in_env.err.find("env-secret-7") == std::string::npos);
  CHECK(trap.connections() > 0);  // it asked: the hub was reached
  CHECK(trap.requests().find("Authorization") == std::string::npos);
}

TEST_CASE("Trust_NatsPasswordsAppearInNoOutput") {
  // nats://alice:PW@...: up, doctor (text and --json) and connection errors never print PW; config.json is 0600.
  NatsServer server({.name = "auth", .extra_args = {"--user", "alice", "--pass", "nats-secret-42"}});
  SwarmWorkspace ws({.up = false, .own_server = false});
  const std::string url = "nats://alice:nats-secret-42@127.0.0.1:" + std::to_string(server.port());
  std::vector<RunResult> outputs;
  outputs.push_back(ws.swarm({"up", "--nats-url", url}));
  REQUIRE_MESSAGE(outputs.back().exit == 0, outputs.back().err);
  CHECK(mode_of(ws.root() / ".swarm/config.json") == "600");
  outputs.push_back(ws.swarm({"up", "--nats-url", url, "--json"}));
  outputs.push_back(ws.swarm({"doctor"}));
  outputs.push_back(ws.swarm({"doctor", "--json"}));
  outputs.push_back(ws.swarm({"status"}));
  // A refused and an unreachable server name the URL in their errors.
  const std::string wrong = "nats://alice:wrong-secret-5@127.0.0.1:" + std::to_string(server.port());
  outputs.push_back(ws.swarm({"status", "--nats-url", wrong}));
  CHECK(outputs.back().exit == 2);
  outputs.push_back(ws.swarm({"status", "--json", "--nats-url", "nats://alice:gone-secret-6@127.0.0.1:1"}));
  CHECK(outputs.back().exit == 7);
  outputs.push_back(ws.swarm({"status", "--nats-url", "nats://alice:bad-secret-8@127.0.0.1:99999"}));
  CHECK(outputs.back().exit == 2);
  for (const auto& r : outputs)
    for (const char* secret : {"nats-secret-42", "wrong-secret-5", "gone-secret-6", "bad-secret-8"}) {
      CHECK_MESSAGE(r.out.find(secret) == std::string::npos, r.out);
      CHECK_MESSAGE(r.err.find(secret) == std::string::npos, r.err);
    }
  CHECK(outputs[0].out.find("alice:***@") != std::string::npos);
}

TEST_CASE("Trust_CredentialsComeFromTheEnvironmentAndANatsContext") {
  // $NATS_USER/$NATS_PASSWORD, and a nats CLI context, log in with no secret on the command line.
  NatsServer server({.name = "auth", .extra_args = {"--user", "bob", "--pass", "ctx-secret-3"}});
  SwarmWorkspace ws({.up = false, .own_server = false});
  auto host_env = [](std::map<std::string, std::string> more) {
    more["SWARM_HOST"] = "host-a";
    more["SWARM_HOST_ID"] = "id-a";
    return more;
  };
  auto up = ws.swarm({"up", "--nats-url", server.url()}, host_env({{"NATS_USER", "bob"}, {"NATS_PASSWORD", "ctx-secret-3"}}));
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  CHECK(ws.swarm({"status"}).exit == 2);  // no credential: refused by the server
  write_file(ws.home() / "config/nats/context/team.json",
             R"({"description":"test","url":")" + server.url() + R"(","user":"bob","password":"ctx-secret-3"})");
  auto by_context = ws.swarm({"status", "--context", "team"});
  CHECK_MESSAGE(by_context.exit == 0, by_context.err);
  CHECK(ws.swarm({"status"}, host_env({{"NATS_CONTEXT", "team"}})).exit == 0);
  auto missing = ws.swarm({"status", "--context", "nope"});
  CHECK(missing.exit == 2);
  CHECK(missing.err.find("nope") != std::string::npos);
  // The password flag reads $NATS_PASSWORD too, so `ps` need never show it.
  CHECK(ws.swarm({"status", "--user", "bob"}, host_env({{"NATS_PASSWORD", "ctx-secret-3"}})).exit == 0);
}

TEST_CASE("Trust_TheEmbeddedServerRefusesClientsWithoutTheToken") {
  // up makes a token (0600) that every verb sends; an anonymous client is refused; down/up keep the token.
  SwarmWorkspace ws({.embedded = true});
  const fs::path nats = ws.root() / ".swarm/nats";
  CHECK(mode_of(nats / "token") == "600");
  CHECK(mode_of(nats / "server.conf") == "600");
  const std::string token = read_file(nats / "token");
  CHECK(token.size() >= 33);
  std::string url;
  {
    auto config = swarm::Json::parse(read_file(ws.root() / ".swarm/config.json"));
    url = field(config, "nats_url");
  }
  REQUIRE(!url.empty());
  try {
    kv::Connection::connect({.urls = {url}});
    FAIL("an anonymous client was let in");
  } catch (const kv::Error& e) {
    CHECK(e.kind() == kv::Errc::bad_request);
  }
  CHECK(kv::Connection::connect({.urls = {url}, .token = token.substr(0, token.find('\n'))}).connected_url() != "");
  // The token is on no command line: any user can read those.
  std::ifstream pid_file(nats / "nats.pid");
  long pid = 0;
  pid_file >> pid;
  REQUIRE(pid > 0);
  std::string cmdline = read_file("/proc/" + std::to_string(pid) + "/cmdline");
  CHECK(cmdline.find(token.substr(0, 16)) == std::string::npos);
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  REQUIRE(ws.swarm({"down"}).exit == 0);
  REQUIRE(ws.swarm({"up"}).exit == 0);
  CHECK(read_file(nats / "token") == token);
  CHECK(ws.swarm({"status", "--slot", "s"}).exit == 0);
}

TEST_CASE("Trust_AnOpenEmbeddedServerGetsTheTokenAtTheNextUp") {
  // a server an older swarm started without a token is started again with one by `up`; doctor names it before.
  SwarmWorkspace ws({.embedded = true});
  const fs::path nats = ws.root() / ".swarm/nats";
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  REQUIRE(ws.swarm({"down"}).exit == 0);
  // What an older `up` left: an open server on the store, and no token.
  std::string url = field(swarm::Json::parse(read_file(ws.root() / ".swarm/config.json")), "nats_url");
  const std::string port = url.substr(url.rfind(':') + 1);
  fs::remove(nats / "token");
  fs::remove(nats / "server.conf");
  std::string program;
  {
    std::istringstream path(std::getenv("PATH") ? std::getenv("PATH") : "");
    for (std::string dir; std::getline(path, dir, ':');)
      if (program.empty() && ::access((fs::path(dir) / "nats-server").c_str(), X_OK) == 0)
        program = (fs::path(dir) / "nats-server").string();
  }
  REQUIRE(!program.empty());
  Process old({{program, "-js", "-a", "127.0.0.1", "-p", port, "-sd", (nats / "data").string(), "-l",
                (nats / "nats.log").string(), "-P", (nats / "nats.pid").string(), "--server_name", "swarm-embedded"}});
  for (int i = 0; i < 200 && !accepts_connections(std::stoi(port)); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::string stat = read_file("/proc/" + std::to_string(old.pid()) + "/stat");
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string item, ticks;
  for (int i = 3; i <= 22 && fields >> item; ++i) ticks = item;
  write_file(nats / "server.json", R"({"pid":)" + std::to_string(old.pid()) + R"(,"start_ticks":)" + ticks +
                                       R"(,"exe":"","url":")" + url + R"(","store":")" + (nats / "data").string() + "\"}\n");
  CHECK_NOTHROW(kv::Connection::connect({.urls = {url}}));  // open, as it was
  auto doctor = ws.swarm({"doctor"});
  CHECK(doctor.out.find("lets any local user in") != std::string::npos);
  auto up = ws.swarm({"up"});
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  CHECK_THROWS_AS(kv::Connection::connect({.urls = {url}}), kv::Error);
  CHECK(ws.swarm({"status", "--slot", "s"}).exit == 0);  // its records kept
  old.wait(std::chrono::seconds(10));
}

TEST_CASE("Trust_EveryFormOfANatsSecretIsRedacted") {
  // a URL without its scheme, a password with '/' or '@' in it: never printed, not even by a debug line.
  NatsServer server({.name = "auth", .extra_args = {"--user", "carol", "--pass", "sl/ash-secret-31"}});
  SwarmWorkspace ws({.up = false, .own_server = false});
  const std::string bare = "carol:sl/ash-secret-31@127.0.0.1:" + std::to_string(server.port());
  auto up = ws.swarm({"up", "--nats-url", bare});
  REQUIRE_MESSAGE(up.exit == 0, up.err);
  CHECK(mode_of(ws.root() / ".swarm/config.json") == "600");
  std::vector<RunResult> outputs = {up, ws.swarm({"--log-level", "debug", "status"}), ws.swarm({"doctor"}),
                                    ws.swarm({"doctor", "--json"}),
                                    ws.swarm({"status", "--nats-url", "nats://carol:at@sign-secret-32@127.0.0.1:1"})};
  for (const auto& r : outputs)
    for (const char* secret : {"sl/ash-secret-31", "ash-secret-31", "sign-secret-32"}) {
      CHECK_MESSAGE(r.out.find(secret) == std::string::npos, r.out);
      CHECK_MESSAGE(r.err.find(secret) == std::string::npos, r.err);
    }
}

TEST_CASE("Trust_TheTokenGoesOnlyToTheWorkspacesOwnServer") {
  // the embedded server is down and another process listens on its port: verbs send it no token.
  SwarmWorkspace ws({.embedded = true});
  const std::string token = read_file(ws.root() / ".swarm/nats/token").substr(0, 48);
  const std::string url = embedded_url(ws);
  const int port = std::stoi(url.substr(url.rfind(':') + 1));
  long pid = 0;
  std::ifstream(ws.root() / ".swarm/nats/nats.pid") >> pid;
  REQUIRE(pid > 0);
  ::kill(static_cast<pid_t>(pid), SIGKILL);
  for (int i = 0; i < 200 && accepts_connections(port); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  {
    FakeNats squatter(port);
    REQUIRE(squatter.bound());
    auto r = ws.swarm({"--timeout", "2s", "status"});
    CHECK(r.exit != 0);
    CHECK(squatter.received().find("CONNECT") != std::string::npos);  // it did connect...
    CHECK(squatter.received().find(token) == std::string::npos);      // ...and got no token
  }
  REQUIRE(ws.swarm({"up"}).exit == 0);
  CHECK(ws.swarm({"status"}).exit == 0);
}
