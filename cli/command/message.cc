// swarm send, inbox, ack and ask: messages between agents on the bus
// (swarm/bus/), each to one inbox or to all, read after the inbox's cursor
// and acknowledged by moving it; bodies too long for a message go by blob.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <thread>

#include "cli/command/context.h"
#include "swarm/base/duration.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/bus/blobs.h"
#include "swarm/bus/bus.h"
#include "swarm/bus/cursors.h"

namespace cli {

namespace {

// The fault tests' seam: the first send of a message is sent as a client
// that lost its answer, then sent again as a retry would.
constexpr const char* kLoseAnswer = "SWARM_TEST_SEND_LOSE_ANSWER";
constexpr auto kDefaultAskWait = std::chrono::seconds(60);
// Reads again after a ring found nothing new: the bell may ring before
// the stream stored the message (a cluster's replicas).
constexpr int kRereads = 6;
// A waiting inbox reads again at least this often, rung or not.
constexpr std::chrono::milliseconds kLookAgain{1000};

struct MessageFlags {
  std::string to, as, from, type, corr, reply_to, id, file, wait;
  bool all = false, follow = false, ack = false;
  std::int64_t count = 0;
  std::vector<std::string> text;
  std::string seq;
};

// The inbox a verb speaks for: `given` (--as, --from), else the slot's.
std::string name_of(const Context& ctx, const std::string& given, const char* option) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("SWARM_SLOT"); env != nullptr && *env != '\0') {
    swarm::require_slot_name(env);  // a bad one is named as such
    return env;
  }
  try {
    return ctx.slot_of("");
  } catch (const swarm::Error&) {
    throw swarm::Error(swarm::Errc::bad_input, std::string("name the inbox with ") + option +
                                                   " NAME: this is no slot's worktree and $SWARM_SLOT is not set");
  }
}

// A body that is ready to send: inline text, or a blob to store first.
struct Body {
  std::string text;
  bool blob_from_fd = false;
  bool blob_from_text = false;
  swarm::UniqueFd fd;  // the file it is in (--file, or standard input kept)
  std::string name;    // the blob's name
  std::string shown;   // how errors name where it came from
};

[[noreturn]] void too_big(const std::string& what, std::uint64_t size, std::uint64_t max) {
  throw swarm::Error(swarm::Errc::bad_input, what + " is " + std::to_string(size) + " bytes, more than a blob may be (" +
                                                 std::to_string(max) + " bytes; `swarm up --blob-max-bytes SIZE` "
                                                 "changes it); nothing was sent");
}

// The body from TEXT..., `-` (stdin) or --file, checked against the blob
// limit before anything is sent. Standard input too long for a message is
// kept in an unnamed file while it is read (never all in memory).
void read_body(const MessageFlags& f, std::uint64_t max, Body& body) {
  const bool from_stdin = f.text.size() == 1 && f.text[0] == "-";
  if (!f.file.empty()) {
    if (!f.text.empty()) throw swarm::Error(swarm::Errc::bad_input, "give the body as TEXT, - or --file, not two of them");
    body.shown = swarm::printable(f.file);
    std::uint64_t size = 0;
    body.fd = open_regular_file(f.file, "--file " + body.shown, &size);
    if (size > max) too_big("--file " + body.shown, size, max);
    body.blob_from_fd = true;
    body.name = std::filesystem::path(f.file).filename().string();
    return;
  }
  if (!from_stdin) {
    for (const auto& t : f.text) body.text += (body.text.empty() ? "" : " ") + t;
    if (body.text.size() > swarm::kInlineBodyMax || !swarm::is_valid_utf8(body.text) ||
        body.text.find('\0') != std::string::npos) {
      if (body.text.size() > max) too_big("the body", body.text.size(), max);
      body.blob_from_text = true;
    }
    return;
  }
  body.shown = "standard input";
  std::string head;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(0, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw swarm::Error(swarm::Errc::filesystem, std::string("cannot read standard input: ") + std::strerror(errno));
    if (n == 0) break;
    if (!body.fd) {
      head.append(buffer, static_cast<std::size_t>(n));
      if (head.size() <= swarm::kInlineBodyMax) continue;
      const char* tmp = std::getenv("TMPDIR");
      body.fd = swarm::UniqueFd(::open(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
      if (!body.fd) throw swarm::Error(swarm::Errc::filesystem, std::string("cannot keep standard input in a temporary file: ") + std::strerror(errno));
      if (::write(body.fd.get(), head.data(), head.size()) != static_cast<ssize_t>(head.size()))
        throw swarm::Error(swarm::Errc::filesystem, std::string("cannot keep standard input: ") + std::strerror(errno));
      continue;
    }
    if (::write(body.fd.get(), buffer, static_cast<std::size_t>(n)) != n)
      throw swarm::Error(swarm::Errc::filesystem, std::string("cannot keep standard input: ") + std::strerror(errno));
    if (static_cast<std::uint64_t>(::lseek(body.fd.get(), 0, SEEK_CUR)) > max)
      throw swarm::Error(swarm::Errc::bad_input, "standard input is more than a blob may be (" + std::to_string(max) +
                                                     " bytes; `swarm up --blob-max-bytes SIZE` changes it); nothing "
                                                     "was sent");
  }
  body.name = "stdin";
  if (body.fd) {
    body.blob_from_fd = true;
  } else if (!swarm::is_valid_utf8(head) || head.find('\0') != std::string::npos) {
    body.text = std::move(head);
    body.blob_from_text = true;
  } else {
    body.text = std::move(head);
  }
}

// Stores the body's blob, if it has one, before the message names it.
void store_blob(const swarm::Blobs& blobs, Body& body, swarm::Message& m) {
  if (body.blob_from_fd) m.blob = blobs.put_file(body.fd.get(), body.name, body.shown);
  else if (body.blob_from_text) m.blob = blobs.put_bytes(body.text, body.name);
  else m.body = body.text;
}

swarm::Message message_of(const Context& ctx, const MessageFlags& f) {
  swarm::Message m;
  m.id = f.id.empty() ? swarm::fresh_message_id() : f.id;
  m.from = name_of(ctx, f.from, "--from");
  m.to = f.all ? swarm::kToAll : f.to;
  m.type = f.type;
  m.corr = f.corr;
  m.reply_to = f.reply_to;
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

// The corr of a message of the bus (a reply's question), defined below.
std::optional<std::string> corr_of(const swarm::Bus& bus, const std::string& inbox, const std::string& id);

int run_send(Context& ctx, const MessageFlags& f) {
  if (f.all == !f.to.empty()) throw swarm::Error(swarm::Errc::bad_input, "send to one inbox (--to NAME) or to all (--all)");
  if (f.text.empty() && f.file.empty())
    throw swarm::Error(swarm::Errc::bad_input, "no body: give TEXT, - (standard input) or --file F");
  swarm::Message m = message_of(ctx, f);
  auto messages = ctx.messages();
  Body body;
  read_body(f, messages.config.blob_max(), body);
  // A reply is of the question's conversation: its corr, unless --corr names one.
  if (!m.reply_to.empty() && m.corr.empty()) {
    if (auto corr = corr_of(messages.bus, m.from, m.reply_to)) m.corr = *corr;
    else ctx.out().warn("message " + swarm::printable(m.reply_to) + " is not among the messages to " + m.from +
                        " or to all that the bus keeps (a message to one inbox leaves the bus once that inbox acks it), so "
                        "the reply carries no corr (--corr C gives it one)");
  }
  store_blob(messages.blobs, body, m);
  const auto sent = send_once(messages.bus, m);
  swarm::Json doc = swarm::Json::object();
  doc.set("id", m.id).set("seq", sent.seq).set("duplicate", sent.duplicate).set("to", m.to);
  if (m.blob) doc.set("blob", blob_json(*m.blob));
  else doc.set_null("blob");
  if (sent.duplicate) ctx.out().note("message " + swarm::printable(m.id) + " was stored before (seq " + std::to_string(sent.seq) + "); not stored again");
  ctx.out().result("send", swarm::printable(m.id) + "\n", std::move(doc));
  return 0;
}

// A message as one line of `inbox`: SEQ TIME FROM TYPE BODY (its first line).
std::string line_of(const swarm::Delivered& d) {
  std::string line = std::to_string(d.seq) + " " + swarm::format_rfc3339(d.time) + " ";
  if (d.corrupt()) return line + "- corrupt " + swarm::printable(d.corrupt_reason) + "\n";
  const swarm::Message& m = *d.message;
  const std::string first = m.body.substr(0, m.body.find('\n'));
  line += (m.from.empty() ? "-" : swarm::printable(m.from)) + " " + (m.type.empty() ? "-" : swarm::printable(m.type)) +
          " " + swarm::printable(first);
  if (m.blob)
    line += std::string(first.empty() ? "" : " ") + "[blob " + m.blob->sha256 + " " + std::to_string(m.blob->size) +
            " bytes" + (m.blob->name.empty() ? "" : " " + swarm::printable(m.blob->name)) + "]";
  return line + "\n";
}

// The bus's state, or exit 6 when the workspace has none.
kv::StreamStatus bus_state(const swarm::Bus& bus) {
  auto st = bus.state();
  if (!st)
    throw swarm::Error(swarm::Errc::not_bootstrapped, "the message bus (stream " + bus.stream_name() +
                                                          ") does not exist on this NATS: run `swarm up` in the workspace");
  return *st;
}

// The corr of message `id` among those to `inbox` and to all (a question goes to the one who
// answers it, or to everyone), read from the bus's start; nullopt when the bus keeps none such.
std::optional<std::string> corr_of(const swarm::Bus& bus, const std::string& inbox, const std::string& id) {
  std::optional<std::string> corr;
  bus.read(inbox, 0, 0, [&](const swarm::Message& m) { return m.id == id; },
           [&](const swarm::Delivered& d, bool shown) { if (shown && d.message && !corr) corr = d.message->corr; },
           bus_state(bus));
  return corr;
}

// Everything printed so far reached stdout, or the error that says it did
// not (an --ack must never pass what nobody read).
void require_written(const char* what) {
  std::cout.flush();
  if (!std::cout)
    throw swarm::Error(swarm::Errc::filesystem, std::string("standard output refused the ") + what +
                                                    " (a closed pipe?); nothing more was acked");
}

int run_inbox(Context& ctx, const MessageFlags& f) {
  const std::string name = name_of(ctx, f.as, "--as");
  const auto wait = f.wait.empty() ? std::chrono::milliseconds(0) : swarm::parse_duration(f.wait);
  const bool waits = !f.wait.empty() || f.follow;
  auto messages = ctx.messages(waits);
  const bool filtered = !f.type.empty() || !f.corr.empty();
  auto match = [&](const swarm::Message& m) {
    return (f.type.empty() || m.type == f.type) && (f.corr.empty() || m.corr == f.corr);
  };
  // Rung before the first read: nothing sent after it is missed.
  std::optional<kv::Doorbell> bell;
  if (waits) bell.emplace(messages.bus.doorbell(name));
  // --wait: until when one may still come (--follow: DUR after the last one printed).
  auto deadline = std::chrono::steady_clock::now() + wait;
  const bool bounded = !f.wait.empty();
  kv::StreamStatus bus = bus_state(messages.bus);
  const auto cursor = messages.cursors.get(name, bus);
  if (cursor.of_old_bus)
    ctx.out().note("inbox " + name + "'s cursor was of a bus made before this one: reading this bus from its start");
  if (cursor.beyond)
    ctx.out().warn("inbox " + name + "'s cursor says " + std::to_string(cursor.stored) + ", past the bus's last message (" +
                   std::to_string(bus.last_seq) + "), which no ack writes: reading the bus from its start (the next "
                   "ack puts it right; `swarm doctor --fix` does too)");
  std::uint64_t after = cursor.seq;
  // What --ack may move the cursor to: the last message of an unbroken run
  // of shown ones. Once one was not shown (a filter), nothing after it.
  std::uint64_t ackable = cursor.seq, acked = cursor.seq;
  bool blocked = false;
  std::size_t printed = 0;
  bool gap_said = false;
  auto ack_now = [&] {
    if (!f.ack || ackable <= acked) return;
    require_written("messages");
    messages.cursors.ack(name, ackable, bus);
    messages.bus.forget_read(name, ackable);
    acked = ackable;
  };
  for (int rereads = 0;;) {
    const std::size_t printed_before = printed;
    const std::size_t room = f.count > 0 ? static_cast<std::size_t>(f.count) - printed : 0;
    std::size_t since_ack = 0;
    auto read = messages.bus.read(name, after, room, match, [&](const swarm::Delivered& d, bool shown) {
      if (!shown) blocked = true;
      if (shown) {
        if (ctx.out().json()) ctx.out().json_line(d.to_json());
        else std::cout << line_of(d);
        ++printed;
      }
      if (!blocked) ackable = d.seq;
      // Acked as it goes (every 100), so a long read holds nothing back.
      if (++since_ack % 100 == 0) ack_now();
    }, bus);
    if (read.dropped > 0 && cursor.revision != 0 && !cursor.of_old_bus && !gap_said && after == cursor.seq &&
        swarm::Cursors::age_may_have_dropped(cursor.at_ms, bus)) {
      gap_said = true;
      ctx.out().warn("gap: " + swarm::counted(read.dropped, "message") + " of the bus (seq " +
                     std::to_string(after + 1) + " to " + std::to_string(read.first_kept - 1) +
                     ") were dropped by retention before " + name + " acked them; those to " + name +
                     " or to all are lost (`swarm ack --as " + name + " " + std::to_string(read.first_kept - 1) +
                     "` says so)");
    }
    // Read to the end with nothing held back: the cursor may pass what the
    // bus holds for others too, so an idle inbox keeps up with the bus.
    if (!blocked && !read.more && !filtered && f.count == 0) ackable = std::max(ackable, read.end);
    require_written("messages");
    ack_now();
    const bool moved = read.last_seq > after;
    after = std::max(read.last_seq, after);
    if (f.follow && bounded && printed > printed_before) deadline = std::chrono::steady_clock::now() + wait;
    if (f.count > 0 && printed >= static_cast<std::size_t>(f.count)) break;
    if (read.more) {
      bus = bus_state(messages.bus);
      continue;
    }
    if (!waits || (!f.follow && printed > 0)) break;
    // Rung but nothing new yet: the stream may not have stored it; look again shortly.
    if (!moved && rereads > 0 && rereads < kRereads) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1 << rereads));
      ++rereads;
      bus = bus_state(messages.bus);
      continue;
    }
    rereads = 0;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if ((!f.follow || bounded) && left.count() <= 0) break;
    // A ring, or a look anyway every second (a ring may be missed).
    if (bell->wait(f.follow && !bounded ? kLookAgain : std::min(left, kLookAgain))) rereads = 1;
    bus = bus_state(messages.bus);
  }
  if (bounded && printed == 0)
    throw swarm::Error(swarm::Errc::not_found, "no message for " + name + " within " + f.wait);
  return 0;
}

int run_ack(Context& ctx, const MessageFlags& f) {
  const std::string name = name_of(ctx, f.as, "--as");
  const std::uint64_t seq = std::stoull(f.seq);
  auto messages = ctx.messages();
  const kv::StreamStatus st = bus_state(messages.bus);
  auto acked = messages.cursors.ack(name, seq, st);
  if (acked.moved) messages.bus.forget_read(name, acked.now);
  swarm::Json doc = swarm::Json::object();
  doc.set("inbox", name).set("seq", acked.now).set("was", acked.was).set("moved", acked.moved);
  ctx.out().result("ack", acked.moved ? name + " acked to " + std::to_string(acked.now) + " (was " + std::to_string(acked.was) + ")\n"
                                      : name + " is at " + std::to_string(acked.now) + " already; nothing moved\n",
                   std::move(doc));
  return 0;
}

int run_ask(Context& ctx, const MessageFlags& f) {
  if (f.text.empty() && f.file.empty())
    throw swarm::Error(swarm::Errc::bad_input, "no question: give TEXT, - (standard input) or --file F");
  const auto wait = f.wait.empty() ? std::chrono::milliseconds(kDefaultAskWait) : swarm::parse_duration(f.wait);
  swarm::Message m = message_of(ctx, f);
  m.corr = swarm::fresh_message_id();
  auto messages = ctx.messages(true);
  Body body;
  read_body(f, messages.config.blob_max(), body);
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
    swarm::Json doc = swarm::Json::object();
    doc.set("id", m.id).set("seq", sent.seq).set("corr", m.corr).set("reply", d.to_json());
    std::string text = swarm::printable(d.message->body, true);
    if (d.message->blob) text += std::string(text.empty() ? "" : "\n") + "[blob " + d.message->blob->sha256 + " " + std::to_string(d.message->blob->size) + " bytes]";
    ctx.out().result("ask", text + "\n", std::move(doc));
    return 0;
  }
  throw swarm::Error(swarm::Errc::not_found, "no reply to " + swarm::printable(m.id) + " from " + m.to + " within " +
                                                 swarm::format_duration(wait) + " (the question stays in its inbox, seq " +
                                                 std::to_string(sent.seq) + ")");
}

CLI::Validator word_validator(const char* what) {
  return validator_of([what](const std::string& v) { swarm::require_message_word(v, what); }, "TEXT");
}

void add_send_options(CLI::App* cmd, MessageFlags& f) {
  cmd->add_option("--type", f.type, "What kind of message (free text: note, question, review ...)")->option_text("T")->check(word_validator("--type"));
  cmd->add_option("--from", f.from, "Who sends it (default: the slot, $SWARM_SLOT or the worktree's)")->option_text("INBOX")->check(slot_name_validator());
  cmd->add_option("--id", f.id, "The message's id (default: a fresh UUID); a send repeated with it is stored once")->option_text("ID")->check(word_validator("--id"));
  cmd->add_option("--file", f.file, "The body is this file, sent as a blob")->option_text("FILE");
  cmd->add_option("text", f.text, "The body (words joined by spaces), or - for standard input")->option_text("TEXT...");
}

}  // namespace

Verb add_send(CLI::App& app) {
  auto f = std::make_shared<MessageFlags>();
  CLI::App* cmd = app.add_subcommand("send", "Send a message to one inbox or to all; prints its id");
  cmd->add_option("--to", f->to, "The inbox: a slot's name, or any name under the slot rule (lead, ci)")->option_text("INBOX")->check(slot_name_validator());
  cmd->add_flag("--all", f->all, "To every inbox");
  cmd->add_option("--corr", f->corr, "A correlation id, to find the messages of one conversation")->option_text("C")->check(word_validator("--corr"));
  cmd->add_option("--reply-to", f->reply_to, "The id of the message this answers (what `swarm ask` waits for); the reply takes its corr unless --corr is given")->option_text("ID")->check(word_validator("--reply-to"));
  add_send_options(cmd, *f);
  cmd->footer(
      "Examples:\n"
      "  swarm send --all --from lead 'main moved: run swarm sync'\n"
      "  swarm send --to lead --type question 'may I change the public API?'\n"
      "  swarm send --to reviewer --file build.log        # a file always goes by blob\n"
      "  make test 2>&1 | swarm send --to lead -          # a body over 64 KiB goes by blob\n"
      "A blob is stored (under its SHA-256) before the message that names it is sent.");
  return {cmd, [f](Context& ctx) { return run_send(ctx, *f); }};
}

Verb add_inbox(CLI::App& app) {
  auto f = std::make_shared<MessageFlags>();
  CLI::App* cmd = app.add_subcommand("inbox", "The messages to an inbox and to all after its cursor, oldest first: SEQ TIME FROM TYPE BODY");
  cmd->add_option("--as", f->as, "The inbox (default: the slot, $SWARM_SLOT or the worktree's)")->option_text("INBOX")->check(slot_name_validator());
  cmd->add_option("--type", f->type, "Only messages of this type")->option_text("T")->check(word_validator("--type"));
  cmd->add_option("--corr", f->corr, "Only messages with this correlation id")->option_text("C")->check(word_validator("--corr"));
  cmd->add_option("--wait", f->wait, "Wait up to DUR for a message when there is none; exit 4 if none came (with --follow: end once DUR passed without a new one)")->option_text("DUR")->check(duration_validator());
  cmd->add_flag("--follow", f->follow, "Keep printing messages as they come (Ctrl-C ends it, or --wait DUR without one)");
  cmd->add_flag("--ack", f->ack, "Move the cursor past what was printed, once printed (with --type or --corr, only up to the first message not shown)");
  cmd->add_option("-n", f->count, "At most N messages")->option_text("N")->transform(decimal_in(1, 1000000000));
  cmd->footer(
      "Examples:\n"
      "  swarm inbox                      # in a slot's worktree: the slot's inbox\n"
      "  swarm inbox --as lead --type question --wait 30s\n"
      "  swarm inbox --ack -n 10          # read ten, and say they were read\n"
      "--json prints JSON Lines: each message (swarm.message.v1) with its seq and time. A message is\n"
      "delivered until its inbox's cursor passes it (`swarm ack`).");
  return {cmd, [f](Context& ctx) { return run_inbox(ctx, *f); }};
}

Verb add_ack(CLI::App& app) {
  auto f = std::make_shared<MessageFlags>();
  CLI::App* cmd = app.add_subcommand("ack", "Move an inbox's cursor to SEQ: every message up to it was read (never backwards)");
  cmd->add_option("--as", f->as, "The inbox (default: the slot, $SWARM_SLOT or the worktree's)")->option_text("INBOX")->check(slot_name_validator());
  cmd->add_option("seq", f->seq, "The sequence of the last message read")->required()->check(validator_of([](const std::string& v) {
    if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos || std::stoull(v) == 0)
      throw swarm::Error(swarm::Errc::bad_input, "bad SEQ '" + swarm::printable(v) + "': a message's sequence, 1 or more, in decimal");
  }, "SEQ"));
  return {cmd, [f](Context& ctx) { return run_ack(ctx, *f); }};
}

Verb add_ask(CLI::App& app) {
  auto f = std::make_shared<MessageFlags>();
  CLI::App* cmd = app.add_subcommand("ask", "Send a question and print the first reply to it (exit 4 if none by --wait)");
  cmd->add_option("--to", f->to, "Whom to ask")->option_text("INBOX")->required()->check(slot_name_validator());
  cmd->add_option("--wait", f->wait, "How long to wait for the reply (default 60s)")->option_text("DUR")->check(duration_validator());
  cmd->add_option("--reply-to", f->reply_to, "The id of a message this question answers")->option_text("ID")->check(word_validator("--reply-to"));
  add_send_options(cmd, *f);
  cmd->footer(
      "Example:\n"
      "  swarm ask --to lead 'may I change the public API?'\n"
      "The one asked answers with `swarm send --to ASKER --reply-to ID TEXT`, ID the question's\n"
      "(in its inbox). The reply stays in the asker's inbox until acked.");
  return {cmd, [f](Context& ctx) { return run_ask(ctx, *f); }};
}

}  // namespace cli
