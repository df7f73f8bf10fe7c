// Conversations through the real binary: a reply sent with --reply-to
// carries the question's corr (unless --corr names another).
#include <doctest/doctest.h>

#include <map>
#include <sstream>

#include "cli/swarm_fixture.h"

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
