// A waiter whose reads are slower than the TTL never takes a live lease
// (issue 28). Waiter B talks to the server through a proxy that holds B's read
// of the lease, and everything B sends after it, for longer than the TTL,
// while contender C (direct) is granted and renews. When B's read comes back
// it returns C's *current* record: B must age it from when it arrived, not
// from before it asked, and B, whose place in line was removed while it was
// stuck, must join the line again behind those who waited meanwhile.
// Each command logs its start and end; the checker finds any overlap.
#include <doctest/doctest.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "e2e/swarm_fixture.h"
#include "support/nats_proxy.h"

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// A command that logs "start ID TIME" and "end ID TIME" (seconds since the
// epoch, to the nanosecond) around `body`.
std::vector<std::string> logged(const fs::path& log, const std::string& id, const std::string& body) {
  const std::string stamp = "$(date +%s.%N)";
  return {"sh", "-c",
          "echo start " + id + " " + stamp + " >> " + log.string() + "; " + body + "; echo end " + id + " " + stamp +
              " >> " + log.string()};
}

struct Section {
  std::string id;
  double start = 0, end = 0;
};

// The sections of the log in the order they started (a section without an
// end runs to the end of time).
std::vector<Section> sections_of(const fs::path& log) {
  std::ifstream in(log);
  std::string what, id;
  double at = 0;
  std::map<std::string, Section> by_id;
  // "start ID TIME" or "end ID TIME"
  while (in >> what >> id >> at) {
    auto& s = by_id[id];
    s.id = id;
    if (what == "start") s.start = at;
    if (what == "end") s.end = at;
  }
  std::vector<Section> out;
  for (auto& [name, s] : by_id) {
    if (s.end == 0) s.end = 1e18;
    out.push_back(s);
  }
  std::sort(out.begin(), out.end(), [](const Section& a, const Section& b) { return a.start < b.start; });
  return out;
}

// "A and C ran together for 0.225 s" for each overlap.
std::vector<std::string> overlaps_in(const std::vector<Section>& sections) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < sections.size(); ++i)
    for (std::size_t j = i + 1; j < sections.size(); ++j)
      if (sections[j].start < sections[i].end)
        out.push_back(sections[i].id + " and " + sections[j].id + " ran together for " +
                      std::to_string(std::min(sections[i].end, sections[j].end) - sections[j].start) + " s");
  return out;
}

bool has_line(const fs::path& log, const std::string& prefix) {
  std::ifstream in(log);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) return true;
  return false;
}

// What a held read of lease `name` looks like on the wire: a get of the
// key's last message, direct or through the stream's API.
std::vector<std::string> lease_read(const SwarmWorkspace& ws, const std::string& name) {
  const std::string b = ws.names().leases;
  return {"\"last_by_subj\":\"$KV." + b + "." + name + "\"", "$JS.API.DIRECT.GET.KV_" + b + ".$KV." + b + "." + name + "\r\n"};
}

}  // namespace

namespace {

// Four contenders for lease "merge" (TTL 2 s), each through `verb` ("lock",
// or "elect": a candidate runs CMD when it leads). B's read of the lease is
// held 5 s while A finishes and C is granted and renews; D asks once C runs.
// `limit` above 0: a semaphore of that limit ("lock merge --limit N"), B's
// first reading of its permits held instead (a listing of merge.permit.*).
void contend_with_a_slow_reader(const std::string& verb, int limit = 0) {
  SwarmWorkspace ws;
  NatsProxy proxy(ws.server()->port());
  const fs::path log = ws.root() / "sections.log";
  auto contender = [&](const std::string& id, const std::string& body, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {verb, "merge", "--ttl", "2s", "--holder", id, "--json"};
    if (limit > 0) args.insert(args.end(), {"--limit", std::to_string(limit)});
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("--");
    auto cmd = logged(log, id, body);
    args.insert(args.end(), cmd.begin(), cmd.end());
    return Process(ws.command(args));
  };

  Process a = contender("A", "sleep 1");
  REQUIRE(wait_until([&] { return has_line(log, "start A"); }, 10s));
  proxy.hold_next(limit > 0 ? std::vector<std::string>{"$KV." + ws.names().leases + ".merge.permit.*"} : lease_read(ws, "merge"), 5s);
  Process b = contender("B", "sleep 0.3", {"--nats-url", proxy.url(), "--timeout", "30s"});
  REQUIRE(proxy.wait_hold_begun(10s));
  Process c = contender("C", "sleep 6");
  REQUIRE(wait_until([&] { return has_line(log, "start C"); }, 15s));
  Process d = contender("D", "sleep 0.3");

  auto ra = a.wait(30s), rb = b.wait(60s), rc = c.wait(60s), rd = d.wait(60s);
  INFO("A: ", ra.err, "\nB: ", rb.err, "\nC: ", rc.err, "\nD: ", rd.err);
  CHECK(proxy.holds_ended() == 1);
  const auto sections = sections_of(log);
  CHECK(overlaps_in(sections) == std::vector<std::string>{});
  CHECK(ra.exit == 0);
  CHECK(rc.exit == 0);
  CHECK(field(json_of(rc), "ended") == "exited");  // C's lease was never lost
  CHECK(rb.exit == 0);
  CHECK(rd.exit == 0);
  std::string order;
  for (const auto& section : sections) order += section.id;
  // B lost its place at the gate while it was stuck: it goes after C (and D
  // only when it got back in line first).
  if (limit == 0) CHECK(order == "ACDB");
  else CHECK(order.substr(0, 2) == "AC");
}

// Runs `swarm renew --slot SLOT` every 600 ms until stopped; counts failures.
class Renewer {
 public:
  Renewer(const SwarmWorkspace& ws, std::string slot) : ws_(ws), slot_(std::move(slot)) {
    thread_ = std::thread([this] {
      while (!stop_) {
        auto r = ws_.swarm({"renew", "--slot", slot_});
        if (r.exit != 0) failures_.push_back(r.err);
        for (int i = 0; i < 30 && !stop_; ++i) std::this_thread::sleep_for(20ms);
      }
    });
  }
  ~Renewer() { stop(); }
  std::vector<std::string> stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return failures_;
  }

 private:
  const SwarmWorkspace& ws_;
  std::string slot_;
  std::atomic<bool> stop_{false};
  std::vector<std::string> failures_;
  std::thread thread_;
};

}  // namespace

TEST_CASE("SlowRead_AWaiterWhoseReadOutlastsTheTtlNeverTakesALiveLock") {
  // B's read of the lease is held 5 s (TTL 2 s) while C is granted and renews: B never runs while C runs, C's
  // lock is never lost, and B, put out of line meanwhile, runs after D, who joined the line while B was stuck.
  contend_with_a_slow_reader("lock");
}

TEST_CASE("SlowRead_AWaiterWhoseReadOfThePermitsOutlastsTheTtlNeverTakesALivePermit") {
  // the same with a semaphore of limit 1: B's listing of the permits is held past the TTL.
  contend_with_a_slow_reader("lock", 1);
}

TEST_CASE("SlowRead_ACandidateWhoseReadOutlastsTheTtlNeverUnseatsALiveLeader") {
  // the same for elect: the slow candidate never leads while C leads, and leads after D.
  contend_with_a_slow_reader("elect");
}

TEST_CASE("SlowRead_AJoinWhoseReadOutlastsTheTtlNeverTakesOverALiveSession") {
  // in a 3 s-TTL workspace, a join of this host whose read of the session is held 5 s, while its agent renews every
  // 600 ms, finds the session live when the read returns: exit 3, and the agent's session stays its own.
  SwarmWorkspace ws({.up_args = {"--ttl", "3s"}});
  REQUIRE(ws.swarm({"join", "--slot", "s", "--task", "T-1"}).exit == 0);
  Renewer agent(ws, "s");
  NatsProxy proxy(ws.server()->port());
  const std::string sessions = "$KV." + ws.names().sessions;
  proxy.hold_next({"\"last_by_subj\":\"" + sessions + ".s\"", sessions + ".s\r\n"}, 5s);
  auto r = ws.swarm({"join", "--slot", "s", "--task", "T-2", "--nats-url", proxy.url(), "--timeout", "30s"});
  CHECK(proxy.holds_ended() == 1);
  CHECK(r.exit == 3);
  CHECK(r.err.find("fresh") != std::string::npos);
  CHECK(agent.stop() == std::vector<std::string>{});
  auto status = json_of(ws.swarm({"status", "--slot", "s", "--json"}));
  cJSON* session = cJSON_GetArrayItem(cJSON_GetObjectItem(status.get(), "sessions"), 0);
  CHECK(field(swarm::Json::copy(session), "task_id") == "T-1");
}

TEST_CASE("SlowRead_AJoinWhoseReadOfATaskLeaseOutlastsTheTtlNeverTakesIt") {
  // slot a works T-1 (TTL 3 s, renewed every 600 ms); slot b joins T-1 with its read of the task lease held 5 s:
  // when the read returns, the lease is live: exit 3 naming slot a, and a's lease stays a's (same token).
  SwarmWorkspace ws({.up_args = {"--ttl", "3s"}});
  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-1"}).exit == 0);
  auto token_of_task = [&] {
    auto doc = json_of(ws.swarm({"lease", "show", "task.T-1", "--json"}));
    cJSON* lease = cJSON_GetArrayItem(cJSON_GetObjectItem(doc.get(), "leases"), 0);
    return lease ? number(swarm::Json::copy(lease), "token") : 0;
  };
  const double token = token_of_task();
  REQUIRE(token > 0);
  Renewer agent(ws, "a");
  NatsProxy proxy(ws.server()->port());
  const std::string leases = "$KV." + ws.names().leases;
  proxy.hold_next({"\"last_by_subj\":\"" + leases + ".task.T-1\"", leases + ".task.T-1\r\n"}, 5s);
  auto r = ws.swarm({"join", "--slot", "b", "--task", "T-1", "--nats-url", proxy.url(), "--timeout", "30s"});
  CHECK(proxy.holds_ended() == 1);
  CHECK(r.exit == 3);
  CHECK(r.err.find("slot a") != std::string::npos);
  CHECK(agent.stop() == std::vector<std::string>{});
  CHECK(token_of_task() == token);
}

TEST_CASE("SlowRead_AWaiterCutOffFromNatsIsExit7WithinItsTimeout") {
  // a waiter whose requests stop being answered (all it sends from its read of the lease on is held 30 s) leaves
  // with exit 7 within its --timeout and a little more, and never runs its command; the holder is untouched.
  SwarmWorkspace ws;
  NatsProxy proxy(ws.server()->port());
  const fs::path log = ws.root() / "sections.log";
  Process a(ws.command({"lock", "merge", "--ttl", "2s", "--json", "--", "sh", "-c", "sleep 5"}));
  REQUIRE(wait_until([&] { return ws.swarm({"lease", "show", "merge"}).exit == 0; }, 10s));
  proxy.hold_next(lease_read(ws, "merge"), 30s);
  auto b = ws.swarm({"lock", "merge", "--ttl", "2s", "--nats-url", proxy.url(), "--timeout", "2s", "--", "sh", "-c",
                     "echo ran >> " + log.string()});
  CHECK(proxy.holds_begun() == 1);
  CHECK(b.exit == 7);
  CHECK(b.took < 6s);
  CHECK_FALSE(fs::exists(log));
  auto ra = a.wait(30s);
  CHECK(ra.exit == 0);
  CHECK(field(json_of(ra), "ended") == "exited");
}

TEST_CASE("SlowRead_APermitHolderCutOffFromNatsStopsBeforeAnotherIsGranted") {
  // limit 1: holder H's connection goes through the proxy, which black-holes everything H sends from its next
  // renewal on for 6 s (TTL 2 s). H cannot renew, so it stops its command before its deadline; C, waiting
  // directly, gets the permit once the TTL has passed: their sections never overlap, and H says it lost the permit.
  SwarmWorkspace ws;
  NatsProxy proxy(ws.server()->port());
  const fs::path log = ws.root() / "sections.log";
  auto args = [&](const std::string& id, const std::vector<std::string>& cmd, const std::vector<std::string>& extra) {
    std::vector<std::string> a = {"lock", "suite", "--limit", "1", "--ttl", "2s", "--holder", id, "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    a.push_back("--");
    a.insert(a.end(), cmd.begin(), cmd.end());
    return a;
  };
  // H's command logs its end when swarm stops it (SIGTERM to its group), as it ends.
  const std::string stamp = "$(date +%s.%N)";
  const std::vector<std::string> stoppable = {
      "sh", "-c",
      "echo start H " + stamp + " >> " + log.string() + "; trap 'echo end H " + stamp + " >> " + log.string() +
          "; exit 143' TERM; sleep 30 & wait"};
  Process h(ws.command(args("H", stoppable, {"--nats-url", proxy.url(), "--timeout", "30s"})));
  REQUIRE(wait_until([&] { return has_line(log, "start H"); }, 15s));
  proxy.hold_next({"$KV." + ws.names().leases + ".suite.permit.0"}, 6s);
  Process c(ws.command(args("C", logged(log, "C", "sleep 0.5"), {"--wait", "30s"})));
  REQUIRE(proxy.wait_hold_begun(10s));
  auto rc = c.wait(60s), rh = h.wait(60s);
  INFO("H: ", rh.err, "\nC: ", rc.err);
  CHECK(rc.exit == 0);
  CHECK(rh.exit != 0);
  CHECK(field(json_of(rh), "ended") == "lease_lost");
  const auto sections = sections_of(log);
  CHECK(sections.size() == 2);
  CHECK(has_line(log, "end H"));
  CHECK(overlaps_in(sections) == std::vector<std::string>{});
}
