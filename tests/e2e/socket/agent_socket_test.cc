// The agent's socket (cli/socket/, cli/verbs/remote.h): `swarm VERB` inside
// the agent of a `swarm run` is answered by that run, with the document and
// exit code the verb gives when it acts on its own, and with no NATS
// connection of the agent's.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

#include "e2e/swarm_fixture.h"
#include "support/eventually.h"
#include "support/temp_dir.h"

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// What an agent script runs each command of twice: through the socket, then
// with SWARM_SOCKET unset (its own connection); stdout, stderr and the exit
// code of each in $OUT/NAME.{socket,direct}{,.err,.rc}.
const char* kPairs = R"(#!/bin/sh
pair() { name=$1; shift
  "$@" > "$OUT/$name.socket" 2> "$OUT/$name.socket.err" < "$OUT/input"; echo $? > "$OUT/$name.socket.rc"
  env -u SWARM_SOCKET "$@" > "$OUT/$name.direct" 2> "$OUT/$name.direct.err" < "$OUT/input"; echo $? > "$OUT/$name.direct.rc"
}
echo "$SWARM_SOCKET" > "$OUT/socket_path"
)";

// A document with what moves between two calls left out: ages, states, and
// what a write changes (a revision, a sequence, an id, a token, a cursor).
std::string steady(const std::string& text) {
  swarm::Json doc = swarm::Json::parse(text);
  if (!doc) return "not JSON: " + text;
  std::function<void(cJSON*)> strip = [&](cJSON* node) {
    for (const char* moving : {"age_seconds", "expires_in_seconds", "state", "revision", "seq", "id", "token", "name",
                               "was", "moved", "duplicate", "last_renewed", "time", "created_at", "updated_at", "renewed_at",
                               "created_by"})
      cJSON_DeleteItemFromObject(node, moving);
    for (cJSON* child = node ? node->child : nullptr; child != nullptr; child = child->next)
      if (cJSON_IsObject(child) || cJSON_IsArray(child)) strip(child);
  };
  strip(doc.get());
  return doc.dump();
}

std::string digits_aside(const std::string& text) {
  return std::regex_replace(text, std::regex("[0-9]+"), "N");
}

std::string last_line(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const auto nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

// Runs `script` (after kPairs) as the agent of slot s; waits for it to end.
void run_agent(SwarmWorkspace& ws, const fs::path& out, const std::string& script) {
  fs::create_directories(out);
  write_file(out / "input", "a body from standard input\n");
  const auto agent = ws.root() / "agent.sh";
  write_file(agent, std::string(kPairs) + script + "touch \"$OUT/done\"\n");
  fs::permissions(agent, fs::perms::owner_all);
  auto env = kHostA;
  env["OUT"] = out.string();
  env["SWARM_BIN"] = swarm_binary();
  auto r = ws.swarm({"run", "--slot", "s", "--task", "T-1", "--keep", "--", "./agent.sh"}, env);
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  REQUIRE(fs::exists(out / "done"));
}

}  // namespace

TEST_CASE("Socket_EveryVerbGivesTheSameDocumentAndExitCodeEitherWay") {
  // each verb of the verbs layer, run by the agent through its run's socket and on its own: the same exit code,
  // the same document (what a write moves aside), the same error; text as well as --json.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "o", "--task", "T-0"}, kHostA).exit == 0);
  REQUIRE(ws.swarm({"hold", "--slot", "o", "src/**"}).exit == 0);
  REQUIRE(ws.swarm({"send", "--to", "s", "--from", "o", "--id", "m-1", "first"}).exit == 0);
  REQUIRE(ws.swarm({"task", "add", "Write the guide", "--id", "T-9", "--label", "docs"}).exit == 0);
  TempDir dir("swarm-socket");
  const fs::path out = dir.path() / "out";
  run_agent(ws, out,
            "B=$SWARM_BIN\n"
            "pair status $B --json status\n"
            "pair status_text $B status --slot s\n"
            "pair status_missing $B --json status --slot nobody\n"
            "pair renew $B --json renew --status working --note 'on it'\n"
            "pair renew_text $B renew\n"
            "pair renew_replaced $B --json renew --session 999\n"
            "pair hold $B --json hold 'docs/**' --reason 'the guide'\n"
            "pair hold_conflict $B --json hold 'src/api/**'\n"
            "pair hold_whole $B --json hold '**'\n"
            "pair holds $B --json holds\n"
            "pair holds_text $B holds --slot o\n"
            "pair send $B --json send --to o 'hello there'\n"
            "pair send_stdin $B --json send --to o -\n"
            "pair send_nofile $B --json send --to o --file /nonexistent/x\n"
            "pair inbox $B --json inbox -n 5\n"
            "pair inbox_text $B inbox\n"
            "pair inbox_none $B --json inbox --as nobody --wait 10ms\n"
            "pair ack $B --json ack 1\n"
            "pair ack_bad $B --json ack 0\n"
            "pair release $B --json hold --release 'none/**'\n"
            "pair cwd $B --json cwd\n"
            "pair cwd_text $B cwd\n"
            "pair cwd_missing $B --json cwd --slot nobody\n"
            "pair evict_missing $B --json evict --slot nobody\n"
            "pair evict_bad $B --json evict --slot ../x\n"
            "pair commit_empty $B --json commit -m ''\n"
            "pair commit_outside $B --json commit -m x /etc/passwd\n"
            "pair sync_bad $B --json sync --onto 'a..b'\n"
            "pair close_lane $B --json close --result fail --priority high\n"
            "pair close_other $B --json close --slot nobody\n"
            "echo one > one.txt; $B --json commit -m one one.txt > \"$OUT/commit.socket\"; echo $? > \"$OUT/commit.socket.rc\"\n"
            "echo two > two.txt; env -u SWARM_SOCKET $B --json commit -m two two.txt > \"$OUT/commit.direct\";"
            " echo $? > \"$OUT/commit.direct.rc\"\n"
            "pair sync $B --json sync\n"
            "pair log $B --json log --slot s -n 3\n"
            "pair log_text $B log --slot s -n 3\n"
            "pair log_zero $B --json log -n 0\n"
            "pair log_kind $B --json log --kind nope\n"
            "pair doctor $B --json doctor\n"
            "pair branches $B --json branches\n"
            "pair branches_text $B branches\n"
            "pair branches_bad $B --json branches --onto 'a..b'\n"
            "pair lease_list $B --json lease list\n"
            "pair lease_list_text $B lease list\n"
            "pair lease_show $B --json lease show task.T-1\n"
            "pair lease_show_text $B lease show task.T-1\n"
            "pair lease_show_missing $B --json lease show no.such.lease\n"
            "pair lease_show_bad $B --json lease show '../x'\n"
            "pair task_list $B --json task list --label docs\n"
            "pair task_list_text $B task list\n"
            "pair task_show $B --json task show T-9\n"
            "pair task_show_text $B task show T-9\n"
            "pair task_show_missing $B --json task show T-404\n"
            "pair task_list_bad $B --json task list --state nope\n"
            "printf 'the body\\n' > \"$OUT/body.txt\"\n"
            "(cd \"$OUT\" && pair task_add $B --json task add 'A pair' --label pair --body-file body.txt)\n"
            "pair task_add_exists $B --json task add 'Again' --id T-9\n"
            "pair task_add_bad $B --json task add 'Bad' --priority 9\n"
            "pair task_edit $B --json task edit T-9 --priority 1 --label +guide\n"
            "pair task_edit_text $B task edit T-9 --priority 1\n"
            "pair task_edit_bad $B --json task edit T-9 --label guide\n"
            "pair task_cancel_missing $B --json task cancel T-404\n"
            "pair task_reopen_open $B --json task reopen T-9\n"
            "$B --json task cancel T-9 --reason pause > \"$OUT/cancel.socket\"; echo $? > \"$OUT/cancel.socket.rc\"\n"
            "env -u SWARM_SOCKET $B --json task reopen T-9 > \"$OUT/reopen.direct\"; echo $? > \"$OUT/reopen.direct.rc\"\n"
            "tok=$($B lease acquire pair.x --ttl 60s)\n"
            "pair lease_renew $B --json lease renew pair.x --token \"$tok\"\n"
            "pair lease_renew_text $B lease renew pair.x --token \"$tok\"\n"
            "pair lease_renew_stale $B --json lease renew pair.x --token 1\n"
            "pair lease_renew_bad $B --json lease renew pair.x --token 0\n"
            "$B lease acquire pair.sem --limit 2 > /dev/null\n"
            "pair lease_limit $B --json lease limit pair.sem 3\n"
            "pair lease_limit_bad $B --json lease limit pair.sem 0\n"
            "$B --json lease release pair.x --token \"$tok\" > \"$OUT/lease_release.socket\";"
            " echo $? > \"$OUT/lease_release.socket.rc\"\n"
            "pair lease_release_again $B --json lease release pair.x --token \"$tok\"\n"
            "pair review_show $B --json review show T-9\n"
            "pair review_show_missing $B --json review show T-404\n"
            "pair review_approve_bad $B --json review approve\n"
            "pair review_reject_missing $B --json review reject --task T-404 --reason 'not yet'\n"
            "pair join_none $B --json join --slot j1\n"
            "pair join_both $B --json join --slot j1 --task T-50 --next\n"
            "pair join_live $B --json join --slot o --task T-0\n"
            "sh -c 'echo $$ > \"$OUT/join.pid\"; exec \"$0\" --json join --slot j1 --task T-50' $B"
            " > \"$OUT/join.socket\"; echo $? > \"$OUT/join.socket.rc\"\n"
            "env -u SWARM_SOCKET $B --json status --slot j1 > \"$OUT/join.status\"\n"
            "pair task_export $B --json task export\n"
            "(cd \"$OUT\" && $B task export tasks.jsonl 2> export.err && pair task_import $B --json task import tasks.jsonl)\n"
            "pair task_import_missing $B --json task import /nonexistent/tasks.jsonl\n");
  for (const char* name : {"status", "status_text", "status_missing", "renew", "renew_text", "renew_replaced", "hold",
                           "hold_conflict", "hold_whole", "holds", "holds_text", "send", "send_stdin", "send_nofile",
                           "inbox", "inbox_text", "inbox_none", "ack", "ack_bad", "release", "cwd", "cwd_text",
                           "cwd_missing", "evict_missing", "evict_bad", "commit_empty", "commit_outside", "sync_bad",
                           "close_lane", "close_other", "sync", "log", "log_text", "log_zero", "log_kind", "branches",
                           "branches_text", "branches_bad", "lease_list", "lease_list_text", "lease_show",
                           "lease_show_text", "lease_show_missing", "lease_show_bad", "task_list", "task_list_text",
                           "task_show", "task_show_text", "task_show_missing", "task_list_bad", "task_add",
                           "task_add_exists", "task_add_bad", "task_edit", "task_edit_text", "task_edit_bad",
                           "task_cancel_missing", "task_reopen_open", "lease_renew", "lease_renew_text",
                           "lease_renew_stale", "lease_renew_bad", "lease_limit", "lease_limit_bad",
                           "lease_release_again", "review_show", "review_show_missing", "review_approve_bad",
                           "review_reject_missing", "join_none", "join_both", "join_live", "task_export",
                           "task_import", "task_import_missing"}) {
    CAPTURE(name);
    const std::string n = name;
    const std::string socket_rc = read_file(out / (n + ".socket.rc")), direct_rc = read_file(out / (n + ".direct.rc"));
    const std::string socket = read_file(out / (n + ".socket")), direct = read_file(out / (n + ".direct"));
    const std::string socket_err = read_file(out / (n + ".socket.err"));
    const std::string direct_err = read_file(out / (n + ".direct.err"));
    INFO("socket: " << socket << socket_err << "direct: " << direct << direct_err);
    CHECK(socket_rc == direct_rc);
    const bool text = n.find("_text") != std::string::npos;
    if (text) {
      // Ages and revisions aside (a second may tick between the two).
      CHECK_FALSE(socket.empty());
      CHECK(digits_aside(socket) == digits_aside(direct));
    } else if (socket_rc == "0\n") {
      // inbox: JSON Lines, each a message.
      std::string a, b;
      std::istringstream sa(socket), sb(direct);
      for (std::string line; std::getline(sa, line);) a += steady(line) + "\n";
      for (std::string line; std::getline(sb, line);) b += steady(line) + "\n";
      CHECK(a == b);
      CHECK_FALSE(a.empty());
    } else {
      // Ages aside (a join's refusal says how old the session is).
      CHECK(digits_aside(last_line(socket_err)) == digits_aside(last_line(direct_err)));
      CHECK(last_line(socket_err).find("swarm.error.v1") != std::string::npos);
    }
  }
  // What each pair was meant to show.
  CHECK(read_file(out / "status_missing.socket.rc") == "4\n");
  CHECK(read_file(out / "renew_replaced.socket.rc") == "3\n");
  CHECK(read_file(out / "hold_conflict.socket.rc") == "3\n");
  CHECK(read_file(out / "hold_whole.socket.rc") == "2\n");
  CHECK(read_file(out / "send_nofile.socket.rc") == "2\n");
  CHECK(read_file(out / "inbox_none.socket.rc") == "4\n");
  CHECK(read_file(out / "ack_bad.socket.rc") == "2\n");
  CHECK(read_file(out / "release.socket.rc") == "4\n");
  CHECK(read_file(out / "renew.socket").find("\"slot\":\"s\"") != std::string::npos);
  CHECK(read_file(out / "cwd.socket").find("\"worktree\":") != std::string::npos);
  CHECK(read_file(out / "cwd_missing.socket.rc") == "4\n");
  CHECK(read_file(out / "evict_missing.socket.rc") == "4\n");
  CHECK(read_file(out / "evict_bad.socket.rc") == "2\n");
  CHECK(read_file(out / "log.socket").find("\"kind\":\"commit\"") != std::string::npos);
  CHECK(read_file(out / "lease_show.socket").find("\"name\":\"task.T-1\"") != std::string::npos);
  CHECK(read_file(out / "lease_show_missing.socket.rc") == "4\n");
  CHECK(read_file(out / "lease_show_bad.socket.rc") == "2\n");
  CHECK(read_file(out / "branches_bad.socket.rc") == "2\n");
  CHECK(read_file(out / "task_list.socket").find("\"id\":\"T-9\"") != std::string::npos);
  CHECK(read_file(out / "task_show.socket").find("\"events\":[") != std::string::npos);
  CHECK(read_file(out / "task_show_missing.socket.rc") == "4\n");
  CHECK(read_file(out / "task_list_bad.socket.rc") == "2\n");
  // The queue changed through the socket: a body read from the caller's folder, each bad input and refusal as on
  // its own, a cancel through the socket undone by a reopen on its own.
  CHECK(read_file(out / "task_add.socket").find("\"body\":\"the body\\n\"") != std::string::npos);
  CHECK(read_file(out / "task_add_exists.socket.rc") == "3\n");
  CHECK(read_file(out / "task_add_bad.socket.rc") == "2\n");
  CHECK(read_file(out / "task_edit.socket").find("\"priority\":1") != std::string::npos);
  CHECK(read_file(out / "task_edit.socket").find("\"guide\"") != std::string::npos);
  CHECK(read_file(out / "task_edit_bad.socket.rc") == "2\n");
  CHECK(read_file(out / "task_cancel_missing.socket.rc") == "4\n");
  CHECK(read_file(out / "task_reopen_open.socket.rc") == "3\n");
  CHECK(read_file(out / "cancel.socket.rc") == "0\n");
  CHECK(read_file(out / "cancel.socket").find("\"result\":\"pause\"") != std::string::npos);
  CHECK(read_file(out / "reopen.direct.rc") == "0\n");
  CHECK(read_file(out / "reopen.direct").find("\"state\":\"open\"") != std::string::npos);
  // A lease's grant renewed and released by its token, a semaphore's limit set, a review refused, either way.
  CHECK(read_file(out / "lease_renew.socket").find("\"name\":\"pair.x\"") != std::string::npos);
  CHECK(read_file(out / "lease_renew_stale.socket.rc") == "3\n");
  CHECK(read_file(out / "lease_renew_bad.socket.rc") == "2\n");
  CHECK(read_file(out / "lease_limit.socket").find("\"limit\":3") != std::string::npos);
  CHECK(read_file(out / "lease_limit_bad.socket.rc") == "2\n");
  CHECK(read_file(out / "lease_release.socket.rc") == "0\n");
  CHECK(read_file(out / "lease_release.socket").find("\"released\":{") != std::string::npos);
  CHECK(read_file(out / "lease_release_again.socket.rc") != "0\n");
  CHECK(read_file(out / "review_show_missing.socket.rc") == "4\n");
  CHECK(read_file(out / "review_approve_bad.socket.rc") == "2\n");
  CHECK(read_file(out / "review_reject_missing.socket.rc") == "4\n");
  // A join through the socket: the session records the caller (the socket's peer), not the run that answered.
  CHECK(read_file(out / "join_none.socket.rc") == "2\n");
  CHECK(read_file(out / "join_both.socket.rc") == "2\n");
  CHECK(read_file(out / "join_live.socket.rc") == "3\n");
  CHECK(read_file(out / "join.socket.rc") == "0\n");
  CHECK(read_file(out / "join.socket").find("\"slot\":\"j1\"") != std::string::npos);
  const std::string joiner = last_line(read_file(out / "join.pid"));
  // The queue exported through the socket (to standard output, and to a file of the caller's folder) and
  // imported back unchanged.
  CHECK(read_file(out / "task_export.socket").find("\"id\":\"T-9\"") != std::string::npos);
  CHECK(read_file(out / "export.err").find("exported ") != std::string::npos);
  CHECK(read_file(out / "tasks.jsonl").find("\"id\":\"T-9\"") != std::string::npos);
  CHECK(read_file(out / "task_import.socket").find("\"created\":0,\"updated\":0") != std::string::npos);
  CHECK(read_file(out / "task_import_missing.socket.rc") == "2\n");
  CHECK(read_file(out / "join.status").find("\"leaf_pid\":" + joiner + ",") != std::string::npos);
  // doctor: its report and its exit code (8 while problems remain) either way.
  CHECK(read_file(out / "doctor.socket.rc") == read_file(out / "doctor.direct.rc"));
  CHECK(steady(read_file(out / "doctor.socket")) == steady(read_file(out / "doctor.direct")));
  CHECK(read_file(out / "doctor.socket").find("\"schema\":\"swarm.doctor.v1\"") != std::string::npos);
  for (const char* bad : {"commit_empty", "commit_outside", "sync_bad", "close_lane", "log_zero", "log_kind"}) {
    CAPTURE(bad);
    CHECK(read_file(out / (std::string(bad) + ".socket.rc")) == "2\n");
  }
  CHECK(read_file(out / "close_other.socket.rc") == read_file(out / "close_other.direct.rc"));
  CHECK(read_file(out / "close_other.socket.rc") != "0\n");
  // A commit through the socket and one on its own: each pushed, the paths
  // named relative to the agent's folder (its worktree).
  for (const char* way : {"commit.socket", "commit.direct"}) {
    CAPTURE(way);
    CHECK(read_file(out / (std::string(way) + ".rc")) == "0\n");
    const std::string doc = read_file(out / way);
    CHECK(doc.find("\"branch\":\"swarm/s\"") != std::string::npos);
    CHECK(doc.find("\"pushed\":true") != std::string::npos);
  }
  CHECK(read_file(out / "sync.socket").find("\"how\":\"up-to-date\"") != std::string::npos);
  // The body from standard input went along, inline as it would on its own.
  auto inbox = ws.swarm({"--json", "inbox", "--as", "o"});
  CHECK(inbox.out.find("a body from standard input") != std::string::npos);
  // The socket and its folder are gone with the run; its folder was the user's alone.
  const fs::path socket_path = last_line(read_file(out / "socket_path"));
  CHECK(socket_path.filename() == "agent.sock");
  CHECK_FALSE(fs::exists(socket_path));
  CHECK_FALSE(fs::exists(socket_path.parent_path()));
}

TEST_CASE("Socket_TheAgentNeedsNoConnectionOfItsOwn") {
  // with a NATS URL that reaches nothing, the agent's verbs are answered by its run (which acts on its workspace's
  // server), while the same verb on its own is exit 7; a socket nobody serves is exit 7 naming it, and changes
  // nothing; the socket's folder is 0700.
  SwarmWorkspace ws;
  TempDir dir("swarm-socket");
  const fs::path out = dir.path() / "out";
  run_agent(ws, out,
            "export NATS_URL=nats://127.0.0.1:1\n"
            "pair renew $SWARM_BIN --json renew --note unreachable-alone\n"
            "stat -c %a \"$(dirname \"$SWARM_SOCKET\")\" > \"$OUT/mode\"\n");
  CHECK(read_file(out / "renew.socket.rc") == "0\n");
  CHECK(read_file(out / "renew.direct.rc") == "7\n");
  CHECK(read_file(out / "mode") == "700\n");
  CHECK(ws.swarm({"--json", "status", "--slot", "s"}).out.find("unreachable-alone") != std::string::npos);
  // The run has ended: its socket answers no one.
  auto env = kHostA;
  env["SWARM_SOCKET"] = last_line(read_file(out / "socket_path"));
  auto gone = ws.swarm({"renew", "--slot", "s", "--note", "never"}, env);
  CHECK(gone.exit == 7);
  CHECK(gone.err.find("SWARM_SOCKET") != std::string::npos);
  CHECK(ws.swarm({"--json", "status", "--slot", "s"}).out.find("never") == std::string::npos);
}
