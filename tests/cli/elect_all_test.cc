// swarm elect NAME --all -- CMD: CMD runs on every candidate, told by
// SIGUSR1 that it leads and by SIGUSR2 that it no longer does. The
// candidate below (Python) logs each change as it hears it, reading the
// token from $SWARM_FENCING_TOKEN_FILE; the history checker at the end runs
// five candidates under SIGKILLs, freezes and resignations and checks from
// those logs that no two lead at once, a frozen candidate's stale term
// aside, which its lower token fences.
#include <doctest/doctest.h>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "cli/swarm_fixture.h"
#include "support/eventually.h"

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// Logs "KIND ID FIELDS... TIME" lines to argv[1] as candidate argv[2]:
// "start ID LEADER ENV_TOKEN CHILD_PID" once, then "lead ID TOKEN" and
// "follow ID TOKEN" as the token file changes, checked on each SIGUSR1 and
// SIGUSR2 whichever comes (two pending signals run in number order, not in
// the order sent), and "exit ID 143" when SIGTERM ends it. Its child (sleep) is there to show that the signals go
// to the command alone, not to what it started.
constexpr const char* kCandidate = R"(import os, signal, subprocess, sys, time
log, me = sys.argv[1], sys.argv[2]
token = None
def line(*words):
    with open(log, "a") as f:
        f.write(" ".join((words[0], me) + words[1:]) + " %.3f\n" % time.time())
def sync(*_):
    global token
    try:
        with open(os.environ["SWARM_FENCING_TOKEN_FILE"]) as f:
            now = f.read().strip()
    except FileNotFoundError:
        now = ""

    if token is not None and now != token:
        line("follow", token)
        token = None
    if now and token is None:
        token = now
        line("lead", token)
def stop(*_):
    line("exit", "143")
    os._exit(143)
signal.signal(signal.SIGUSR1, sync)
signal.signal(signal.SIGUSR2, sync)
signal.signal(signal.SIGTERM, stop)
child = subprocess.Popen(["sleep", "600"])
line("start", os.environ["SWARM_LEADER"], os.environ.get("SWARM_FENCING_TOKEN", "-"), str(child.pid))
if os.environ["SWARM_LEADER"] == "1":
    token = os.environ["SWARM_FENCING_TOKEN"]
    line("lead", token)
sync()
while True:
    time.sleep(1)
)";

struct Line {
  std::string kind, id;
  std::vector<std::string> fields;
  double at = 0;
};

std::vector<Line> read_log(const fs::path& log) {
  std::vector<Line> lines;
  std::ifstream in(log);
  for (std::string text; std::getline(in, text);) {
    std::istringstream words(text);
    Line l;
    words >> l.kind >> l.id;
    for (std::string w; words >> w;) l.fields.push_back(w);
    if (l.fields.empty()) continue;  // a line cut short (never written whole)
    l.at = std::stod(l.fields.back());
    l.fields.pop_back();
    lines.push_back(std::move(l));
  }
  return lines;
}

// The lines of `kind` (and `id`, when given), in the log's order.
std::vector<Line> lines_of(const fs::path& log, const std::string& kind, const std::string& id = {}) {
  std::vector<Line> out;
  for (auto& l : read_log(log))
    if (l.kind == kind && (id.empty() || l.id == id)) out.push_back(l);
  return out;
}

// A candidate of election `name` whose command is the logger above.
// `env` on top of host A's; its TTL 2 s unless `extra` gives --ttl.
Process start_candidate(const SwarmWorkspace& ws, const std::string& name, const std::string& id,
                        const std::vector<std::string>& extra = {}, const std::map<std::string, std::string>& env = {}) {
  const fs::path script = ws.root() / "candidate.py";
  if (!fs::exists(script)) std::ofstream(script) << kCandidate;
  std::vector<std::string> args = {"elect", name, "--all", "--holder", id};
  if (std::find(extra.begin(), extra.end(), "--ttl") == extra.end()) args.insert(args.end(), {"--ttl", "2s"});
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--", "python3", script.string(), (ws.root() / "elect.log").string(), id});
  auto host = kHostA;
  for (const auto& [k, v] : env) host[k] = v;
  return Process(ws.command(args, host));
}

// Ends each candidate as a service manager would (SIGTERM, which swarm
// passes to its command): each exits with its command's status, 143.
void stop_candidates(const std::vector<Process*>& candidates) {
  for (Process* p : candidates) p->signal(SIGTERM);
  for (Process* p : candidates) CHECK(p->wait(60s).exit == 128 + SIGTERM);
}

bool alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0 && process_state(pid) != 'Z'; }

}  // namespace

TEST_CASE("ElectAll_EveryCandidateRunsAndSignalsTellWhichLeads") {
  // a starts as leader (SWARM_LEADER=1, its token in the environment and the file), b as a follower (0, an
  // empty file); a resignation moves the lead to b (SIGUSR2 to a first, then SIGUSR1 to b with the new token
  // in the file), --resign --to moves it back; a's command ending releases it to b; the signals never reach
  // the commands' own children; --json lists a's terms.
  SwarmWorkspace ws;
  const fs::path log = ws.root() / "elect.log";
  Process a = start_candidate(ws, "sched", "a", {"--json"});
  REQUIRE(eventually([&] { return lines_of(log, "lead", "a").size() == 1; }, 20s));
  Process b = start_candidate(ws, "sched", "b");
  REQUIRE(eventually([&] { return lines_of(log, "start", "b").size() == 1; }, 20s));
  const Line a_start = lines_of(log, "start", "a").front();
  const Line b_start = lines_of(log, "start", "b").front();
  REQUIRE(a_start.fields.size() == 3);
  REQUIRE(b_start.fields.size() == 3);
  CHECK(a_start.fields[0] == "1");
  const std::string t1 = a_start.fields[1];
  CHECK(lines_of(log, "lead", "a").front().fields[0] == t1);  // the file holds the token the environment has
  CHECK(b_start.fields[0] == "0");
  CHECK(b_start.fields[1] == "-");  // no SWARM_FENCING_TOKEN for a follower
  CHECK(lines_of(log, "lead", "b").empty());
  CHECK(ws.swarm({"elect", "sched", "--check", "--token", t1}).exit == 0);

  auto resigned = ws.swarm({"elect", "sched", "--resign", "--timeout", "20s"});
  CHECK_MESSAGE(resigned.exit == 0, resigned.err);
  REQUIRE(eventually([&] { return lines_of(log, "lead", "b").size() == 1; }, 20s));
  const std::string t2 = lines_of(log, "lead", "b").front().fields[0];
  CHECK(std::stoull(t2) > std::stoull(t1));
  auto a_follows = lines_of(log, "follow", "a");
  REQUIRE(a_follows.size() == 1);
  CHECK(a_follows.front().fields[0] == t1);
  CHECK(a_follows.front().at <= lines_of(log, "lead", "b").front().at);  // a heard it first
  CHECK(ws.swarm({"elect", "sched", "--check", "--token", t2}).exit == 0);
  CHECK(ws.swarm({"elect", "sched", "--check", "--token", t1}).exit == 3);

  // a waits in line again: handed back to it by name.
  auto handed = ws.swarm({"elect", "sched", "--resign", "--to", "a", "--timeout", "20s"});
  CHECK_MESSAGE(handed.exit == 0, handed.err);
  REQUIRE(eventually([&] { return lines_of(log, "lead", "a").size() == 2; }, 20s));
  const std::string t3 = lines_of(log, "lead", "a").back().fields[0];
  CHECK(std::stoull(t3) > std::stoull(t2));
  REQUIRE(lines_of(log, "follow", "b").size() == 1);
  CHECK(lines_of(log, "follow", "b").front().fields[0] == t2);
  // Each command's own child lived through four signals to its parent.
  CHECK(alive(std::stoi(a_start.fields[2])));
  CHECK(alive(std::stoi(b_start.fields[2])));

  // a's command ends (SIGTERM to swarm goes to it): a releases, b leads; swarm ends with the command's status.
  a.signal(SIGTERM);
  auto a_end = a.wait(20s);
  CHECK(a_end.exit == 128 + SIGTERM);
  auto doc = json_of(a_end);
  CHECK(field(doc, "schema") == "swarm.elect.v1");
  const cJSON* terms = cJSON_GetObjectItem(doc.get(), "terms");
  REQUIRE(cJSON_GetArraySize(terms) == 2);
  CHECK(std::string(cJSON_GetObjectItem(cJSON_GetArrayItem(terms, 0), "ended")->valuestring) == "resigned");
  CHECK(std::string(cJSON_GetObjectItem(cJSON_GetArrayItem(terms, 1), "ended")->valuestring) == "exited");
  CHECK(eventually([&] { return !alive(std::stoi(a_start.fields[2])); }, 10s));  // what it left is gone
  REQUIRE(eventually([&] { return lines_of(log, "lead", "b").size() == 2; }, 20s));
  stop_candidates({&b});
}

TEST_CASE("ElectAll_AKilledCandidateTakesItsCommandAlongAndALostLeaseIsTold") {
  // SIGKILL to the leader's swarm kills its command (and its child) at once; the follower leads once the
  // lease runs out. Then the new leader's swarm is frozen past its TTL: the other candidate (started meanwhile)
  // takes over with a higher token, and the thawed one hears SIGUSR2 and waits in line again.
  SwarmWorkspace ws;
  const fs::path log = ws.root() / "elect.log";
  Process a = start_candidate(ws, "sched", "a");
  REQUIRE(eventually([&] { return lines_of(log, "lead", "a").size() == 1; }, 20s));
  Process b = start_candidate(ws, "sched", "b");
  REQUIRE(eventually([&] { return lines_of(log, "start", "b").size() == 1; }, 20s));
  const pid_t a_child = std::stoi(lines_of(log, "start", "a").front().fields[2]);
  a.signal(SIGKILL);
  a.wait(10s);
  CHECK(eventually([&] { return !alive(a_child); }, 5s));
  REQUIRE(eventually([&] { return lines_of(log, "lead", "b").size() == 1; }, 20s));
  const std::string tb = lines_of(log, "lead", "b").front().fields[0];

  Process c = start_candidate(ws, "sched", "c");
  REQUIRE(eventually([&] { return lines_of(log, "start", "c").size() == 1; }, 20s));
  b.signal(SIGSTOP);
  REQUIRE(eventually([&] { return lines_of(log, "lead", "c").size() == 1; }, 20s));
  b.signal(SIGCONT);
  REQUIRE(eventually([&] { return lines_of(log, "follow", "b").size() == 1; }, 20s));
  CHECK(std::stoull(lines_of(log, "lead", "c").front().fields[0]) > std::stoull(tb));
  CHECK(lines_of(log, "follow", "b").front().fields[0] == tb);
  // b waits again: c hands the lead back to it, once b is back in line (exit 4 until then, nothing asked).
  CHECK(eventually([&] { return ws.swarm({"elect", "sched", "--resign", "--to", "b"}).exit == 0; }, 20s));
  CHECK(eventually([&] { return lines_of(log, "lead", "b").size() == 2; }, 20s));
  stop_candidates({&b, &c});
}

TEST_CASE("ElectAll_BadInputIsExit2BeforeAnything") {
  SwarmWorkspace ws;
  auto observe = ws.swarm({"elect", "sched", "--all", "--observe"});
  CHECK(observe.exit == 2);
  auto check = ws.swarm({"elect", "sched", "--all", "--check", "--token", "5"});
  CHECK(check.exit == 2);
  auto resign = ws.swarm({"elect", "sched", "--all", "--resign"});
  CHECK(resign.exit == 2);
  auto none = ws.swarm({"elect", "sched", "--all"});
  CHECK(none.exit == 2);
  CHECK(none.err.find("no command to run") != std::string::npos);
  auto missing = ws.swarm({"elect", "sched", "--all", "--", "/nonexistent/agent"});
  CHECK(missing.exit == 2);
  CHECK(missing.err.find("/nonexistent/agent") != std::string::npos);
  CHECK(ws.swarm({"lease", "show", "sched"}).exit == 4);  // nothing was written
}

TEST_CASE("ElectAll_TheLeaderHearsSIGUSR2BeforeItsLeaseIsReleased") {
  // a (TTL 5 s) is asked to step down and stops itself (test seam) after telling its command and before releasing:
  // its command has logged "follow", the lease is still a's token and b has not led; once a goes on, b leads.
  SwarmWorkspace ws;
  const fs::path log = ws.root() / "elect.log";
  Process a = start_candidate(ws, "sched", "a", {"--ttl", "5s"}, {{"SWARM_TEST_LEASE_STOP", "stepping-down"}});
  REQUIRE(eventually([&] { return lines_of(log, "lead", "a").size() == 1; }, 20s));
  const std::string ta = lines_of(log, "lead", "a").front().fields[0];
  Process b = start_candidate(ws, "sched", "b", {"--ttl", "5s"});
  REQUIRE(eventually([&] { return lines_of(log, "start", "b").size() == 1; }, 20s));
  Process resign(ws.command({"elect", "sched", "--resign"}));
  REQUIRE(eventually([&] { return process_state(a.pid()) == 'T'; }, 20s));
  CHECK(lines_of(log, "follow", "a").size() == 1);
  CHECK(ws.swarm({"elect", "sched", "--check", "--token", ta}).exit == 0);  // not released yet
  CHECK(lines_of(log, "lead", "b").empty());
  a.signal(SIGCONT);
  CHECK(eventually([&] { return lines_of(log, "lead", "b").size() == 1; }, 20s));
  CHECK(resign.wait(30s).exit == 0);
  stop_candidates({&a, &b});
}

TEST_CASE("ElectAll_ACommandThatEndsAtOnceStillReleasesTheLease") {
  // CMD `true` ends before the candidate's own thread takes its first grant over (often, on a busy machine: two
  // threads keep the cores busy meanwhile): the lease is released all the same (the next --check is exit 3, not a
  // lease held for its 30 s TTL) and --json lists the term. Ten times, as the race is not lost every time.
  SwarmWorkspace ws;
  std::atomic<bool> busy{true};
  std::vector<std::thread> burners;
  for (int t = 0; t < 2; ++t)
    burners.emplace_back([&busy] {
      while (busy.load(std::memory_order_relaxed)) {
      }
    });
  struct Stop {
    std::atomic<bool>& busy;
    std::vector<std::thread>& burners;
    ~Stop() {
      busy = false;
      for (auto& b : burners) b.join();
    }
  } stop{busy, burners};
  for (int i = 0; i < 10; ++i) {
    CAPTURE(i);
    auto r = ws.swarm({"elect", "quick", "--all", "--ttl", "30s", "--json", "--", "true"});
    REQUIRE_MESSAGE(r.exit == 0, r.err);
    auto doc = json_of(r);
    const cJSON* terms = cJSON_GetObjectItem(doc.get(), "terms");
    REQUIRE(cJSON_GetArraySize(terms) == 1);
    const cJSON* token = cJSON_GetObjectItem(cJSON_GetArrayItem(terms, 0), "token");
    REQUIRE(cJSON_IsNumber(token));
    auto check = ws.swarm({"elect", "quick", "--check", "--token", std::to_string(static_cast<long long>(token->valuedouble))});
    CHECK(check.exit == 3);
  }
}

namespace {

// The history: what the candidates logged and what the harness did, checked.
struct ElectHistory {
  int leads = 0, kills = 0, freezes = 0, resigns = 0, handovers = 0, fenced = 0;
  std::vector<std::string> violations;
};

// Reads the log: each "lead" opens a term of its candidate, "follow", its
// "kill" or its "exit" closes it. A lead must have a token above every
// earlier one, and may start while another term is open only when that
// term's swarm was frozen during it (its command could not be told) and its
// token is lower: what the token fences. After "handing ID" (a --resign --to
// asked), the first lead must be ID's when "handed ID" says it exit 0.
ElectHistory check_history(const fs::path& log) {
  ElectHistory h;
  struct Open {
    unsigned long long token = 0;
    bool frozen = false;
  };
  std::map<std::string, Open> open;
  std::set<std::string> killed;  // a lead logged after its kill came from a command dying with its swarm
  unsigned long long highest = 0;
  std::string handing, next_lead;  // a hand-over asked, and who led first after it
  std::string expected;            // who must lead next (a hand-over done, its lead not logged yet)
  for (const Line& l : read_log(log)) {
    if (l.kind == "lead") {
      ++h.leads;
      const unsigned long long token = std::stoull(l.fields.at(0));
      if (token <= highest)
        h.violations.push_back("lead of " + l.id + " with token " + std::to_string(token) + " after token " +
                               std::to_string(highest));
      highest = std::max(highest, token);
      for (const auto& [other, o] : open) {
        if (o.frozen && o.token < token) {
          ++h.fenced;
        } else {
          h.violations.push_back(l.id + " (token " + std::to_string(token) + ") leads while " + other + " (token " +
                                 std::to_string(o.token) + ") still does, and " + other + " was not frozen");
        }
      }
      if (!handing.empty() && next_lead.empty()) next_lead = l.id;
      if (!expected.empty() && expected != l.id)
        h.violations.push_back("handed over to " + expected + ", but " + l.id + " led next");
      expected.clear();
      if (!killed.count(l.id)) open[l.id] = {token, false};
    } else if (l.kind == "follow" || l.kind == "kill" || l.kind == "exit") {
      if (l.kind == "follow" && open.count(l.id) && std::to_string(open[l.id].token) != l.fields.at(0))
        h.violations.push_back(l.id + " followed token " + l.fields.at(0) + " while it led with " +
                               std::to_string(open[l.id].token));
      open.erase(l.id);
      if (l.id == expected) expected.clear();  // handed the lead, it ended before it could log it (the run's end)
      if (l.kind == "kill") {
        ++h.kills;
        killed.insert(l.id);
      }
    } else if (l.kind == "freeze") {
      ++h.freezes;
      if (open.count(l.id)) open[l.id].frozen = true;
    } else if (l.kind == "resign") {
      ++h.resigns;
    } else if (l.kind == "handing") {
      handing = l.id;
      next_lead.clear();
    } else if (l.kind == "handed") {
      ++h.handovers;
      if (next_lead.empty()) expected = l.id;  // its lead is logged after the verb saw it
      else if (next_lead != l.id) h.violations.push_back("handed over to " + l.id + ", but " + next_lead + " led next");
      handing.clear();
    } else if (l.kind == "unexpected") {
      h.violations.push_back("candidate " + l.id + " ended by itself, exit " + l.fields.at(0));
    }
  }
  return h;
}

// Five candidates of one election, each replaced when killed; a fault every
// 0.3 to 1 s, one at a time, in turn: a SIGKILL (to the leader half the
// time), a freeze of the leader, a resignation, a hand-over, a resignation.
class ElectHistoryRun {
 public:
  explicit ElectHistoryRun(SwarmWorkspace& ws) : ws_(ws), log_(ws.root() / "elect.log") {}

  void run(std::chrono::seconds length) {
    for (int i = 0; i < 5; ++i) add();
    std::mt19937 rng(4242);
    const auto end = std::chrono::steady_clock::now() + length;
    for (int round = 0; std::chrono::steady_clock::now() < end; ++round) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300 + rng() % 700));
      switch (round % 5) {
        case 0: kill_one(rng); break;
        case 1: freeze_one(rng); break;
        case 3: hand_over(rng); break;
        default: resign(); break;
      }
    }
    for (auto& [id, p] : candidates_) {
      p->signal(SIGTERM);
      auto r = p->wait(length + 60s);  // counted from its start
      if (r.exit != 128 + SIGTERM) {
        append("unexpected " + id + " " + std::to_string(r.exit));
        std::istringstream said(r.err);  // what its swarm said, beside it
        for (std::string line; std::getline(said, line);) append("said " + id + " " + line);
      }
    }
  }

  const fs::path& log() const { return log_; }

 private:
  void append(const std::string& what) {
    std::ofstream(log_, std::ios::app) << what << " " << now() << "\n";
  }
  static std::string now() {
    char text[32];
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
    std::snprintf(text, sizeof text, "%.3f", static_cast<double>(ms.count()) / 1000.0);
    return text;
  }

  // A new candidate, once its command is ready for signals (it logged "start").
  void add() {
    const std::string id = "c" + std::to_string(next_++);
    candidates_.emplace(id, std::make_unique<Process>(start_candidate(ws_, "hist", id)));
    REQUIRE_MESSAGE(eventually([&] { return !lines_of(log_, "start", id).empty(); }, 20s),
                    "candidate " << id << " never started its command");
  }

  // The candidate that leads now by the log ("" when none does).
  std::string leader() const {
    std::string who;
    for (const Line& l : read_log(log_)) {
      if (l.kind == "lead") who = l.id;
      else if ((l.kind == "follow" || l.kind == "kill") && l.id == who) who.clear();
    }
    return who;
  }

  // The leader half the time, else anyone.
  std::string victim(std::mt19937& rng) const {
    const std::string lead = leader();
    if (!lead.empty() && rng() % 2 == 0 && candidates_.count(lead)) return lead;
    auto it = candidates_.begin();
    std::advance(it, static_cast<long>(rng() % candidates_.size()));
    return it->first;
  }

  void kill_one(std::mt19937& rng) {
    const std::string id = victim(rng);
    append("kill " + id);
    candidates_[id]->signal(SIGKILL);
    candidates_[id]->wait(10s);
    candidates_.erase(id);
    add();
  }

  // The leader's swarm alone (anyone's when none leads), past its TTL: its
  // command runs on, believing it leads.
  void freeze_one(std::mt19937& rng) {
    std::string id = leader();
    if (!candidates_.count(id)) id = victim(rng);
    append("freeze " + id);
    candidates_[id]->signal(SIGSTOP);
    std::this_thread::sleep_for(std::chrono::milliseconds(2500 + rng() % 1500));
    candidates_[id]->signal(SIGCONT);
    append("thaw " + id);
  }

  void resign() {
    append("resign -");
    ws_.swarm({"elect", "hist", "--resign", "--timeout", "10s"});
  }

  // To a waiting candidate other than the leader: when it says it did
  // (exit 0), that candidate must lead next.
  void hand_over(std::mt19937& rng) {
    const std::string lead = leader();
    std::vector<std::string> others;
    for (const auto& [id, p] : candidates_)
      if (id != lead) others.push_back(id);
    const std::string to = others[rng() % others.size()];
    append("handing " + to);
    auto r = ws_.swarm({"elect", "hist", "--resign", "--to", to, "--timeout", "10s"});
    if (r.exit == 0) append("handed " + to);
  }

  SwarmWorkspace& ws_;
  const fs::path log_;
  std::map<std::string, std::unique_ptr<Process>> candidates_;
  int next_ = 0;
};

}  // namespace

TEST_CASE("ElectHistory_EveryCandidateRunsAndNeverTwoLeadButAFrozenOneFenced") {
  // 30 s of five `elect --all` candidates under SIGKILLs (each replaced), freezes of a swarm past its TTL,
  // resignations and hand-overs: from the candidates' own logs of SIGUSR1 and SIGUSR2, no two lead at once
  // unless the earlier one's swarm was frozen (and its token is lower); tokens rise; a hand-over that said
  // it succeeded went to the named candidate; no command outlives its swarm.
  SwarmWorkspace ws;
  ElectHistoryRun history(ws);
  history.run(30s);
  ElectHistory h = check_history(history.log());
  CHECK(h.leads > 10);
  CHECK(h.kills > 2);
  CHECK(h.freezes > 2);
  CHECK(h.resigns > 3);
  CHECK(h.handovers > 0);
  CHECK_MESSAGE(h.violations.empty(), (h.violations.empty() ? std::string() : h.violations.front()));
  if (!h.violations.empty()) {
    std::ifstream in(history.log());
    MESSAGE("the history:\n" << std::string(std::istreambuf_iterator<char>(in), {}));
  }
  MESSAGE(h.leads << " leads, " << h.kills << " SIGKILLs, " << h.freezes << " freezes, " << h.resigns
                  << " resignations, " << h.handovers << " hand-overs, " << h.fenced
                  << " overlaps of a frozen leader, each fenced by a higher token");
  // No command (nor its child) outlives its swarm. (A bracket keeps the pattern from matching its own shell.)
  auto left = run({.args = {"/bin/sh", "-c", "pgrep -f '" + (ws.root() / "candidate[.]py").string() + "' || true"}});
  CHECK_MESSAGE(left.out.empty(), "commands left running: " << left.out);
}
