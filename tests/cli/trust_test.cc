// The trust boundaries (adr/0018), each tried with the attack planted: links
// in .swarm/, a clone whose remote points elsewhere, passwords that must not
// leak, an anonymous client of the embedded server, hostile records, and a
// replaced agent acting with its old session token.
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

#include "cli/swarm_fixture.h"
#include "kv/bucket.h"
#include "swarm/text.h"

using namespace testing;
namespace fs = std::filesystem;

namespace {

// A folder outside the workspace with files in it: what an attack would harm.
struct Victim {
  TempDir dir{"swarm-victim"};
  Victim() {
    write_file(dir / "precious.txt", "keep me\n");
    write_file(dir / "sub/deep.txt", "keep me too\n");
    // Names of the shapes swarm deletes or moves, should it ever look here.
    write_file(dir / "s.20261122T100000.123Z.1/inside.txt", "trash-shaped\n");
    write_file(dir / "wt/file.txt", "worktree-shaped\n");
  }
  fs::path path() const { return dir.path(); }
  // Every file as it was planted.
  bool intact() const {
    return read_file(dir / "precious.txt") == "keep me\n" && read_file(dir / "sub/deep.txt") == "keep me too\n" &&
           read_file(dir / "s.20261122T100000.123Z.1/inside.txt") == "trash-shaped\n" &&
           read_file(dir / "wt/file.txt") == "worktree-shaped\n";
  }
};

void replace_with_link(const fs::path& path, const fs::path& target) {
  std::error_code ec;
  fs::remove_all(path, ec);
  fs::create_directory_symlink(target, path);
}

std::string mode_of(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "missing";
  char text[8];
  std::snprintf(text, sizeof text, "%03o", st.st_mode & 0777);
  return text;
}

bool has_control_bytes(const std::string& text) {
  for (unsigned char c : text)
    if ((c < 0x20 && c != '\n') || c == 0x7f) return true;
  return false;
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

kv::Bucket sessions_of(SwarmWorkspace& ws, std::optional<kv::Connection>& keep) {
  keep.emplace(kv::Connection::connect({.urls = {ws.server()->url()}}));
  return kv::Bucket::open(*keep, "swarm-sessions");
}

}  // namespace

TEST_CASE("Trust_ATrashThatIsALinkIsReportedAndNothingItNamesIsDeleted") {
  // .swarm/trash made a link to a folder elsewhere: doctor --fix reports it and deletes nothing there.
  SwarmWorkspace ws;
  Victim victim;
  replace_with_link(ws.root() / ".swarm/trash", victim.path());
  auto r = ws.swarm({"doctor", "--fix", "--json"});
  CHECK(r.exit == 8);
  CHECK(r.out.find("unsafe_path") != std::string::npos);
  CHECK(r.out.find(".swarm/trash") != std::string::npos);
  CHECK(victim.intact());
  // Verbs that would use it refuse before changing anything (exit 2, naming it).
  auto join = ws.swarm({"join", "--slot", "s", "--task", "T-1"});
  CHECK(join.exit == 2);
  CHECK(join.err.find(".swarm/trash") != std::string::npos);
  CHECK(ws.swarm({"status", "--slot", "s"}).exit == 4);  // no record was left behind
  CHECK(victim.intact());
}

TEST_CASE("Trust_ASlotFolderThatIsALinkIsNoOrphanAndIsNeverEmptied") {
  // .swarm/slots/evil made a link to a folder elsewhere: reported, never salvaged into .swarm/recovery/.
  SwarmWorkspace ws;
  Victim victim;
  fs::create_directories(ws.root() / ".swarm/slots");
  fs::create_directory_symlink(victim.path(), ws.root() / ".swarm/slots/evil");
  auto r = ws.swarm({"doctor", "--fix"});
  CHECK(r.exit == 8);
  CHECK(r.out.find("[unsafe_path]") != std::string::npos);
  CHECK(r.out.find("evil") != std::string::npos);
  CHECK(r.out.find("orphan_folder") == std::string::npos);
  CHECK(victim.intact());
  CHECK(fs::is_symlink(ws.root() / ".swarm/slots/evil"));
  std::error_code ec;
  const bool nothing_recovered = !fs::exists(ws.root() / ".swarm/recovery") || fs::is_empty(ws.root() / ".swarm/recovery", ec);
  CHECK(nothing_recovered);
  // A verb on that slot refuses, naming it.
  auto join = ws.swarm({"join", "--slot", "evil", "--task", "T-1"});
  CHECK(join.exit == 2);
  CHECK(join.err.find("evil") != std::string::npos);
  CHECK(victim.intact());
}

TEST_CASE("Trust_CrumbsThatAreLinksAreReplacedNeverWrittenThrough") {
  // leaf.pid and the salvaging mark planted as links: join --force and close replace them, the targets stay.
  SwarmWorkspace ws;
  Victim victim;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  const fs::path folder = ws.root() / ".swarm/slots/s";
  fs::remove(folder / "leaf.pid");
  fs::create_symlink(victim.path() / "precious.txt", folder / "leaf.pid");
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1", "--force"}).exit == 0);
  CHECK(victim.intact());
  CHECK_FALSE(fs::is_symlink(folder / "leaf.pid"));
  fs::create_symlink(victim.path() / "sub/deep.txt", folder / "salvaging");
  write_file(ws.worktree("s") / "scratch.txt", "uncommitted\n");
  auto close = ws.swarm({"close", "--slot", "s", "--result", "fail"});
  CHECK_MESSAGE(close.exit == 0, close.err);
  CHECK(victim.intact());
  CHECK_FALSE(fs::exists(folder));
}

TEST_CASE("Trust_ALockFileThatIsALinkIsRefusedAndItsTargetKept") {
  // .swarm/locks/slot.<slot> as a link: commit refuses (exit 2, naming it) instead of truncating the target.
  SwarmWorkspace ws;
  Victim victim;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  const fs::path lock = ws.root() / ".swarm/locks/slot.s";
  fs::remove(lock);
  fs::create_symlink(victim.path() / "precious.txt", lock);
  write_file(ws.worktree("s") / "a.txt", "a\n");
  auto r = ws.swarm({"commit", "--slot", "s", "-m", "a"});
  CHECK(r.exit == 2);
  CHECK(r.err.find("slot.s") != std::string::npos);
  CHECK(victim.intact());
  CHECK(ws.swarm({"renew", "--slot", "s"}).exit == 0);  // renew takes no lock file
  CHECK(victim.intact());
}

TEST_CASE("Trust_AWorktreeThatIsALinkIsRefusedAndNothingIsMovedOutOfIt") {
  // the slot's wt replaced by a link to another folder: close and commit refuse; the folder keeps its files.
  SwarmWorkspace ws;
  Victim victim;
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  replace_with_link(ws.worktree("s"), victim.path());
  auto close = ws.swarm({"close", "--slot", "s", "--result", "fail"});
  CHECK(close.exit == 2);
  CHECK(close.err.find("slots/s/wt") != std::string::npos);
  CHECK(ws.swarm({"commit", "--slot", "s", "-m", "x"}).exit == 2);
  CHECK(ws.swarm({"status", "--slot", "s"}).exit == 0);  // the session stands
  CHECK(victim.intact());
  auto doctor = ws.swarm({"doctor", "--fix"});
  CHECK(doctor.out.find("[unsafe_path]") != std::string::npos);
  CHECK(victim.intact());
}

TEST_CASE("Trust_OnlyTrashEntriesOfSwarmsShapeAreDeleted") {
  // a folder someone put in .swarm/trash under another name is left alone.
  SwarmWorkspace ws;
  write_file(ws.root() / ".swarm/trash/not-ours/file.txt", "mine\n");
  write_file(ws.root() / ".swarm/trash/s.20261122T100000.123Z.77/old.txt", "salvaged already\n");
  auto r = ws.swarm({"doctor", "--fix"});
  CHECK(read_file(ws.root() / ".swarm/trash/not-ours/file.txt") == "mine\n");
  CHECK_FALSE(fs::exists(ws.root() / ".swarm/trash/s.20261122T100000.123Z.77"));
}

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

TEST_CASE("Trust_HostileRecordsCannotDriveTheTerminalOrBreakJson") {
  // a record with ESC/CR in it shows escaped; one of invalid UTF-8 is corrupt; --json parses as UTF-8 JSON.
  SwarmWorkspace ws;
  std::optional<kv::Connection> keep;
  auto bucket = sessions_of(ws, keep);
  bucket.create("esc", R"({"slot":"esc","host":"h\u001b[2J","task_id":"T\u001b]0;pwned\u0007\rFAKE  ROW"})");
  bucket.create("utf", std::string(R"({"slot":"utf","host":"h","task_id":"bad )") + "\xff\xfe" + R"("})");
  bucket.create("raw", std::string(R"({"slot":"raw","host":"h","task_id":"a)") + "\x1b" + R"(b"})");
  auto status = ws.swarm({"status"});
  REQUIRE(status.exit == 0);
  CHECK_FALSE(has_control_bytes(status.out));
  CHECK(status.out.find("\\x1b]0;pwned") != std::string::npos);
  CHECK(status.out.find("utf") != std::string::npos);
  CHECK(status.out.find("corrupt: the value is not valid UTF-8") != std::string::npos);
  CHECK(status.out.find("corrupt: a string in the value holds a raw control character") != std::string::npos);
  auto json = ws.swarm({"status", "--json"});
  REQUIRE(json.exit == 0);
  CHECK(swarm::is_valid_utf8(json.out));
  CHECK(swarm::strict_json_problem(json.out).empty());
  CHECK(json_of(json));
  auto doctor = ws.swarm({"doctor"});
  CHECK_FALSE(has_control_bytes(doctor.out));
  CHECK(swarm::is_valid_utf8(ws.swarm({"doctor", "--json"}).out));
  // A hostile lease holder, in lease list.
  auto leases = kv::Bucket::open(*keep, "swarm-leases");
  leases.create("evil", R"({"name":"evil","holder":"x\u001b[31mred\r","host":"h","ttl_ms":60000,"token":0})");
  auto list = ws.swarm({"lease", "list"});
  REQUIRE(list.exit == 0);
  CHECK_FALSE(has_control_bytes(list.out));
  CHECK(list.out.find("\\x1b[31mred") != std::string::npos);
  // Errors quoting a record are escaped too (a bad name, echoed back).
  auto bad = ws.swarm({"join", "--slot", "s", "--task", "T\x1b[2J"});
  CHECK(bad.exit == 2);
  CHECK_FALSE(has_control_bytes(bad.err));
}

TEST_CASE("Trust_AReplacedAgentCannotActOnItsSuccessorsSession") {
  // join --env gives the agent its session token; after a successor's join --force its close, commit and renew exit 3.
  SwarmWorkspace ws;
  auto first = ws.swarm({"join", "--slot", "s", "--task", "T-1", "--env"});
  REQUIRE_MESSAGE(first.exit == 0, first.err);
  CHECK(first.out.find("export SWARM_SLOT='s'\n") != std::string::npos);
  CHECK(first.out.find("export SWARM_WORKTREE='" + fs::weakly_canonical(ws.worktree("s")).string() + "'") !=
        std::string::npos);
  auto at = first.out.find("export SWARM_SESSION=");
  REQUIRE(at != std::string::npos);
  const std::string old_token = first.out.substr(at + 21, first.out.find('\n', at) - at - 21);
  // The token survives renewals: still the same session.
  REQUIRE(ws.swarm({"renew", "--slot", "s", "--session", old_token}).exit == 0);
  REQUIRE(ws.swarm({"renew", "--slot", "s", "--session", old_token}).exit == 0);
  auto successor = ws.swarm({"join", "--slot", "s", "--task", "T-2", "--force", "--json"});
  REQUIRE(successor.exit == 0);
  const double new_token = number(json_of(successor), "session_token");
  CHECK(new_token > std::stod(old_token));
  write_file(ws.worktree("s") / "successor.txt", "the successor's work\n");
  std::map<std::string, std::string> old_agent = {{"SWARM_HOST", "host-a"}, {"SWARM_HOST_ID", "id-a"},
                                                  {"SWARM_SESSION", old_token}};
  for (auto args : std::vector<std::vector<std::string>>{{"close", "--slot", "s", "--result", "fail"},
                                                         {"commit", "--slot", "s", "-m", "old"},
                                                         {"renew", "--slot", "s"}}) {
    auto r = ws.swarm(args, old_agent);
    CHECK_MESSAGE(r.exit == 3, args[0] << ": " << r.err);
    CHECK(r.err.find("T-2") != std::string::npos);  // names the session that holds the slot now
  }
  CHECK(read_file(ws.worktree("s") / "successor.txt") == "the successor's work\n");
  auto status = json_of(ws.swarm({"status", "--json", "--slot", "s"}));
  const cJSON* session = cJSON_GetArrayItem(cJSON_GetObjectItem(status.get(), "sessions"), 0);
  REQUIRE(session != nullptr);
  CHECK(cJSON_GetObjectItem(session, "session_token")->valuedouble == new_token);
  CHECK(std::string(cJSON_GetObjectItem(session, "task_id")->valuestring) == "T-2");
  // The successor's own token works; no token at all is host ownership, as before.
  CHECK(ws.swarm({"renew", "--slot", "s", "--session", std::to_string(static_cast<long long>(new_token))}).exit == 0);
  CHECK(ws.swarm({"renew", "--slot", "s", "--session", "abc"}).exit == 2);
  CHECK(ws.swarm({"close", "--slot", "s", "--result", "fail"}).exit == 0);
}

TEST_CASE("Trust_AnOrphanSwappedForALinkWhileDoctorFixesIt") {
  // race, through the real binary: an orphan slot folder is swapped for a link to another folder (and back)
  // while `doctor --fix` lists, salvages and removes it, 25 times; the other folder never loses a file.
  SwarmWorkspace ws;
  Victim victim;
  const fs::path slot = ws.root() / ".swarm/slots/x";
  const fs::path aside = ws.root() / ".swarm/slots/x-real";
  for (int round = 0; round < 25; ++round) {
    std::error_code ec;
    fs::remove_all(slot, ec);
    fs::remove_all(aside, ec);
    write_file(slot / "beside.txt", "the orphan's file\n");
    std::atomic<bool> stop{false};
    std::thread swapper([&] {
      while (!stop) {
        if (::rename(slot.c_str(), aside.c_str()) != 0) continue;
        ::symlink(victim.path().c_str(), slot.c_str());
        ::usleep(static_cast<useconds_t>(50 + round * 20));
        ::unlink(slot.c_str());
        ::rename(aside.c_str(), slot.c_str());
      }
    });
    auto r = ws.swarm({"doctor", "--fix"});
    stop = true;
    swapper.join();
    CHECK_MESSAGE((r.exit == 0 || r.exit == 8), "exit " << r.exit << ": " << r.err);
    REQUIRE(victim.intact());
  }
}

namespace {

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

TEST_CASE("Trust_AHardLinkIsNoFileOfSwarmsOwn") {
  // a lock file planted as a hard link to a file elsewhere: refused (exit 2), the file keeps its bytes.
  SwarmWorkspace ws;
  Victim victim;
  fs::create_directories(ws.root() / ".swarm/locks");
  fs::create_hard_link(victim.path() / "precious.txt", ws.root() / ".swarm/locks/slot.evil");
  auto r = ws.swarm({"join", "--slot", "evil", "--task", "T-1"});
  CHECK(r.exit == 2);
  CHECK(r.err.find("slot.evil") != std::string::npos);
  CHECK(r.err.find("hard link") != std::string::npos);
  CHECK(victim.intact());
}

TEST_CASE("Trust_FilesTheEmbeddedServerOpensByPathAreNeverLinks") {
  // nats.log planted as a link: up refuses (exit 2) before the server would append to what it names; doctor says so.
  SwarmWorkspace ws({.embedded = true});
  Victim victim;
  REQUIRE(ws.swarm({"down"}).exit == 0);
  const fs::path log = ws.root() / ".swarm/nats/nats.log";
  fs::remove(log);
  fs::create_symlink(victim.path() / "precious.txt", log);
  auto up = ws.swarm({"up"});
  CHECK(up.exit == 2);
  CHECK(up.err.find("nats.log") != std::string::npos);
  CHECK(victim.intact());
  CHECK(ws.swarm({"doctor"}).out.find("[unsafe_path]") != std::string::npos);
  fs::remove(log);
  CHECK(ws.swarm({"up"}).exit == 0);
  CHECK(victim.intact());
}

TEST_CASE("Trust_TheHubsRepackLockIsNeverFollowed") {
  // the repack's lock file in the hub planted as a link: the repack refuses, and creates nothing where it points.
  SwarmWorkspace ws;
  TempDir elsewhere{"swarm-elsewhere"};
  const fs::path target = elsewhere / "created-by-repack";
  fs::create_symlink(target, ws.root() / ".swarm/hub.git/swarm-repack.lock");
  auto r = ws.swarm({"_repack-hub"});
  CHECK(r.exit == 2);
  CHECK_FALSE(fs::exists(target));
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

TEST_CASE("Trust_RecordTextIsEscapedInDebugLines") {
  // a hostile holder quoted by --log-level debug lines reaches the terminal escaped.
  SwarmWorkspace ws;
  {
    auto connection = kv::Connection::connect({.urls = {ws.server()->url()}});
    kv::Bucket::open(connection, "swarm-leases")
        .create("evil2", R"({"name":"evil2","holder":"x\u001b]0;PWNED\u0007\u001b[31mred","host":"h","ttl_ms":60000})");
  }
  auto r = ws.swarm({"--log-level", "debug", "lock", "evil2", "--wait", "1s", "--", "true"});
  CHECK(r.exit == 3);
  CHECK(r.err.find("PWNED") != std::string::npos);
  CHECK_FALSE(has_control_bytes(r.err));
}

TEST_CASE("Trust_AFilesystemRefusalIsExit9NamingThePath") {
  // a workspace path under a file: the filesystem refuses, exit 9 naming it (not an internal error).
  SwarmWorkspace ws({.up = false});
  write_file(ws.root() / "plain-file", "x\n");
  auto r = ws.swarm({"up", "--workspace", (ws.root() / "plain-file/ws").string(), "--nats-url", ws.server()->url()});
  CHECK(r.exit == 9);
  CHECK(r.err.find("plain-file") != std::string::npos);
}

TEST_CASE("Trust_AnotherUsersProcessIsNeverSignalled") {
  // a process of another user that looks like a server on the workspace's store: down and up leave it alone.
  if (::geteuid() != 0) return;  // only root can run a process as another user here
  SwarmWorkspace ws({.embedded = true});
  const std::string store = (ws.root() / ".swarm/nats/data").string();
  Process impostor({{"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/bash", "-c",
                     "exec -a nats-server /bin/sh -c 'sleep 30; exit 0' x -sd " + store}});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  REQUIRE(::kill(impostor.pid(), 0) == 0);
  REQUIRE(ws.swarm({"down"}).exit == 0);
  REQUIRE(ws.swarm({"up"}).exit == 0);
  // Still running (a zombie would answer kill(0) too: its state tells).
  const std::string stat = read_file("/proc/" + std::to_string(impostor.pid()) + "/stat");
  CHECK(stat.substr(stat.rfind(')') + 2, 1) != "Z");
  impostor.signal(SIGKILL);
  impostor.wait(std::chrono::seconds(5));
}
