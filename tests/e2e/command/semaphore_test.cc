// Semaphores through the real binary: `lock NAME --limit N`, `lease acquire
// --limit N` and `lease limit`: never more than N commands at once, a
// permit each with its own token, the limit the semaphore's (stored,
// checked, changed online), and a killed holder's permit free again.
#include <doctest/doctest.h>

#include <signal.h>

#include <fstream>
#include <set>
#include <thread>

#include "e2e/serve_fixture.h"
#include "e2e/swarm_fixture.h"
#include "support/eventually.h"
#include "support/json_fields.h"

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// A command that, while it runs, keeps a file of its own in `running`, says
// "OVER" in `log` when it finds more than `limit` there, and logs its
// permit and token; it sleeps `hold` seconds meanwhile.
std::vector<std::string> counted(const fs::path& running, const fs::path& log, int limit, const std::string& hold) {
  const std::string r = running.string(), l = log.string();
  return {"/bin/sh", "-c",
          "touch " + r + "/$$; n=$(ls " + r + " | wc -l); [ $n -le " + std::to_string(limit) + " ] || echo OVER >> " +
              l + "; echo \"ran $SWARM_PERMIT $SWARM_FENCING_TOKEN\" >> " + l + "; sleep " + hold + "; rm " + r +
              "/$$"};
}

std::vector<std::string> lines_of(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& command) {
  args.push_back("--");
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

}  // namespace

TEST_CASE("Semaphore_NeverMoreThanNAtOnceEachWithAPermitOfItsOwn") {
  SwarmWorkspace ws;
  const fs::path running = ws.home() / "running", log = ws.home() / "log";
  fs::create_directories(running);
  std::vector<Process> contenders;
  for (int i = 0; i < 6; ++i)
    contenders.emplace_back(ws.command(with({"lock", "ci", "--limit", "2", "--ttl", "3s", "--json"},
                                            counted(running, log, 2, "0.4"))));
  std::set<std::string> tokens;
  for (auto& c : contenders) {
    auto r = c.wait(60s);
    REQUIRE_MESSAGE(r.exit == 0, r.err);
    auto doc = json_of(r);
    CHECK((number(doc, "permit") == 0 || number(doc, "permit") == 1));
    CHECK(field(doc, "name").rfind("ci.permit.", 0) == 0);
    tokens.insert(std::to_string(number(doc, "token")));
  }
  const auto lines = lines_of(log);
  CHECK(lines.size() == 6);
  for (const auto& line : lines) {
    CHECK(line != "OVER");
    CHECK((line.rfind("ran 0 ", 0) == 0 || line.rfind("ran 1 ", 0) == 0));
  }
  CHECK(tokens.size() == 6);  // a token per grant, never reused
}

TEST_CASE("Semaphore_TheLimitIsStoredCheckedAndChangedOnline") {
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"lock", "sim", "--limit", "2", "--", "true"}).exit == 0);
  auto other = ws.swarm({"lock", "sim", "--limit", "3", "--", "true"});
  CHECK(other.exit == 2);
  CHECK(other.err.find("limit 2") != std::string::npos);
  CHECK(ws.swarm({"lock", "sim", "--limit", "0", "--", "true"}).exit == 2);
  CHECK(ws.swarm({"lease", "limit", "nosuch", "2"}).exit == 4);
  CHECK(ws.swarm({"lease", "limit", "sim", "1001"}).exit == 2);

  // Two holders; a third waits; a raise admits it at once.
  std::vector<Process> holders;
  for (int i = 0; i < 2; ++i) holders.emplace_back(ws.command({"lock", "sim", "--limit", "2", "--", "sleep", "60"}));
  REQUIRE(eventually([&] {
    auto list = ws.swarm({"lease", "list", "--json"});
    return list.out.find("sim.permit.0") != std::string::npos && list.out.find("sim.permit.1") != std::string::npos;
  }, 20s));
  Process third(ws.command({"lock", "sim", "--limit", "2", "--json", "--", "true"}));
  // lease show of the semaphore: its limit, its permits with their holders, one waiting.
  CHECK(eventually([&] {
    auto show = ws.swarm({"lease", "show", "sim", "--json"});
    auto doc = json_of(show);
    const cJSON* about = cJSON_GetObjectItem(doc.get(), "semaphore");
    return show.exit == 0 && number_of(about, "limit") == 2 && number_of(about, "held") == 2 &&
           number_of(about, "waiters") == 1 && cJSON_GetArraySize(cJSON_GetObjectItem(doc.get(), "leases")) == 2;
  }, 10s));
  CHECK(ws.swarm({"lease", "show", "sim"}).out.find("semaphore sim: limit 2, 2 held, 1 waiting") == 0);
  // A try (--wait 0) never goes ahead of the waiter in line.
  auto jumped = ws.swarm({"lease", "acquire", "sim", "--limit", "2"});
  CHECK(jumped.exit == 3);
  CHECK(jumped.err.find("in line for a permit") != std::string::npos);
  auto raised = ws.swarm({"lease", "limit", "sim", "3", "--json"});
  REQUIRE_MESSAGE(raised.exit == 0, raised.err);
  CHECK(number(json_of(raised), "was") == 2);
  auto r = third.wait(10s);  // admitted by the raise, not by a holder leaving
  CHECK(r.exit == 0);
  CHECK(number(json_of(r), "permit") == 2);
  // Every contender now passes the new limit.
  CHECK(ws.swarm({"lock", "sim", "--limit", "2", "--", "true"}).exit == 2);

  // A cut grants nothing until the holders are under it.
  REQUIRE(ws.swarm({"lease", "limit", "sim", "1"}).exit == 0);
  Process fourth(ws.command({"lock", "sim", "--limit", "1", "--", "true"}));
  holders[0].signal(SIGTERM);
  holders[0].wait(10s);
  std::this_thread::sleep_for(1500ms);
  CHECK(::kill(fourth.pid(), 0) == 0);  // one holder left, limit 1: still waiting
  holders[1].signal(SIGTERM);
  holders[1].wait(10s);
  CHECK(fourth.wait(10s).exit == 0);
}

TEST_CASE("Semaphore_AKilledHoldersPermitIsFreeWithinItsTtl") {
  SwarmWorkspace ws;
  const fs::path pidfile = ws.home() / "cmd.pid";
  Process holder(ws.command({"lock", "one", "--limit", "1", "--ttl", "2s", "--", "/bin/sh", "-c",
                             "echo $$ > " + pidfile.string() + "; exec sleep 60"}));
  REQUIRE(eventually([&] { return fs::exists(pidfile) && fs::file_size(pidfile) > 0; }, 20s));
  Process waiter(ws.command({"lock", "one", "--limit", "1", "--ttl", "2s", "--json", "--", "true"}));
  std::this_thread::sleep_for(300ms);
  const auto killed = std::chrono::steady_clock::now();
  holder.signal(SIGKILL);
  holder.wait(10s);
  auto r = waiter.wait(20s);
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  const auto freed = std::chrono::steady_clock::now() - killed;
  MESSAGE("permit free after ", std::chrono::duration_cast<std::chrono::milliseconds>(freed).count(), " ms");
  CHECK(freed < 2s + 2s / 3 + 1500ms);  // TTL plus one renew period, and the margin
  // Its command died with it (parent-death signal): nothing runs under the lost permit.
  std::ifstream in(pidfile);
  pid_t pid = 0;
  in >> pid;
  REQUIRE(pid > 0);
  CHECK(eventually([&] { return ::kill(pid, 0) != 0; }, 5s));
}

TEST_CASE("Semaphore_LeaseAcquireTakesAPermitByHand") {
  SwarmWorkspace ws;
  std::vector<std::string> tokens;
  for (int i = 0; i < 2; ++i) {
    auto r = ws.swarm({"lease", "acquire", "lic", "--limit", "2", "--ttl", "60s", "--json"});
    REQUIRE_MESSAGE(r.exit == 0, r.err);
    tokens.push_back(r.out);
  }
  auto full = ws.swarm({"lease", "acquire", "lic", "--limit", "2"});
  CHECK(full.exit == 3);
  CHECK(full.err.find("limit 2") != std::string::npos);
  // Released by its name and token, the permit goes to the next.
  auto plain = ws.swarm({"lease", "acquire", "lic", "--limit", "2", "--json"});
  CHECK(plain.exit == 3);
  auto show = ws.swarm({"lease", "show", "lic.permit.0", "--json"});
  REQUIRE(show.exit == 0);
  const auto doc = json_of(show);
  const cJSON* lease = cJSON_GetArrayItem(cJSON_GetObjectItem(doc.get(), "leases"), 0);
  const std::string token = std::to_string(static_cast<long long>(number_of(lease, "token")));
  REQUIRE(ws.swarm({"lease", "release", "lic.permit.0", "--token", token}).exit == 0);
  auto again = ws.swarm({"lease", "acquire", "lic", "--limit", "2"});
  CHECK(again.exit == 0);
}

TEST_CASE("Semaphore_AfterACutTheHoldersAboveItCountUntilTheyGo") {
  // limit 3, permits 0, 1 and 2 held; cut to 2; 0 and 1 released: permit 2 still counts, so one grant (permit 0,
  // below 2 less the one holder above the limit) and no second until permit 2 goes.
  SwarmWorkspace ws;
  std::vector<std::string> tokens;
  for (int i = 0; i < 3; ++i) {
    auto r = ws.swarm({"lease", "acquire", "cut", "--limit", "3", "--ttl", "60s"});
    REQUIRE_MESSAGE(r.exit == 0, r.err);
    std::string token = r.out;
    while (!token.empty() && token.back() == '\n') token.pop_back();
    tokens.push_back(token);
  }
  REQUIRE(ws.swarm({"lease", "limit", "cut", "2"}).exit == 0);
  CHECK(ws.swarm({"lease", "acquire", "cut", "--limit", "2"}).exit == 3);  // 3 held, limit 2
  // Which permit each token holds, from lease show.
  auto show = ws.swarm({"lease", "show", "cut", "--json"});
  auto doc = json_of(show);
  std::map<std::string, std::string> by_token;
  const cJSON* lease = nullptr;
  cJSON_ArrayForEach(lease, cJSON_GetObjectItem(doc.get(), "leases")) {
    by_token[std::to_string(static_cast<long long>(number_of(lease, "token")))] = text_of(lease, "name");
  }
  for (const auto& token : tokens)
    if (by_token[token] != "cut.permit.2")
      REQUIRE(ws.swarm({"lease", "release", by_token[token], "--token", token}).exit == 0);
  auto one = ws.swarm({"lease", "acquire", "cut", "--limit", "2", "--json"});
  REQUIRE_MESSAGE(one.exit == 0, one.err);
  CHECK(one.out.find("cut.permit.0") != std::string::npos);
  auto two = ws.swarm({"lease", "acquire", "cut", "--limit", "2"});
  CHECK(two.exit == 3);  // permit 2 and permit 0 held: the limit of 2
}

TEST_CASE("Semaphore_AHolderKilledAtEveryStepLosesNoPermitAndRunsNothingAfter") {
  // limit 2, one live holder; a second killed (SIGKILL) at each step of its hold (at the gate, just granted,
  // before and after a renewal, before and after its release): a third gets the permit within the TTL plus one
  // renew period, never while the killed one's command still runs (a zombie not yet reaped does not run), and
  // the live holder's permit is untouched:
  // one more fits beside it, two more do not.
  SwarmWorkspace ws;
  for (const char* stage : {"gate", "granted", "renew", "renewed", "release", "released"}) {
    CAPTURE(stage);
    const std::string name = std::string("sem-") + stage;
    const fs::path vpid = ws.home() / (name + ".vpid"), log = ws.home() / (name + ".log");
    const fs::path hpid = ws.home() / (name + ".hpid");
    Process holder(ws.command({"lock", name, "--limit", "2", "--ttl", "2s", "--", "/bin/sh", "-c",
                               "echo $$ > " + hpid.string() + "; exec sleep 60"}));
    REQUIRE(eventually([&] { return fs::exists(hpid) && fs::file_size(hpid) > 0; }, 20s));
    // The victim's command outlives a renewal (a third of the TTL) and ends before the TTL.
    auto env = kHostA;
    env["SWARM_TEST_LEASE_STOP"] = stage;
    Process victim(ws.command({"lock", name, "--limit", "2", "--ttl", "2s", "--", "/bin/sh", "-c",
                               "echo $$ > " + vpid.string() + "; sleep 1.2"},
                              env));
    REQUIRE(eventually([&] { return process_state(victim.pid()) == 'T'; }, 20s));
    const auto killed = std::chrono::steady_clock::now();
    victim.signal(SIGKILL);
    victim.wait(10s);
    const std::string vpid_s = vpid.string(), log_s = log.string();
    auto next = ws.swarm({"lock", name, "--limit", "2", "--ttl", "2s", "--wait", "20s", "--", "/bin/sh", "-c",
                          "p=$(cat " + vpid_s + " 2>/dev/null); if [ -n \"$p\" ] && [ -e /proc/$p ] && ! grep -q "
                          "'^State:.*Z' /proc/$p/status 2>/dev/null; then echo OVER >> " + log_s +
                              "; fi; echo ran >> " + log_s});
    REQUIRE_MESSAGE(next.exit == 0, next.err);
    const auto took = std::chrono::steady_clock::now() - killed;
    MESSAGE(std::string(stage), ": the next holder ran ", std::chrono::duration_cast<std::chrono::milliseconds>(took).count(),
            " ms after the kill");
    CHECK(took < 2s + 2s / 3 + 2s);  // TTL, one renew period, and the margin of a busy machine
    CHECK(lines_of(log) == std::vector<std::string>{"ran"});
    // The live holder still holds its permit: one more fits, a second does not.
    auto one = ws.swarm({"lease", "acquire", name, "--limit", "2", "--ttl", "30s"});
    CHECK_MESSAGE(one.exit == 0, one.err);
    CHECK(ws.swarm({"lease", "acquire", name, "--limit", "2", "--ttl", "30s"}).exit == 3);
    holder.signal(SIGKILL);
    holder.wait(10s);
  }
}

TEST_CASE("Semaphore_ListAndServeShowTheLimitTheHoldersAndTheLine") {
  // limit 2, two holders, one waiter at the gate and one behind it: `lease list` and serve's /api/leases and
  // /metrics say limit 2, 2 held, 2 waiting; a raise to 3 shows at once in both.
  SwarmWorkspace ws;
  std::vector<Process> holders;
  for (int i = 0; i < 2; ++i)
    holders.emplace_back(ws.command({"lock", "suite", "--limit", "2", "--ttl", "5s", "--", "sleep", "60"}));
  REQUIRE(eventually([&] { return ws.swarm({"lease", "show", "suite"}).out.find("2 held") != std::string::npos; }));
  std::vector<Process> waiters;
  for (int i = 0; i < 2; ++i)
    waiters.emplace_back(ws.command({"lock", "suite", "--limit", "2", "--ttl", "5s", "--", "sleep", "60"}, kHostB));
  auto listed = [&](const char* want) {
    return eventually([&] {
      auto r = ws.swarm({"lease", "list", "--json"});
      return r.out.find(want) != std::string::npos;
    });
  };
  CHECK(listed("\"semaphores\":[{\"name\":\"suite\",\"limit\":2,\"held\":2,\"waiters\":2}]"));
  auto text = ws.swarm({"lease", "list"});
  CHECK(text.out.find("SEMAPHORE  LIMIT  HELD  WAITING\nsuite      2      2     2\n") != std::string::npos);

  Served served(ws);
  CHECK(eventually_body(served, "/metrics", [](const std::string& m) {
    return sample(m, "swarm_semaphore_limit{semaphore=\"suite\"}") == 2 &&
           sample(m, "swarm_semaphore_held{semaphore=\"suite\"}") == 2 &&
           sample(m, "swarm_semaphore_waiters{semaphore=\"suite\"}") == 2;
  }));
  CHECK(served.body("/api/leases").find("\"semaphores\":[{\"name\":\"suite\",\"limit\":2,\"held\":2,\"waiters\":2}]") !=
        std::string::npos);
  // A raise admits the waiter at the gate: 3 held, 1 waiting, in both.
  REQUIRE(ws.swarm({"lease", "limit", "suite", "3"}).exit == 0);
  CHECK(listed("{\"name\":\"suite\",\"limit\":3,\"held\":3,\"waiters\":1}"));
  CHECK(eventually_body(served, "/metrics", [](const std::string& m) {
    return sample(m, "swarm_semaphore_limit{semaphore=\"suite\"}") == 3 &&
           sample(m, "swarm_semaphore_held{semaphore=\"suite\"}") == 3 &&
           sample(m, "swarm_semaphore_waiters{semaphore=\"suite\"}") == 1;
  }));
  for (auto& p : waiters) p.signal(SIGKILL);
  for (auto& p : holders) p.signal(SIGKILL);
}
