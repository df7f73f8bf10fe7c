// What the `elect --all` tests share (elect_all_test.cc, elect_history_test.cc):
// a candidate whose command (Python) logs each change as it hears it,
// reading the token from $SWARM_FENCING_TOKEN_FILE, and that log read back.
#pragma once

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "e2e/swarm_fixture.h"

namespace testing::elect {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Logs "KIND ID FIELDS... TIME" lines to argv[1] as candidate argv[2]:
// "start ID LEADER ENV_TOKEN CHILD_PID" once, then "lead ID TOKEN" and
// "follow ID TOKEN" as the token file changes, checked on each SIGUSR1 and
// SIGUSR2 whichever comes (two pending signals run in number order, not in
// the order sent), and "exit ID 143" when SIGTERM ends it. Its child (sleep) is there to show that the signals go
// to the command alone, not to what it started.
inline constexpr const char* kCandidate = R"(import os, signal, subprocess, sys, time
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

inline std::vector<Line> read_log(const fs::path& log) {
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
inline std::vector<Line> lines_of(const fs::path& log, const std::string& kind, const std::string& id = {}) {
  std::vector<Line> out;
  for (auto& l : read_log(log))
    if (l.kind == kind && (id.empty() || l.id == id)) out.push_back(l);
  return out;
}

// A candidate of election `name` whose command is the logger above.
// `env` on top of host A's; its TTL 2 s unless `extra` gives --ttl.
inline Process start_candidate(const SwarmWorkspace& ws, const std::string& name, const std::string& id,
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
inline void stop_candidates(const std::vector<Process*>& candidates) {
  for (Process* p : candidates) p->signal(SIGTERM);
  for (Process* p : candidates) CHECK(p->wait(60s).exit == 128 + SIGTERM);
}

inline bool alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0 && process_state(pid) != 'Z'; }

}  // namespace testing::elect
