// swarm send, ack and ask: messages between agents on the bus (swarm/bus/),
// each to one inbox or to all, acknowledged by moving the inbox's cursor;
// bodies too long for a message go by blob (message_body.h). inbox.cc reads.
#include <filesystem>

#include "cli/verbs/message_body.h"
#include "cli/verbs/messages.h"
#include "cli/verbs/verbs.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"

namespace cli {

namespace {

// The fault tests' seam: the first send of a message is sent as a client
// that lost its answer, then sent again as a retry would.
constexpr const char* kLoseAnswer = "SWARM_TEST_SEND_LOSE_ANSWER";
constexpr auto kDefaultAskWait = std::chrono::seconds(60);

struct SendRequest {
  std::string to, corr, reply_to, type, from, id, file, wait;
  bool all = false;
  std::vector<std::string> text;
};

swarm::Message message_of(const SendRequest& r) {
  swarm::Message m;
  m.id = r.id.empty() ? swarm::fresh_message_id() : r.id;
  m.from = r.from;
  m.to = r.all ? swarm::kToAll : r.to;
  m.type = r.type;
  m.corr = r.corr;
  m.reply_to = r.reply_to;
  return m;
}

swarm::Bus::Sent send_once(const swarm::Bus& bus, const swarm::Message& m) {
  if (const char* lose = std::getenv(kLoseAnswer); lose != nullptr && *lose == '1') bus.send_unanswered(m);
  return bus.send(m);
}

swarm::Json blob_json(const swarm::BlobRef& b) {
  swarm::Json j = swarm::Json::object();
  j.set("sha256", b.sha256).set("size", b.size).set("name", b.name);
  return j;
}

// The body of a send or an ask, read where the verb runs.
Body body_of(const SendRequest& r, const Context& ctx, std::uint64_t max) {
  Body body;
  read_body({.text = r.text, .file = r.file, .input = ctx.standard_input()}, max, body);
  return body;
}

// Where the request is made: who sends (the caller's slot), and a --file
// named from the caller's folder.
void resolve_sender(SendRequest& r, const Context& ctx) {
  r.from = inbox_name(ctx, r.from, "--from");
  if (!r.file.empty()) r.file = std::filesystem::absolute(r.file).lexically_normal().string();
}

VerbResult send(const SendRequest& r, Context& ctx, Reporter& report) {
  swarm::Message m = message_of(r);
  auto messages = ctx.messages();
  Body body = body_of(r, ctx, messages.config.blob_max());
  // A reply is of the question's conversation: its corr, unless --corr names one.
  if (!m.reply_to.empty() && m.corr.empty()) {
    if (auto corr = corr_of(messages.bus, m.from, m.reply_to)) m.corr = *corr;
    else report.warn("message " + swarm::printable(m.reply_to) + " is not among the messages to " + m.from +
                     " or to all that the bus keeps (a message to one inbox leaves the bus once that inbox acks it), "
                     "so the reply carries no corr (--corr C gives it one)");
  }
  store_blob(messages.blobs, body, m);
  const auto sent = send_once(messages.bus, m);
  VerbResult out;
  out.doc.set("id", m.id).set("seq", sent.seq).set("duplicate", sent.duplicate).set("to", m.to);
  if (m.blob) out.doc.set("blob", blob_json(*m.blob));
  else out.doc.set_null("blob");
  if (sent.duplicate)
    report.note("message " + swarm::printable(m.id) + " was stored before (seq " + std::to_string(sent.seq) +
                "); not stored again");
  out.text = swarm::printable(m.id) + "\n";
  return out;
}

VerbResult ask(const SendRequest& r, Context& ctx, Reporter&) {
  const auto wait = r.wait.empty() ? std::chrono::milliseconds(kDefaultAskWait) : swarm::parse_duration(r.wait);
  swarm::Message m = message_of(r);
  m.corr = swarm::fresh_message_id();
  auto messages = ctx.messages(true);
  Body body = body_of(r, ctx, messages.config.blob_max());
  // Listening before the question goes: no answer can come before.
  auto answers = messages.bus.listen(m.from);
  store_blob(messages.blobs, body, m);
  const auto sent = send_once(messages.bus, m);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    auto got = answers.next(left);
    if (!got) continue;
    swarm::Delivered d = messages.bus.delivered(*got);
    if (d.corrupt() || d.message->reply_to != m.id) continue;
    VerbResult out;
    out.doc.set("id", m.id).set("seq", sent.seq).set("corr", m.corr).set("reply", d.to_json());
    std::string text = swarm::printable(d.message->body, true);
    if (d.message->blob)
      text += std::string(text.empty() ? "" : "\n") + "[blob " + d.message->blob->sha256 + " " +
              std::to_string(d.message->blob->size) + " bytes]";
    out.text = text + "\n";
    return out;
  }
  throw swarm::Error(swarm::Errc::not_found, "no reply to " + swarm::printable(m.id) + " from " + m.to + " within " +
                                                 swarm::format_duration(wait) + " (the question stays in its inbox, seq " +
                                                 std::to_string(sent.seq) + ")");
}

struct AckRequest {
  std::string as, seq;
};

VerbResult ack(const AckRequest& r, Context& ctx, Reporter&) {
  const std::uint64_t seq = std::stoull(r.seq);
  auto messages = ctx.messages();
  const kv::StreamStatus st = bus_state(messages.bus);
  auto acked = messages.cursors.ack(r.as, seq, st);
  if (acked.moved) messages.bus.forget_read(r.as, acked.now);
  VerbResult out;
  out.doc.set("inbox", r.as).set("seq", acked.now).set("was", acked.was).set("moved", acked.moved);
  out.text = acked.moved ? r.as + " acked to " + std::to_string(acked.now) + " (was " + std::to_string(acked.was) + ")\n"
                         : r.as + " is at " + std::to_string(acked.now) + " already; nothing moved\n";
  return out;
}

// --type, --from, --id, --file and TEXT..., as send and ask take them.
void add_body_options(OptionTable<SendRequest>& t) {
  t.text(&SendRequest::type, {.name = "--type", .value_name = "T",
                              .help = "What kind of message (free text: note, question, review ...)",
                              .check = word_check("--type")})
      .text(&SendRequest::from, {.name = "--from", .value_name = "INBOX",
                                 .help = "Who sends it (default: the slot, $SWARM_SLOT or the worktree's)",
                                 .check = swarm::require_slot_name})
      .text(&SendRequest::id, {.name = "--id", .value_name = "ID",
                               .help = "The message's id (default: a fresh UUID); a send repeated with it is stored once",
                               .check = word_check("--id")})
      .text(&SendRequest::file, {.name = "--file", .value_name = "FILE", .help = "The body is this file, sent as a blob"})
      .texts(&SendRequest::text, {.name = "text", .value_name = "TEXT...",
                                  .help = "The body (words joined by spaces), or - for standard input"});
}

}  // namespace

std::function<void(const std::string&)> word_check(const char* what) {
  return [what](const std::string& v) { swarm::require_message_word(v, what); };
}

VerbSpec send_verb() {
  OptionTable<SendRequest> t;
  t.text(&SendRequest::to, {.name = "--to", .value_name = "INBOX",
                            .help = "The inbox: a slot's name, or any name under the slot rule (lead, ci)",
                            .check = swarm::require_slot_name})
      .flag(&SendRequest::all, {.name = "--all", .help = "To every inbox"})
      .text(&SendRequest::corr, {.name = "--corr", .value_name = "C",
                                 .help = "A correlation id, to find the messages of one conversation",
                                 .check = word_check("--corr")})
      .text(&SendRequest::reply_to, {.name = "--reply-to", .value_name = "ID",
                                     .help = "The id of the message this answers (what `swarm ask` waits for); the "
                                             "reply takes its corr unless --corr is given",
                                     .check = word_check("--reply-to")});
  add_body_options(t);
  VerbSpec v = make_verb<SendRequest>(
      {"send"}, "Send a message to one inbox or to all; prints its id",
      "Examples:\n"
      "  swarm send --all --from lead 'main moved: run swarm sync'\n"
      "  swarm send --to lead --type question 'may I change the public API?'\n"
      "  swarm send --to reviewer --file build.log        # a file always goes by blob\n"
      "  make test 2>&1 | swarm send --to lead -          # a body over 64 KiB goes by blob\n"
      "A blob is stored (under its SHA-256) before the message that names it is sent.",
      t.done(),
      [](const SendRequest& r) {
        if (r.all == !r.to.empty())
          throw swarm::Error(swarm::Errc::bad_input, "send to one inbox (--to NAME) or to all (--all)");
        if (r.text.empty() && r.file.empty())
          throw swarm::Error(swarm::Errc::bad_input, "no body: give TEXT, - (standard input) or --file F");
      },
      resolve_sender, send);
  v.reads_input = [](const void* r) { return reads_standard_input(static_cast<const SendRequest*>(r)->text); };
  return v;
}

VerbSpec ask_verb() {
  OptionTable<SendRequest> t;
  t.text(&SendRequest::to, {.name = "--to", .value_name = "INBOX", .help = "Whom to ask", .required = true,
                            .check = swarm::require_slot_name})
      .text(&SendRequest::wait, {.name = "--wait", .value_name = "DUR",
                                 .help = "How long to wait for the reply (default 60s)",
                                 .check = [](const std::string& d) { swarm::parse_duration(d); }})
      .text(&SendRequest::reply_to, {.name = "--reply-to", .value_name = "ID",
                                     .help = "The id of a message this question answers",
                                     .check = word_check("--reply-to")});
  add_body_options(t);
  VerbSpec v = make_verb<SendRequest>(
      {"ask"}, "Send a question and print the first reply to it (exit 4 if none by --wait)",
      "Example:\n"
      "  swarm ask --to lead 'may I change the public API?'\n"
      "The one asked answers with `swarm send --to ASKER --reply-to ID TEXT`, ID the question's\n"
      "(in its inbox). The reply stays in the asker's inbox until acked.",
      t.done(),
      [](const SendRequest& r) {
        if (r.text.empty() && r.file.empty())
          throw swarm::Error(swarm::Errc::bad_input, "no question: give TEXT, - (standard input) or --file F");
      },
      resolve_sender, ask);
  v.reads_input = [](const void* r) { return reads_standard_input(static_cast<const SendRequest*>(r)->text); };
  return v;
}

VerbSpec ack_verb() {
  auto options =
      OptionTable<AckRequest>()
          .text(&AckRequest::as, {.name = "--as", .value_name = "INBOX",
                                  .help = "The inbox (default: the slot, $SWARM_SLOT or the worktree's)",
                                  .check = swarm::require_slot_name})
          .text(&AckRequest::seq, {.name = "seq", .value_name = "SEQ", .help = "The sequence of the last message read",
                                   .required = true,
                                   .check = [](const std::string& v) {
                                     if (v.empty() || v.size() > 19 ||
                                         v.find_first_not_of("0123456789") != std::string::npos || std::stoull(v) == 0)
                                       throw swarm::Error(swarm::Errc::bad_input,
                                                          "bad SEQ '" + swarm::printable(v) +
                                                              "': a message's sequence, 1 or more, in decimal");
                                   }})
          .done();
  return make_verb<AckRequest>(
      {"ack"}, "Move an inbox's cursor to SEQ: every message up to it was read (never backwards)", "",
      std::move(options), {}, [](AckRequest& r, const Context& ctx) { r.as = inbox_name(ctx, r.as, "--as"); }, ack);
}

}  // namespace cli
