// Messages between agents through the real binary (swarm send, inbox, ack,
// ask, blob): a send retried after a lost answer is stored once; a message
// is delivered until acked and never after; two ackers of one inbox lose
// nothing; retention that drops unacked messages is a gap; a blob is whole
// before its message is sent; ask gets its reply; hostile input is data.
#include <doctest/doctest.h>

#include <nats/nats.h>
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "e2e/swarm_fixture.h"
#include "kv/bucket.h"
#include "kv/connection.h"
#include "kv/stream.h"
#include "support/eventually.h"
#include "support/temp_dir.h"

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// What a bus's age limit does, behind swarm's back: every message below seq
// `below` removed from `stream`.
void purge_below(const std::string& url, const std::string& stream, std::uint64_t below) {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  REQUIRE(natsConnection_ConnectTo(&nc, url.c_str()) == NATS_OK);
  REQUIRE(natsConnection_JetStream(&js, nc, nullptr) == NATS_OK);
  jsOptions options;
  jsOptions_Init(&options);
  options.Stream.Purge.Sequence = below;
  CHECK(js_PurgeStream(js, stream.c_str(), &options, nullptr) == NATS_OK);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
}

// Each line of `text` as JSON.
std::vector<swarm::Json> json_lines(const std::string& text) {
  std::vector<swarm::Json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(swarm::Json::parse(line));
  return out;
}

std::vector<std::uint64_t> seqs_of(const std::string& json_lines_text) {
  std::vector<std::uint64_t> out;
  for (const auto& j : json_lines(json_lines_text)) out.push_back(static_cast<std::uint64_t>(number(j, "seq")));
  return out;
}

// `swarm ARGS...` with standard input from `input`.
RunResult swarm_fed(const SwarmWorkspace& ws, const std::vector<std::string>& args, const fs::path& input) {
  Command c = ws.command(args);
  std::vector<std::string> wrapped = {"/bin/sh", "-c", "exec \"$@\" < \"$SWARM_TEST_INPUT\"", "sh"};
  wrapped.insert(wrapped.end(), c.args.begin(), c.args.end());
  c.args = wrapped;
  c.env["SWARM_TEST_INPUT"] = input.string();
  return run(c);
}

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 engine(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(engine() & 0xff);
  return s;
}

}  // namespace

TEST_CASE("Message_ASendRetriedAfterALostAnswerIsStoredOnce") {
  // The first send's answer is lost (sent as a client that never read it); the retry with the same id is
  // stored once and says so; a script's own retry with --id is stored once too.
  SwarmWorkspace ws;
  auto first = ws.swarm({"send", "--to", "a", "--from", "lead", "--id", "m-1", "--json", "hello"},
                        {{"SWARM_TEST_SEND_LOSE_ANSWER", "1"}});
  REQUIRE_MESSAGE(first.exit == 0, first.err);
  auto doc = json_of(first);
  CHECK(field(doc, "schema") == "swarm.send.v1");
  CHECK(field(doc, "id") == "m-1");
  CHECK(cJSON_IsTrue(cJSON_GetObjectItem(doc.get(), "duplicate")));
  auto again = ws.swarm({"send", "--to", "a", "--from", "lead", "--id", "m-1", "hello"});
  CHECK(again.exit == 0);
  CHECK(again.out == "m-1\n");
  auto inbox = ws.swarm({"inbox", "--as", "a", "--json"});
  REQUIRE(inbox.exit == 0);
  auto lines = json_lines(inbox.out);
  REQUIRE(lines.size() == 1);
  CHECK(field(lines[0], "id") == "m-1");
  CHECK(field(lines[0], "body") == "hello");
  CHECK(field(lines[0], "from") == "lead");
}

TEST_CASE("Message_DeliveredUntilAckedAndNeverAfter") {
  // An inbox gets its own messages and everyone's, oldest first, not another's; unacked they come again;
  // acked they never do; an ack never moves back; inbox --ack acks what it printed.
  SwarmWorkspace ws;
  for (const auto& [to, body] : std::vector<std::pair<std::string, std::string>>{
           {"a", "one"}, {"b", "not for a"}, {"*", "to all"}, {"a", "two"}, {"a", "three"}}) {
    std::vector<std::string> args = {"send", "--from", "lead", body};
    if (to == "*") args.insert(args.begin() + 1, "--all");
    else args.insert(args.begin() + 1, {"--to", to});
    REQUIRE(ws.swarm(args).exit == 0);
  }
  auto read = [&](const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"inbox", "--as", "a", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = ws.swarm(args);
    REQUIRE_MESSAGE(r.exit == 0, r.err);
    std::vector<std::string> bodies;
    for (const auto& j : json_lines(r.out)) bodies.push_back(field(j, "body"));
    return std::make_pair(bodies, seqs_of(r.out));
  };
  auto [bodies, seqs] = read();
  CHECK(bodies == std::vector<std::string>{"one", "to all", "two", "three"});
  REQUIRE(seqs.size() == 4);
  CHECK(std::is_sorted(seqs.begin(), seqs.end()));
  CHECK(read().first == bodies);  // unacked: delivered again
  REQUIRE(ws.swarm({"ack", "--as", "a", std::to_string(seqs[1])}).exit == 0);
  CHECK(read().first == std::vector<std::string>{"two", "three"});
  auto back = ws.swarm({"ack", "--as", "a", std::to_string(seqs[0]), "--json"});
  CHECK(back.exit == 0);
  CHECK(cJSON_IsFalse(cJSON_GetObjectItem(json_of(back).get(), "moved")));
  CHECK(read().first == std::vector<std::string>{"two", "three"});
  CHECK(read({"--ack", "-n", "1"}).first == std::vector<std::string>{"two"});
  CHECK(read().first == std::vector<std::string>{"three"});
  // b reads its own and everyone's, whatever a acked.
  auto b = ws.swarm({"inbox", "--as", "b"});
  CHECK(b.out.find("not for a") != std::string::npos);
  CHECK(b.out.find("to all") != std::string::npos);
  CHECK(b.out.find("three") == std::string::npos);
  // An ack past the bus's last message is refused: it would skip what comes.
  CHECK(ws.swarm({"ack", "--as", "a", "999"}).exit == 2);
  // A filter acks only up to the first message it did not show.
  REQUIRE(ws.swarm({"send", "--to", "c", "--from", "lead", "--type", "chat", "hi"}).exit == 0);
  REQUIRE(ws.swarm({"send", "--to", "c", "--from", "lead", "--type", "question", "may I?"}).exit == 0);
  auto q = ws.swarm({"inbox", "--as", "c", "--type", "question", "--ack"});
  CHECK(q.out.find("may I?") != std::string::npos);
  auto c_left = ws.swarm({"inbox", "--as", "c"});
  CHECK(c_left.out.find(" chat hi") != std::string::npos);  // not lost by the filtered ack
}

TEST_CASE("Message_TwoAckersAtOnceLoseNothingAndGetNothingAfterAnAck") {
  // Two readers of one inbox, each reading 3 at a time with --ack, until it is empty: every message is
  // printed at least once, and none by a read that began after an ack covering it had ended.
  SwarmWorkspace ws;
  constexpr int kMessages = 30;
  for (int i = 0; i < kMessages; ++i) REQUIRE(ws.swarm({"send", "--to", "a", "--from", "lead", "m" + std::to_string(i)}).exit == 0);
  struct Call {
    std::chrono::steady_clock::time_point start, end;
    std::vector<std::uint64_t> seqs;
  };
  std::mutex mu;
  std::vector<Call> calls;
  auto reader = [&] {
    for (int round = 0; round < 60; ++round) {
      Call c;
      c.start = std::chrono::steady_clock::now();
      auto r = ws.swarm({"inbox", "--as", "a", "--ack", "-n", "3", "--json"});
      c.end = std::chrono::steady_clock::now();
      if (r.exit != 0) continue;
      c.seqs = seqs_of(r.out);
      const bool empty = c.seqs.empty();
      {
        std::lock_guard<std::mutex> lock(mu);
        calls.push_back(std::move(c));
      }
      if (empty) return;
    }
  };
  std::thread one(reader), two(reader);
  one.join();
  two.join();
  std::set<std::uint64_t> seen;
  for (const auto& c : calls) seen.insert(c.seqs.begin(), c.seqs.end());
  CHECK(seen.size() == kMessages);
  for (const auto& earlier : calls) {
    if (earlier.seqs.empty()) continue;
    const std::uint64_t acked = *std::max_element(earlier.seqs.begin(), earlier.seqs.end());
    for (const auto& later : calls)
      if (later.start > earlier.end)
        for (auto s : later.seqs) CHECK_MESSAGE(s > acked, "seq " << s << " delivered after an ack of " << acked);
  }
  CHECK(ws.swarm({"inbox", "--as", "a"}).out.empty());
}

TEST_CASE("Message_RetentionThatDropsUnackedMessagesIsAGap") {
  // a's cursor at its first message, then the bus's age limit takes what a never read (the oldest three
  // messages, purged here by hand); the next read of a says how many bus messages were dropped after its
  // cursor, and doctor reports [inbox_gap].
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"send", "--to", "a", "--from", "lead", "first"}).exit == 0);
  auto first = ws.swarm({"inbox", "--as", "a", "--ack", "--json"});
  REQUIRE(seqs_of(first.out).size() == 1);
  REQUIRE(ws.swarm({"send", "--to", "a", "--from", "lead", "second, never read"}).exit == 0);
  for (int i = 0; i < 36; ++i) REQUIRE(ws.swarm({"send", "--to", "b", "--from", "lead", "to b"}).exit == 0);
  purge_below(ws.server()->url(), ws.names().bus, 5);  // seqs 2, 3, 4: a's second and two of b's
  // ... as age does: the cursor's own message older than the bus keeps any.
  rewrite_the_cursor(ws, "\"at\":[0-9]+", "\"at\":1");
  auto read = ws.swarm({"inbox", "--as", "a"});
  CHECK(read.exit == 0);
  CAPTURE(read.err);
  CHECK(read.err.find("gap: ") != std::string::npos);
  CHECK(read.err.find("dropped by retention before a acked them") != std::string::npos);
  auto doctor = ws.swarm({"doctor"});
  CHECK(doctor.out.find("[inbox_gap] inbox a: retention dropped ") != std::string::npos);
  CHECK(doctor.exit == 0);  // a notice: what is gone cannot be fixed
  // Acked past the gap, it is no longer reported.
  REQUIRE(ws.swarm({"ack", "--as", "a", "38"}).exit == 0);  // the bus's last: 2 to a, 36 to b
  CHECK(ws.swarm({"doctor"}).out.find("[inbox_gap]") == std::string::npos);
}

TEST_CASE("Message_ABlobIsWholeBeforeItsMessage") {
  // A file goes by blob: the message names its SHA-256 and size, and blob get writes the same bytes. A
  // send killed after handing the blob's bytes over, before its description, leaves no message and no blob.
  SwarmWorkspace ws;
  const fs::path file = ws.home() / "build.log";
  write_file(file, random_bytes(1 << 20, 7));
  auto sent = ws.swarm({"send", "--to", "reviewer", "--from", "a", "--file", file.string(), "--json"});
  REQUIRE_MESSAGE(sent.exit == 0, sent.err);
  auto blob = swarm::Json::copy(cJSON_GetObjectItem(json_of(sent).get(), "blob"));
  const std::string sha = field(blob, "sha256");
  CHECK(sha.size() == 64);
  CHECK(number(blob, "size") == (1 << 20));
  auto inbox = json_lines(ws.swarm({"inbox", "--as", "reviewer", "--json"}).out);
  REQUIRE(inbox.size() == 1);
  CHECK(field(swarm::Json::copy(cJSON_GetObjectItem(inbox[0].get(), "blob")), "sha256") == sha);
  const fs::path out = ws.home() / "got.log";
  auto got = ws.swarm({"blob", "get", sha, "-o", out.string()});
  REQUIRE_MESSAGE(got.exit == 0, got.err);
  CHECK(read_file(out) == read_file(file));
  // Stored once: a put of the same file names the same blob.
  CHECK(ws.swarm({"blob", "put", file.string()}).out == sha + "\n");
  // Killed between its bytes and its description.
  const fs::path other = ws.home() / "other.log";
  write_file(other, random_bytes(3 << 20, 9));
  Process send(ws.command({"send", "--to", "reviewer", "--from", "a", "--file", other.string()},
                          {{"SWARM_TEST_BUS_STOP", "blob-read"}}));
  REQUIRE(eventually([&] { return process_state(send.pid()) == 'T'; }, 20s));
  send.signal(SIGKILL);
  send.wait(5s);
  auto after = json_lines(ws.swarm({"inbox", "--as", "reviewer", "--json"}).out);
  CHECK(after.size() == 1);  // only the first
  // Its chunks, named by no blob, are said (too young for --fix to take: a put may be under way).
  auto doctor = ws.swarm({"doctor", "--fix"});
  CHECK(doctor.out.find("[blob_leftover] chunks ") != std::string::npos);
  CHECK(doctor.out.find("or one under way") != std::string::npos);
  auto put = ws.swarm({"blob", "put", other.string()});
  REQUIRE(put.exit == 0);
  std::string other_sha = put.out.substr(0, 64);
  CHECK(ws.swarm({"blob", "get", other_sha, "-o", (ws.home() / "other.got").string()}).exit == 0);
  CHECK(read_file(ws.home() / "other.got") == read_file(other));
}

TEST_CASE("Message_ALargeBlobIsStoredOnceInOnePass") {
  // Over 8 MiB a blob is named by the hash taken while it is sent: the same file put twice is one blob in
  // the store (the second copy taken back), and it comes back whole.
  SwarmWorkspace ws;
  const fs::path file = ws.home() / "large.bin";
  write_file(file, random_bytes(9 << 20, 11));
  auto first = ws.swarm({"blob", "put", file.string()});
  REQUIRE_MESSAGE(first.exit == 0, first.err);
  auto second = ws.swarm({"blob", "put", file.string()});
  REQUIRE(second.exit == 0);
  CHECK(first.out == second.out);
  auto nats = kv::Connection::connect({.urls = {ws.server()->url()}});
  auto st = kv::Stream::bind(nats, "OBJ_" + ws.names().blobs).state();
  REQUIRE(st.has_value());
  CHECK(st->bytes < (10u << 20));  // one copy of 9 MiB and its description
  const fs::path out = ws.home() / "large.got";
  REQUIRE(ws.swarm({"blob", "get", first.out.substr(0, 64), "-o", out.string()}).exit == 0);
  CHECK(read_file(out) == read_file(file));
}

TEST_CASE("Message_DoctorReportsBlobsRetentionLeftAndMessagesWhoseBlobIsGone") {
  // A blob whose message retention dropped is [blob_orphan]; a kept message whose blob is gone is
  // [blob_missing]; both notices (exit 0), and a blob still named is neither.
  SwarmWorkspace ws;
  const fs::path early = ws.home() / "early.bin", kept = ws.home() / "kept.bin";
  write_file(early, random_bytes(200 * 1024, 21));
  write_file(kept, random_bytes(200 * 1024, 22));
  auto sent = ws.swarm({"send", "--to", "a", "--from", "lead", "--file", early.string(), "--json"});
  REQUIRE(sent.exit == 0);
  const std::string early_sha = field(swarm::Json::copy(cJSON_GetObjectItem(json_of(sent).get(), "blob")), "sha256");
  // Read and acked, the message is gone from the bus; its blob stays, named by no message.
  REQUIRE(ws.swarm({"inbox", "--as", "a", "--ack"}).exit == 0);
  auto kept_sent = ws.swarm({"send", "--to", "a", "--from", "lead", "--file", kept.string(), "--json"});
  REQUIRE(kept_sent.exit == 0);
  const std::string kept_sha = field(swarm::Json::copy(cJSON_GetObjectItem(json_of(kept_sent).get(), "blob")), "sha256");
  auto doctor = ws.swarm({"doctor"});
  CHECK(doctor.exit == 0);
  CAPTURE(doctor.out);
  CHECK(doctor.out.find("[blob_orphan] blob " + early_sha) != std::string::npos);
  CHECK(doctor.out.find(kept_sha) == std::string::npos);
  // The store emptied behind swarm's back: the kept message's blob is gone.
  {
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    REQUIRE(natsConnection_ConnectTo(&nc, ws.server()->url().c_str()) == NATS_OK);
    REQUIRE(natsConnection_JetStream(&js, nc, nullptr) == NATS_OK);
    CHECK(js_PurgeStream(js, ("OBJ_" + ws.names().blobs).c_str(), nullptr, nullptr) == NATS_OK);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
  }
  auto after = ws.swarm({"doctor"});
  CHECK(after.exit == 0);
  CAPTURE(after.out);
  CHECK(after.out.find("[blob_missing] blob " + kept_sha + " is not in the store, but message") != std::string::npos);
  CHECK(after.out.find("[blob_orphan]") == std::string::npos);
  CHECK(ws.swarm({"blob", "get", kept_sha}).exit == 4);
}

TEST_CASE("Message_OthersAcksAreNoGap") {
  // a acks its first message; ten go to b, which reads and acks them (they leave the bus, so its first kept
  // sequence moves past a's cursor); then one to a: a's read says no gap, and doctor reports none.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"send", "--to", "a", "--from", "lead", "first"}).exit == 0);
  REQUIRE(ws.swarm({"inbox", "--as", "a", "--ack"}).exit == 0);
  for (int i = 0; i < 10; ++i) REQUIRE(ws.swarm({"send", "--to", "b", "--from", "lead", "to b"}).exit == 0);
  REQUIRE(ws.swarm({"inbox", "--as", "b", "--ack"}).exit == 0);
  REQUIRE(ws.swarm({"send", "--to", "a", "--from", "lead", "after b's"}).exit == 0);
  auto read = ws.swarm({"inbox", "--as", "a"});
  CHECK(read.exit == 0);
  CHECK(read.out.find("after b's") != std::string::npos);
  CHECK(read.err.find("gap") == std::string::npos);
  CHECK(ws.swarm({"doctor"}).out.find("[inbox_gap]") == std::string::npos);
}

TEST_CASE("Message_AFullBusRefusesWhatIsSentAndKeepsWhatIsUnread") {
  // A bus of 1 MiB: sends to b until it is full; the next send is exit 9 naming the bus, every unread
  // message is still there, and a's or b's acks make room again (acked messages leave the bus).
  SwarmWorkspace ws({.up_args = {"--bus-max-bytes", "1MiB"}});
  const std::string big(60 * 1024, 'x');
  int sent = 0;
  RunResult refused;
  for (int i = 0; i < 40; ++i) {
    refused = ws.swarm({"send", "--to", "b", "--from", "lead", big + std::to_string(i)});
    if (refused.exit != 0) break;
    ++sent;
  }
  CAPTURE(refused.err);
  REQUIRE(refused.exit == 9);
  CHECK(sent >= 10);
  CHECK(refused.err.find("the message bus (stream " + ws.names().bus + ") is full, so nothing was sent") !=
        std::string::npos);
  // Others' sessions and leases are untouched by a full bus.
  CHECK(ws.swarm({"lock", "build", "--", "true"}).exit == 0);
  auto unread = ws.swarm({"inbox", "--as", "b", "--json"});
  CHECK(seqs_of(unread.out).size() == static_cast<std::size_t>(sent));
  REQUIRE(ws.swarm({"inbox", "--as", "b", "--ack"}).exit == 0);
  CHECK(ws.swarm({"send", "--to", "b", "--from", "lead", big}).exit == 0);
  CHECK(seqs_of(ws.swarm({"inbox", "--as", "b", "--json"}).out).size() == 1);
}

TEST_CASE("Message_AMissingBlobIsExit4BlobMissing") {
  SwarmWorkspace ws;
  const std::string sha(64, 'a');
  auto r = ws.swarm({"blob", "get", sha, "--json"});
  CHECK(r.exit == 4);
  CHECK(r.out.empty());
  CHECK(r.err.find("\"kind\":\"blob_missing\"") != std::string::npos);
  const fs::path kept = ws.home() / "kept.txt";
  write_file(kept, "mine\n");
  CHECK(ws.swarm({"blob", "get", sha, "-o", kept.string()}).exit == 4);
  CHECK(read_file(kept) == "mine\n");  // left as it was
  CHECK(ws.swarm({"blob", "get", "XYZ"}).exit == 2);
}

TEST_CASE("Message_AskGetsTheFirstReplyAndWaitReturnsAtTheFirstArrival") {
  SwarmWorkspace ws;
  Process ask(ws.command({"ask", "--to", "lead", "--from", "a", "--wait", "20s", "may I change the API?"}));
  // The lead waits for questions, and answers the first.
  auto question = ws.swarm({"inbox", "--as", "lead", "--wait", "15s", "--json"});
  REQUIRE_MESSAGE(question.exit == 0, question.err);
  auto lines = json_lines(question.out);
  REQUIRE(lines.size() == 1);
  CHECK(field(lines[0], "body") == "may I change the API?");
  REQUIRE(ws.swarm({"send", "--to", "a", "--from", "lead", "--reply-to", field(lines[0], "id"), "--corr",
                    field(lines[0], "corr"), "yes, with a note"}).exit == 0);
  auto answered = ask.wait(20s);
  CHECK(answered.exit == 0);
  CHECK(answered.out == "yes, with a note\n");
  // No reply by the deadline: exit 4.
  auto unanswered = ws.swarm({"ask", "--to", "nobody", "--from", "a", "--wait", "500ms", "anyone?"});
  CHECK(unanswered.exit == 4);
  // inbox --wait returns at the first arrival, and is exit 4 when nothing came.
  Process waiting(ws.command({"inbox", "--as", "late", "--wait", "20s"}));
  std::this_thread::sleep_for(300ms);
  const auto sent_at = std::chrono::steady_clock::now();
  REQUIRE(ws.swarm({"send", "--to", "late", "--from", "lead", "here"}).exit == 0);
  auto woke = waiting.wait(20s);
  CHECK(woke.exit == 0);
  CHECK(woke.out.find(" lead - here") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - sent_at < 5s);
  CHECK(ws.swarm({"inbox", "--as", "empty", "--wait", "300ms"}).exit == 4);
}

TEST_CASE("Message_HostileInputIsData") {
  // Control bytes in a body, type and name show escaped; JSON Lines stay valid; a message that is not
  // swarm.message.v1 on an inbox's subject is shown as corrupt; bad names and a blob over the limit are exit 2
  // before anything is stored; standard input over 64 KiB goes by blob.
  SwarmWorkspace ws({.up_args = {"--blob-max-bytes", "1MiB"}});
  REQUIRE(ws.swarm({"send", "--to", "a", "--from", "lead", "--type", "t\x1b[2J", "bell\x07 and\nsecond line"}).exit == 2);
  REQUIRE(ws.swarm({"send", "--to", "a", "--from", "lead", "bell\x07 \x1b[31mred\nsecond line"}).exit == 0);
  auto text = ws.swarm({"inbox", "--as", "a"});
  CHECK(text.out.find('\x1b') == std::string::npos);
  CHECK(text.out.find("\\x1b[31mred") != std::string::npos);
  CHECK(text.out.find("second line") == std::string::npos);  // the first line only
  auto json = ws.swarm({"inbox", "--as", "a", "--json"});
  auto lines = json_lines(json.out);
  REQUIRE(lines.size() == 1);
  CHECK(field(lines[0], "body") == "bell\x07 \x1b[31mred\nsecond line");
  // Planted on a's subject by another client.
  {
    auto nats = kv::Connection::connect({.urls = {ws.server()->url()}});
    auto bus = kv::Stream::bind(nats, ws.names().bus);
    bus.publish(ws.names().bus_root + ws.names().sessions + ".to.a", "{\"schema\":\"evil\",\"body\":\"\\u001b[2J\"}", "planted-1");
    bus.publish(ws.names().bus_root + ws.names().sessions + ".to.a", "not json \x1b[2J", "planted-2");
    bus.publish(ws.names().bus_root + ws.names().sessions + ".to.a",
                "{\"schema\":\"swarm.message.v1\",\"id\":\"x\",\"to\":\"b\",\"body\":\"lies about to\"}", "planted-3");
  }
  auto shown = ws.swarm({"inbox", "--as", "a"});
  CHECK(shown.exit == 0);
  CHECK(shown.out.find('\x1b') == std::string::npos);
  std::size_t corrupt = 0;
  for (std::size_t at = shown.out.find(" corrupt "); at != std::string::npos; at = shown.out.find(" corrupt ", at + 1)) ++corrupt;
  CHECK(corrupt == 3);
  for (const auto& j : json_lines(ws.swarm({"inbox", "--as", "a", "--json"}).out)) CHECK(static_cast<bool>(j));
  // Names follow the slot rule, before any I/O.
  for (const std::string bad : {"a b", "../x", "", "a.b", "*"}) {
    CAPTURE(bad);
    CHECK(ws.swarm({"send", "--to", bad, "--from", "lead", "x"}).exit == 2);
    CHECK(ws.swarm({"inbox", "--as", bad}).exit == 2);
  }
  // A blob over the workspace's limit: exit 2, nothing stored.
  const fs::path big = ws.home() / "big.bin";
  write_file(big, random_bytes((1 << 20) + 1, 3));
  auto too_big = ws.swarm({"blob", "put", big.string()});
  CHECK(too_big.exit == 2);
  CHECK(too_big.err.find("more than a blob may be") != std::string::npos);
  CHECK(ws.swarm({"send", "--to", "a", "--from", "lead", "--file", big.string()}).exit == 2);
  // Standard input over 64 KiB, and within the limit, goes by blob.
  const fs::path input = ws.home() / "input.txt";
  write_file(input, std::string(100 * 1024, 'y'));
  auto fed = swarm_fed(ws, {"send", "--to", "d", "--from", "lead", "--json", "-"}, input);
  REQUIRE_MESSAGE(fed.exit == 0, fed.err);
  auto fed_blob = swarm::Json::copy(cJSON_GetObjectItem(json_of(fed).get(), "blob"));
  CHECK(number(fed_blob, "size") == 100 * 1024);
  auto over = swarm_fed(ws, {"send", "--to", "d", "--from", "lead", "-"}, big);
  CHECK(over.exit == 2);
  CHECK(json_lines(ws.swarm({"inbox", "--as", "d", "--json"}).out).size() == 1);
}

TEST_CASE("Message_WhatTheReviewFoundStaysFixed") {
  // Each a way a message was lost or mangled before: a filtered --ack --wait passed a message it never
  // showed; --ack acked what a closed pipe never got; one id to two inboxes was stored once; a NUL cut a
  // body short; a FIFO hung send; an inbox whose last message was deleted read as empty (2.9); an idle
  // inbox's cursor stayed behind the bus.
  SwarmWorkspace ws;
  // 1. A filtered --ack that waits acks only what it showed, in order.
  REQUIRE(ws.swarm({"send", "--to", "a", "--from", "lead", "--type", "note", "n1"}).exit == 0);
  Process waiting(ws.command({"inbox", "--as", "a", "--type", "question", "--wait", "15s", "--ack"}));
  std::this_thread::sleep_for(300ms);
  REQUIRE(ws.swarm({"send", "--to", "a", "--from", "lead", "--type", "question", "q1"}).exit == 0);
  auto got = waiting.wait(20s);
  CHECK(got.exit == 0);
  CHECK(got.out.find("q1") != std::string::npos);
  CHECK(ws.swarm({"inbox", "--as", "a"}).out.find(" note n1") != std::string::npos);
  // 2. Output that never reached a reader is not acked.
  for (int i = 0; i < 300; ++i) REQUIRE(ws.swarm({"send", "--to", "pp", "--from", "lead", std::string(200, 'p')}).exit == 0);
  Command piped = ws.command({"inbox", "--as", "pp", "--ack"});
  std::vector<std::string> shell = {"/bin/sh", "-c", "\"$@\" | head -c 100 > /dev/null", "sh"};
  shell.insert(shell.end(), piped.args.begin(), piped.args.end());
  piped.args = shell;
  run(piped);
  auto left = json_lines(ws.swarm({"inbox", "--as", "pp", "--json"}).out);
  CHECK(left.size() >= 100);  // a closed pipe after ~100 bytes: what it took before is at most a batch or two
  // 3. One id, two inboxes: two messages.
  REQUIRE(ws.swarm({"send", "--to", "f1", "--from", "lead", "--id", "build-42", "to f1"}).exit == 0);
  auto second = ws.swarm({"send", "--to", "f2", "--from", "lead", "--id", "build-42", "--json", "to f2"});
  REQUIRE(second.exit == 0);
  CHECK(cJSON_IsFalse(cJSON_GetObjectItem(json_of(second).get(), "duplicate")));
  CHECK(ws.swarm({"inbox", "--as", "f2"}).out.find("to f2") != std::string::npos);
  // 4. A NUL in standard input goes by blob, whole.
  const fs::path nul = ws.home() / "nul.bin";
  write_file(nul, std::string("abc\0def", 7));
  auto sent = swarm_fed(ws, {"send", "--to", "n", "--from", "lead", "--json", "-"}, nul);
  REQUIRE(sent.exit == 0);
  const std::string sha = field(swarm::Json::copy(cJSON_GetObjectItem(json_of(sent).get(), "blob")), "sha256");
  REQUIRE(ws.swarm({"blob", "get", sha, "-o", (ws.home() / "nul.got").string()}).exit == 0);
  CHECK(read_file(ws.home() / "nul.got") == std::string("abc\0def", 7));
  // 5. A FIFO is no file to send: exit 2 at once.
  const fs::path fifo = ws.home() / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto fifo_send = ws.swarm({"send", "--to", "n", "--from", "lead", "--file", fifo.string()});
  CHECK(fifo_send.exit == 2);
  CHECK(ws.swarm({"blob", "put", fifo.string()}).exit == 2);
  // 6. An inbox whose last message was deleted still has its others.
  REQUIRE(ws.swarm({"send", "--to", "hh", "--from", "lead", "one"}).exit == 0);
  auto two = ws.swarm({"send", "--to", "hh", "--from", "lead", "--json", "two"});
  const auto two_seq = static_cast<std::uint64_t>(number(json_of(two), "seq"));
  {
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    REQUIRE(natsConnection_ConnectTo(&nc, ws.server()->url().c_str()) == NATS_OK);
    REQUIRE(natsConnection_JetStream(&js, nc, nullptr) == NATS_OK);
    CHECK(js_DeleteMsg(js, ws.names().bus.c_str(), two_seq, nullptr, nullptr) == NATS_OK);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
  }
  auto hh = ws.swarm({"inbox", "--as", "hh"});
  CHECK(hh.out.find(" lead - one") != std::string::npos);
  // 7. An inbox read to the end moves past what the bus held for others.
  REQUIRE(ws.swarm({"send", "--to", "other", "--from", "lead", "not for idle"}).exit == 0);
  auto idle = ws.swarm({"inbox", "--as", "idle", "--ack"});
  CHECK(idle.out.empty());
  auto ack = json_of(ws.swarm({"ack", "--as", "idle", "1", "--json"}));
  CHECK(number(ack, "seq") > 300);  // at the bus's end, not 0
}

TEST_CASE("Message_AFileThatChangesWhileItIsStoredStoresNothing") {
  // Named by a first read, then changed before it is sent: nothing is stored under the first name, and
  // the put says so (exit 9); a put again stores the file as it is now.
  SwarmWorkspace ws;
  const fs::path file = ws.home() / "moving.bin";
  write_file(file, random_bytes(1 << 20, 31));
  Process put(ws.command({"blob", "put", file.string()}, {{"SWARM_TEST_BUS_STOP", "blob-named"}}));
  REQUIRE(eventually([&] { return process_state(put.pid()) == 'T'; }, 20s));
  const std::string before = read_file(file);
  write_file(file, random_bytes(1 << 20, 32));
  put.signal(SIGCONT);
  auto r = put.wait(20s);
  CHECK(r.exit == 9);
  CHECK(r.err.find("changed while it was stored") != std::string::npos);
  const fs::path old_copy = ws.home() / "before.bin";
  write_file(old_copy, before);
  // What the first read named was not stored: its SHA is missing.
  auto named = run({{"/bin/sh", "-c", "sha256sum " + old_copy.string() + " | cut -c1-64"}});
  const std::string old_sha = named.out.substr(0, 64);
  CHECK(ws.swarm({"blob", "get", old_sha}).exit == 4);
  auto again = ws.swarm({"blob", "put", file.string()});
  REQUIRE(again.exit == 0);
  REQUIRE(ws.swarm({"blob", "get", again.out.substr(0, 64), "-o", (ws.home() / "now.bin").string()}).exit == 0);
  CHECK(read_file(ws.home() / "now.bin") == read_file(file));
}

TEST_CASE("Message_ABusMadeAgainIsReadFromItsStartAndPlantedBlobsAreRefused") {
  // A bus deleted and made again starts its sequences over: an old cursor (past the new bus's end) reads as
  // none, so what is sent now is delivered. A planted description whose nuid is a wildcard is no blob.
  SwarmWorkspace ws;
  for (int i = 0; i < 5; ++i) REQUIRE(ws.swarm({"send", "--to", "m", "--from", "lead", "old " + std::to_string(i)}).exit == 0);
  REQUIRE(ws.swarm({"inbox", "--as", "m", "--ack"}).exit == 0);
  {
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    REQUIRE(natsConnection_ConnectTo(&nc, ws.server()->url().c_str()) == NATS_OK);
    REQUIRE(natsConnection_JetStream(&js, nc, nullptr) == NATS_OK);
    CHECK(js_DeleteStream(js, ws.names().bus.c_str(), nullptr, nullptr) == NATS_OK);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
  }
  REQUIRE(ws.swarm({"up", "--nats-url", ws.server()->url()}).exit == 0);
  REQUIRE(ws.swarm({"send", "--to", "m", "--from", "lead", "new"}).exit == 0);
  auto r = ws.swarm({"inbox", "--as", "m"});
  CHECK(r.out.find(" lead - new") != std::string::npos);
  CHECK(r.err.find("a bus made before this one") != std::string::npos);
  // A planted description: its nuid a wildcard.
  const std::string sha(64, 'b');
  {
    auto nats = kv::Connection::connect({.urls = {ws.server()->url()}});
    REQUIRE(ws.swarm({"blob", "put", (ws.root() / ".swarm/config.json").string()}).exit == 0);  // the store exists
    // base64url of 64 'b's, as NATS names a description's subject.
    std::string b64;
    {
      static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
      for (std::size_t i = 0; i < sha.size(); i += 3) {
        unsigned n = (unsigned(sha[i]) << 16) | (i + 1 < sha.size() ? unsigned(sha[i + 1]) << 8 : 0) |
                     (i + 2 < sha.size() ? unsigned(sha[i + 2]) : 0);
        b64 += k[(n >> 18) & 63];
        b64 += k[(n >> 12) & 63];
        b64 += i + 1 < sha.size() ? k[(n >> 6) & 63] : '=';
        b64 += i + 2 < sha.size() ? k[n & 63] : '=';
      }
    }
    kv::Stream::bind(nats, "OBJ_" + ws.names().blobs)
        .publish("$O." + ws.names().blobs + ".M." + b64,
                 "{\"name\":\"" + sha + "\",\"nuid\":\">\",\"size\":10,\"chunks\":1,\"digest\":\"SHA-256=x\"}", "planted-d");
  }
  auto get = ws.swarm({"blob", "get", sha});
  CHECK(get.exit == 4);
  CHECK(get.out.empty());
}
