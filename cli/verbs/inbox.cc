// swarm inbox: the messages to an inbox and to all after its cursor, oldest
// first, each an item as it is read; --ack moves the cursor past what
// reached the caller, --wait and --follow wait for more on the inbox's bell.
#include <thread>

#include "cli/verbs/messages.h"
#include "cli/verbs/verbs.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/bus/cursors.h"

namespace cli {

namespace {

// Reads again after a ring found nothing new: the bell may ring before
// the stream stored the message (a cluster's replicas).
constexpr int kRereads = 6;
// A waiting inbox reads again at least this often, rung or not.
constexpr std::chrono::milliseconds kLookAgain{1000};

struct InboxRequest {
  std::string as, type, corr, wait;
  bool follow = false, ack = false;
  std::int64_t count = 0;
};

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

[[noreturn]] void refused_output() {
  throw swarm::Error(swarm::Errc::filesystem,
                     "standard output refused the messages (a closed pipe?); nothing more was acked");
}

// What a cursor read says of itself: of an older bus, or past this one's end.
void say_cursor(Reporter& report, const std::string& name, const swarm::Cursors::Cursor& cursor,
                const kv::StreamStatus& bus) {
  if (cursor.of_old_bus)
    report.note("inbox " + name + "'s cursor was of a bus made before this one: reading this bus from its start");
  if (cursor.beyond)
    report.warn("inbox " + name + "'s cursor says " + std::to_string(cursor.stored) + ", past the bus's last message (" +
                std::to_string(bus.last_seq) + "), which no ack writes: reading the bus from its start (the next "
                "ack puts it right; `swarm doctor --fix` does too)");
}

// Messages retention dropped before the inbox acked them.
void say_gap(Reporter& report, const std::string& name, std::uint64_t after, const swarm::InboxRead& read) {
  report.warn("gap: " + swarm::counted(read.dropped, "message") + " of the bus (seq " + std::to_string(after + 1) +
              " to " + std::to_string(read.first_kept - 1) + ") were dropped by retention before " + name +
              " acked them; those to " + name + " or to all are lost (`swarm ack --as " + name + " " +
              std::to_string(read.first_kept - 1) + "` says so)");
}

// size: one read loop, whose cursor, acks, deadline and rereads each branch shares.
VerbResult inbox(const InboxRequest& f, Context& ctx, Reporter& report) {
  const std::string& name = f.as;
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
  say_cursor(report, name, cursor, bus);
  std::uint64_t after = cursor.seq;
  // What --ack may move the cursor to: the last message of an unbroken run
  // of shown ones. Once one was not shown (a filter), nothing after it.
  std::uint64_t ackable = cursor.seq, acked = cursor.seq;
  bool blocked = false, delivered = true;
  std::size_t printed = 0;
  bool gap_said = false;
  auto ack_now = [&] {
    if (!f.ack || ackable <= acked) return;
    if (!delivered) refused_output();
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
        // What did not reach the caller is never acked, nor anything after it.
        if (delivered && !report.item(d.to_json(), line_of(d))) delivered = false;
        ++printed;
      }
      if (!blocked && delivered) ackable = d.seq;
      // Acked as it goes (every 100), so a long read holds nothing back.
      if (++since_ack % 100 == 0) ack_now();
    }, bus);
    if (read.dropped > 0 && cursor.revision != 0 && !cursor.of_old_bus && !gap_said && after == cursor.seq &&
        swarm::Cursors::age_may_have_dropped(cursor.at_ms, bus)) {
      gap_said = true;
      say_gap(report, name, after, read);
    }
    // Read to the end with nothing held back: the cursor may pass what the
    // bus holds for others too, so an idle inbox keeps up with the bus.
    if (!blocked && delivered && !read.more && !filtered && f.count == 0) ackable = std::max(ackable, read.end);
    if (!delivered) refused_output();
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
  VerbResult out;
  out.items_only = true;
  return out;
}

}  // namespace

std::string inbox_name(const Context& ctx, const std::string& given, const char* option) {
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

kv::StreamStatus bus_state(const swarm::Bus& bus) {
  auto st = bus.state();
  if (!st)
    throw swarm::Error(swarm::Errc::not_bootstrapped, "the message bus (stream " + bus.stream_name() +
                                                          ") does not exist on this NATS: run `swarm up` in the workspace");
  return *st;
}

std::optional<std::string> corr_of(const swarm::Bus& bus, const std::string& inbox, const std::string& id) {
  std::optional<std::string> corr;
  bus.read(inbox, 0, 0, [&](const swarm::Message& m) { return m.id == id; },
           [&](const swarm::Delivered& d, bool shown) { if (shown && d.message && !corr) corr = d.message->corr; },
           bus_state(bus));
  return corr;
}

VerbSpec inbox_verb() {
  const auto duration = [](const std::string& d) { swarm::parse_duration(d); };
  auto options =
      OptionTable<InboxRequest>()
          .text(&InboxRequest::as, {.name = "--as", .value_name = "INBOX",
                                    .help = "The inbox (default: the slot, $SWARM_SLOT or the worktree's)",
                                    .check = swarm::require_slot_name})
          .text(&InboxRequest::type, {.name = "--type", .value_name = "T", .help = "Only messages of this type",
                                      .check = word_check("--type")})
          .text(&InboxRequest::corr, {.name = "--corr", .value_name = "C",
                                      .help = "Only messages with this correlation id", .check = word_check("--corr")})
          .text(&InboxRequest::wait, {.name = "--wait", .value_name = "DUR",
                                      .help = "Wait up to DUR for a message when there is none; exit 4 if none came "
                                              "(with --follow: end once DUR passed without a new one)",
                                      .check = duration})
          .flag(&InboxRequest::follow, {.name = "--follow", .help = "Keep printing messages as they come (Ctrl-C ends "
                                                                    "it, or --wait DUR without one)"})
          .flag(&InboxRequest::ack, {.name = "--ack", .help = "Move the cursor past what was printed, once printed "
                                                              "(with --type or --corr, only up to the first message "
                                                              "not shown)"})
          .number(&InboxRequest::count, {.name = "-n", .value_name = "N", .help = "At most N messages", .min = 1,
                                         .max = 1000000000})
          .done();
  VerbSpec v = make_verb<InboxRequest>(
      {"inbox"}, "The messages to an inbox and to all after its cursor, oldest first: SEQ TIME FROM TYPE BODY",
      "Examples:\n"
      "  swarm inbox                      # in a slot's worktree: the slot's inbox\n"
      "  swarm inbox --as lead --type question --wait 30s\n"
      "  swarm inbox --ack -n 10          # read ten, and say they were read\n"
      "--json prints JSON Lines: each message (swarm.message.v1) with its seq and time. A message is\n"
      "delivered until its inbox's cursor passes it (`swarm ack`).",
      std::move(options), {}, [](InboxRequest& r, const Context& ctx) { r.as = inbox_name(ctx, r.as, "--as"); },
      inbox);
  v.items = true;
  return v;
}

}  // namespace cli
