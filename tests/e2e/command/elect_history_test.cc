// The history checker of `swarm elect --all`: five candidates (elect_support.h)
// under SIGKILLs, freezes and resignations, each fault reached by
// construction, and from the candidates' own logs: no two lead at once, a
// frozen candidate's stale term aside, which its lower token fences.
#include <doctest/doctest.h>

#include <signal.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "e2e/command/elect_support.h"
#include "e2e/swarm_fixture.h"
#include "support/eventually.h"

using namespace testing;
using namespace testing::elect;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// The history: what the candidates logged and what the harness did, checked.
struct ElectHistory {
  int leads = 0, kills = 0, freezes = 0, resigns = 0, handovers = 0, handings = 0, fenced = 0;
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
      ++h.handings;
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

// Five candidates of one election, each replaced when killed; `cycles`
// rounds of five faults, one at a time, 0.2 to 0.6 s apart, always in this
// order: a SIGKILL (to the leader half the time), a freeze of the leader, a
// resignation, a hand-over, a resignation. Each fault waits, bounded, for
// what it needs (a leader to freeze or ask, a candidate waiting in line to
// hand over to), so every fault counted is reached however busy the machine
// is, not only when the timing is kind.
class ElectHistoryRun {
 public:
  explicit ElectHistoryRun(SwarmWorkspace& ws) : ws_(ws), log_(ws.root() / "elect.log") {}

  void run(int cycles) {
    for (int i = 0; i < 5; ++i) add();
    std::mt19937 rng(4242);
    const auto pause = [&rng] { std::this_thread::sleep_for(std::chrono::milliseconds(200 + rng() % 400)); };
    for (int cycle = 0; cycle < cycles; ++cycle) {
      CAPTURE(cycle);
      kill_one(rng);
      pause();
      freeze_one(rng);
      pause();
      resign();
      pause();
      hand_over(rng);
      pause();
      resign();
      pause();
    }
    for (auto& [id, p] : candidates_) {
      p->signal(SIGTERM);
      auto r = p->wait(120s);
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

  // The candidate that leads by the log, once one does (bounded: five
  // candidates in line are never leaderless for long).
  std::string await_leader() const {
    std::string who;
    const bool led = eventually([&] { return candidates_.count(who = leader()) == 1; }, 30s);
    REQUIRE_MESSAGE(led, "no candidate led within 30 s");
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

  // The leader's swarm alone, past its TTL: its command runs on, believing
  // it leads.
  void freeze_one(std::mt19937& rng) {
    const std::string id = await_leader();
    append("freeze " + id);
    candidates_[id]->signal(SIGSTOP);
    std::this_thread::sleep_for(std::chrono::milliseconds(2500 + rng() % 1500));
    candidates_[id]->signal(SIGCONT);
    append("thaw " + id);
  }

  // Asked of a leader: exit 4 is a moment between two terms (nobody leads,
  // nothing was asked), so it is asked again.
  void resign() {
    await_leader();
    append("resign -");
    const bool asked =
        eventually([&] { return ws_.swarm({"elect", "hist", "--resign", "--timeout", "10s"}).exit != 4; }, 30s);
    REQUIRE_MESSAGE(asked, "nobody led hist for 30 s of --resign");
  }

  // To a candidate other than the leader, once one waits in line (exit 4:
  // it does not yet, a thawed or new candidate, and nothing was asked);
  // asked again until one says it did (exit 0): that candidate must lead
  // next. Each ask is logged, so the checker sees every hand-over tried.
  void hand_over(std::mt19937& rng) {
    int tries = 0;
    const bool handed = eventually(
        [&] {
          const std::string lead = await_leader();
          std::vector<std::string> others;
          for (const auto& [id, p] : candidates_)
            if (id != lead) others.push_back(id);
          const std::string to = others[rng() % others.size()];
          append("handing " + to);
          ++tries;
          if (ws_.swarm({"elect", "hist", "--resign", "--to", to, "--timeout", "10s"}).exit != 0) return false;
          append("handed " + to);
          return true;
        },
        60s);
    REQUIRE_MESSAGE(handed, "no hand-over succeeded in 60 s (" << tries << " asked)");
  }

  SwarmWorkspace& ws_;
  const fs::path log_;
  std::map<std::string, std::unique_ptr<Process>> candidates_;
  int next_ = 0;
};

}  // namespace

TEST_CASE("ElectHistory_EveryCandidateRunsAndNeverTwoLeadButAFrozenOneFenced") {
  // Four rounds (about 30 s) of five `elect --all` candidates under SIGKILLs (each replaced), freezes of the
  // leader's swarm past its TTL, resignations and hand-overs, each reached by construction: from the
  // candidates' own logs of SIGUSR1 and SIGUSR2, no two lead at once unless the earlier one's swarm was frozen
  // (and its token is lower); tokens rise; a hand-over that said it succeeded went to the named candidate; no
  // command outlives its swarm.
  constexpr int kCycles = 4;
  SwarmWorkspace ws;
  ElectHistoryRun history(ws);
  const auto started = std::chrono::steady_clock::now();
  history.run(kCycles);
  const auto took = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started);
  ElectHistory h = check_history(history.log());
  CHECK(h.leads > 10);
  CHECK(h.kills == kCycles);
  CHECK(h.freezes == kCycles);
  CHECK(h.resigns == 2 * kCycles);
  CHECK(h.handovers == kCycles);
  CHECK_MESSAGE(h.violations.empty(), (h.violations.empty() ? std::string() : h.violations.front()));
  if (!h.violations.empty()) {
    std::ifstream in(history.log());
    MESSAGE("the history:\n" << std::string(std::istreambuf_iterator<char>(in), {}));
  }
  MESSAGE(took.count() << " s: " << h.leads << " leads, " << h.kills << " SIGKILLs, " << h.freezes << " freezes, " << h.resigns
                  << " resignations, " << h.handovers << " hand-overs (of " << h.handings << " asked), " << h.fenced
                  << " overlaps of a frozen leader, each fenced by a higher token");
  // No command (nor its child) outlives its swarm. (A bracket keeps the pattern from matching its own shell.)
  auto left = run({.args = {"/bin/sh", "-c", "pgrep -f '" + (ws.root() / "candidate[.]py").string() + "' || true"}});
  CHECK_MESSAGE(left.out.empty(), "commands left running: " << left.out);
}
