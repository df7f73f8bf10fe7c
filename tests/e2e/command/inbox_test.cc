// Conversations through the real binary: a reply sent with --reply-to
// carries the question's corr (unless --corr names another); a follow with
// --wait ends once the wait passed without a new message.
#include <doctest/doctest.h>

#include <map>
#include <sstream>

#include "e2e/swarm_fixture.h"

using namespace testing;
using namespace std::chrono_literals;

namespace {

// Each line of `text` as JSON.
std::vector<swarm::Json> json_lines(const std::string& text) {
  std::vector<swarm::Json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(swarm::Json::parse(line));
  return out;
}

// The messages of `inbox` (not acked), as JSON.
std::vector<swarm::Json> messages_of(const SwarmWorkspace& ws, const std::string& inbox) {
  auto r = ws.swarm({"inbox", "--as", inbox, "--json"});
  REQUIRE_MESSAGE(r.exit == 0, r.err);
  return json_lines(r.out);
}

}  // namespace

TEST_CASE("Inbox_AReplyCarriesTheCorrOfTheQuestionItAnswers") {
  // a question to a1 (corr c-1) and one to all (corr c-2), each answered with --reply-to alone: the replies carry
  // c-1 and c-2, and inbox --corr finds each conversation; --corr given wins; a reply to an id the bus does not
  // keep is sent without corr, with a warning naming the id.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"send", "--to", "a1", "--from", "lead", "--id", "q-1", "--corr", "c-1", "may I?"}).exit == 0);
  REQUIRE(ws.swarm({"send", "--all", "--from", "lead", "--id", "q-2", "--corr", "c-2", "anyone?"}).exit == 0);
  auto one = ws.swarm({"send", "--to", "lead", "--from", "a1", "--reply-to", "q-1", "yes"});
  REQUIRE_MESSAGE(one.exit == 0, one.err);
  CHECK(one.err.empty());
  REQUIRE(ws.swarm({"send", "--to", "lead", "--from", "a1", "--reply-to", "q-2", "me"}).exit == 0);
  REQUIRE(ws.swarm({"send", "--to", "lead", "--from", "a1", "--reply-to", "q-1", "--corr", "mine", "also"}).exit == 0);
  auto lost = ws.swarm({"send", "--to", "lead", "--from", "a1", "--reply-to", "q-gone", "late"});
  REQUIRE_MESSAGE(lost.exit == 0, lost.err);
  CHECK(lost.err.find("q-gone") != std::string::npos);
  const auto got = messages_of(ws, "lead");
  REQUIRE(got.size() == 5);  // the broadcast, and the four replies
  std::map<std::string, std::pair<std::string, std::string>> by_body;  // body: reply_to, corr
  for (const auto& m : got) by_body[field(m, "body")] = {field(m, "reply_to"), field(m, "corr")};
  CHECK(by_body["yes"] == std::make_pair(std::string("q-1"), std::string("c-1")));
  CHECK(by_body["me"] == std::make_pair(std::string("q-2"), std::string("c-2")));
  CHECK(by_body["also"] == std::make_pair(std::string("q-1"), std::string("mine")));
  CHECK(by_body["late"] == std::make_pair(std::string("q-gone"), std::string("")));
  auto conversation = ws.swarm({"inbox", "--as", "lead", "--corr", "c-1", "--json"});
  REQUIRE(conversation.exit == 0);
  const auto c1 = json_lines(conversation.out);
  REQUIRE(c1.size() == 1);
  CHECK(field(c1[0], "body") == "yes");
}

TEST_CASE("Inbox_FollowWithWaitEndsOnceTheWaitPassesWithoutANewMessage") {
  // --follow --wait DUR: nothing at all came within DUR: exit 4. Messages that keep coming keep it going (each
  // starts DUR again); DUR after the last one it ends, exit 0, having printed each. Bounded by the test's wait.
  SwarmWorkspace ws;
  const auto started = std::chrono::steady_clock::now();
  auto none = ws.swarm({"inbox", "--as", "idle", "--follow", "--wait", "1s"});
  CHECK(none.exit == 4);
  CHECK(none.out.empty());
  CHECK(none.err.find("no message for idle within 1s") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - started < 15s);
  Process follow(ws.command({"inbox", "--as", "busy", "--follow", "--wait", "3s"}));
  for (int i = 1; i <= 3; ++i) {
    REQUIRE(ws.swarm({"send", "--to", "busy", "--from", "lead", "message-" + std::to_string(i)}).exit == 0);
    // Each is printed before the next is sent: the follow is still on.
    auto line = follow.read_line(10s);
    REQUIRE(line);
    CHECK(line->find(" lead - message-" + std::to_string(i)) != std::string::npos);
  }
  const auto last = std::chrono::steady_clock::now();
  auto ended = follow.wait(20s);
  CHECK(ended.exit == 0);
  CHECK(ended.out.empty());  // each was read above
  CHECK(std::chrono::steady_clock::now() - last >= 2s);
}
