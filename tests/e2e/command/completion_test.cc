// Shell completion, driven in each real shell: bash (the completion function
// called as bash calls it), zsh (after compinit, compadd and _files recorded)
// and fish (complete -C).
#include <doctest/doctest.h>

#include <unistd.h>

#include <sstream>

#include "e2e/swarm_fixture.h"

using namespace testing;
namespace fs = std::filesystem;

namespace {

std::string shell_path(const char* name) {
  for (const char* dir : {"/usr/bin/", "/bin/"})
    if (::access((std::string(dir) + name).c_str(), X_OK) == 0) return std::string(dir) + name;
  return {};
}

std::string single_quoted(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// What `shell` offers after `line` (the words typed; a last "" is an empty current word).
std::vector<std::string> offered(const SwarmWorkspace& ws, const std::string& shell, const std::vector<std::string>& line) {
  const fs::path bin = fs::path(SWARM_BINARY).parent_path();
  std::string words, script;
  for (const auto& w : line) words += " " + single_quoted(w);
  if (shell == "bash") {
    script = "source <(swarm completion bash); COMP_WORDS=(" + words + "); COMP_CWORD=" +
             std::to_string(line.size() - 1) + "; _swarm; printf '%s\\n' \"${COMPREPLY[@]}\"";
  } else if (shell == "zsh") {
    script = "autoload -U compinit; compinit -u; source <(swarm completion zsh); "
             "compadd() { [[ $1 == -- ]] && shift; print -l -- \"$@\"; }; _files() { print -- FILES \"$@\"; }; "
             "words=(" + words + "); CURRENT=" + std::to_string(line.size()) + "; _swarm";
  } else {
    std::string typed;
    for (const auto& w : line) typed += (typed.empty() ? "" : " ") + w;
    script = "swarm completion fish | source; complete -C " + single_quoted(typed);
  }
  Command c{{shell_path(shell.c_str()), "-c", script},
            {{"PATH", bin.string() + ":/usr/bin:/bin"}, {"HOME", ws.home().string()}, {"SWARM_HOST", "host-a"},
             {"SWARM_HOST_ID", "id-a"}, {"SWARM_WORKSPACE", ws.root().string()}},
            ws.root()};
  auto r = run(c);
  INFO(shell << " " << script << "\n" << r.err);
  std::vector<std::string> out;
  std::istringstream in(r.out);
  for (std::string l; std::getline(in, l);) {
    if (l.empty()) continue;
    out.push_back(shell == "fish" ? l.substr(0, l.find('\t')) : l);  // fish adds a description after a tab
  }
  return out;
}

bool has(const std::vector<std::string>& words, const std::string& word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

}  // namespace

TEST_CASE("Completion_EachShellOffersWhatTheCommandLineDefines") {
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "render", "--task", "T-1"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "gone", "--task", "T-2"}).exit == 0);
  REQUIRE(ws.swarm({"evict", "--slot", "gone"}).exit == 0);  // its folder stays: a leftover
  REQUIRE(fs::exists(ws.worktree("gone")));
  write_file(ws.root() / "notes.txt", "n\n");
  REQUIRE(ws.swarm({"task", "add", "Parser", "--id", "T-7"}).exit == 0);
  REQUIRE(ws.swarm({"task", "add", "Odd", "--id", "x;touch y"}).exit == 0);  // never offered: not a plain key
  for (const std::string shell : {"bash", "zsh", "fish"}) {
    CAPTURE(shell);
    const std::string missing = shell + " is not installed: scripts/setup.sh --tests installs it";
    if (shell_path(shell.c_str()).empty()) FAIL(missing);
    auto verbs = offered(ws, shell, {"swarm", "l"});
    CHECK(has(verbs, "land"));
    CHECK(has(verbs, "lease"));
    CHECK(has(verbs, "log"));
    CHECK(!has(verbs, "join"));
    CHECK(!has(verbs, "_complete"));  // hidden
    auto subs = offered(ws, shell, {"swarm", "lease", ""});
    CHECK(has(subs, "acquire"));
    CHECK(has(subs, "list"));
    // After a sub-verb, its NAME: not the other sub-verbs, and no file names.
    auto after = offered(ws, shell, {"swarm", "lease", "acquire", ""});
    CHECK(!has(after, "renew"));
    CHECK(!has(after, "notes.txt"));
    auto results = offered(ws, shell, {"swarm", "close", "--result", ""});
    std::sort(results.begin(), results.end());
    CHECK(results == std::vector<std::string>{"fail", "fork", "success"});
    CHECK(has(offered(ws, shell, {"swarm", "--log-level", ""}), "debug"));
    CHECK(!has(offered(ws, shell, {"swarm", "--log-level", ""}), "notes.txt"));
    auto slots = offered(ws, shell, {"swarm", "commit", "--slot", ""});
    CHECK(has(slots, "render"));
    CHECK(!has(slots, "gone"));  // an evicted slot's leftover folder
    CHECK(has(offered(ws, shell, {"swarm", "send", "--to", ""}), "render"));  // inboxes: the slots
    CHECK(has(offered(ws, shell, {"swarm", "inbox", "--as", ""}), "render"));
    CHECK(offered(ws, shell, {"swarm", "up", "--ttl", ""}).empty());  // a free value: nothing
    CHECK(offered(ws, shell, {"swarm", "lock", "x", "--wait", ""}).empty());
    auto options = offered(ws, shell, {"swarm", "close", "--re"});
    CHECK(options == std::vector<std::string>{"--result"});
    // Task ids and states.
    CHECK(has(offered(ws, shell, {"swarm", "join", "--slot", "a", "--task", ""}), "T-7"));
    CHECK(has(offered(ws, shell, {"swarm", "task", "show", ""}), "T-7"));
    CHECK(has(offered(ws, shell, {"swarm", "review", "approve", "--task", ""}), "T-7"));
    CHECK(!has(offered(ws, shell, {"swarm", "task", "show", ""}), "x;touch y"));
    CHECK(has(offered(ws, shell, {"swarm", "task", "list", "--state", ""}), "in_review"));
    // Holds: the workspace's policy and the slots that hold.
    auto policies = offered(ws, shell, {"swarm", "up", "--holds", ""});
    CHECK(has(policies, "warn"));
    CHECK(has(policies, "refuse"));
    CHECK(policies.size() == 2);
    CHECK(has(offered(ws, shell, {"swarm", "hold", "--slot", ""}), "render"));
    CHECK(has(offered(ws, shell, {"swarm", "hold", "--sh"}), "--shared"));
    CHECK(has(offered(ws, shell, {"swarm", "holds", "--slot", ""}), "render"));
    // Elections: --all among elect's options, put or get for a state (a positional's members), then a file.
    CHECK(has(offered(ws, shell, {"swarm", "elect", "sched", "--a"}), "--all"));
    auto actions = offered(ws, shell, {"swarm", "elect", "state", "sched", ""});
    CHECK(has(actions, "put"));
    CHECK(has(actions, "get"));
    CHECK(actions.size() == 2);
    // Paths to commit: the shell's own file completion.
    auto paths = offered(ws, shell, {"swarm", "commit", "no"});
    if (shell == "zsh") CHECK(has(paths, "FILES"));
    else CHECK(has(paths, "notes.txt"));
  }
}
