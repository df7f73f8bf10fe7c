// swarm status: every session, its age (server timestamps) and state.
#include <unistd.h>

#include <array>
#include <charconv>
#include <climits>
#include <chrono>
#include <future>
#include <iostream>
#include <sstream>

#include "cli/context.h"
#include "cli/documents.h"
#include "cli/signal_router.h"
#include "swarm/duration.h"
#include "swarm/error.h"
#include "swarm/names.h"
#include "swarm/status.h"
#include "swarm/status_watch.h"
#include "swarm/text.h"

namespace cli {

namespace {

struct StatusFlags {
  std::string slot;
  bool watch = false;
};

// A number as cJSON prints it (a whole one as digits, else %1.15g, or
// %1.17g when that does not read back the same), printed by cJSON itself
// into a buffer: no allocation, and no second copy of its rules.
void append_number(std::string& out, double value) {
  thread_local cJSON number{};
  number.type = cJSON_Number;
  number.valuedouble = value;
  number.valueint = value >= INT_MAX ? INT_MAX : value <= INT_MIN ? INT_MIN : static_cast<int>(value);
  char text[64];
  if (!cJSON_PrintPreallocated(&number, text, sizeof text, false)) {
    out += "null";
    return;
  }
  out += text;
}

void append_digits(std::string& out, std::uint64_t value) {
  char number[24];
  out.append(number, static_cast<std::size_t>(std::to_chars(number, number + sizeof number, value).ptr - number));
}

// The names status always adds to a record's row; a newer writer's field of
// one of these names gives way to status's own (session_token and
// task_lease only when status writes them: see status_fields_of).
constexpr std::array<const char*, 4> kStatusFields = {"revision", "state", "age_seconds", "local"};

// The start of one session's object in swarm.status.v1, without its closing
// brace: the record's own JSON as swarm writes it; a record with fields of a
// newer writer goes through cJSON (their values in cJSON's form, {"a": 1.0}
// as {"a":1}, as status always printed them); a corrupt one is its slot.
void append_record_part(std::string& out, const swarm::SessionRow& row) {
  if (row.corrupt) {
    out += "{\"slot\":";
    swarm::append_quoted(out, row.slot);
    return;
  }
  if (!row.newer_fields) {
    out += row.record_json;
    out.pop_back();  // its closing brace
    return;
  }
  swarm::Json tree = swarm::Json::parse(std::string(row.record_json));
  for (const char* name : kStatusFields) cJSON_DeleteItemFromObjectCaseSensitive(tree.get(), name);
  if (!row.token_in_record) cJSON_DeleteItemFromObjectCaseSensitive(tree.get(), "session_token");
  if (!row.task_lease_problem.empty()) cJSON_DeleteItemFromObjectCaseSensitive(tree.get(), "task_lease");
  std::string text = tree.dump();
  text.pop_back();
  out += text;
}

// One session as swarm.status.v1 has it: the record's fields, then status's,
// written once, as it goes, without a tree of the whole row.
void append_row_json(std::string& out, const swarm::SessionRow& row) {
  append_record_part(out, row);
  if (!row.corrupt && !row.token_in_record) {
    out += ",\"session_token\":";
    append_digits(out, row.session_token);
  }
  out += ",\"revision\":";
  append_digits(out, row.revision);
  out += ",\"state\":\"";
  out += swarm::to_string(row.state);
  out += "\",\"age_seconds\":";
  append_number(out, static_cast<double>(row.age.count()) / 1000.0);
  out += row.local ? ",\"local\":true" : ",\"local\":false";
  if (row.corrupt) {
    out += ",\"error\":";
    swarm::append_quoted(out, row.corrupt_reason);
  }
  if (!row.task_lease_problem.empty()) {
    out += ",\"task_lease\":{\"name\":";
    swarm::append_quoted(out, swarm::task_lease_name(std::string(row.task_id)));
    out += ",\"problem\":";
    swarm::append_quoted(out, row.task_lease_problem);
    out += '}';
  }
  out += '}';
}

std::string age_text(std::chrono::milliseconds age) {
  return swarm::format_duration(std::chrono::duration_cast<std::chrono::seconds>(age));
}

// Hands the cells of one table line to `use` (to measure or to print them);
// they live only during the call.
using Cells = std::array<std::string_view, 6>;

// A record's text as a cell: as it is when it is plain (nearly always),
// else escaped into `kept`, so that it cannot drive the terminal.
std::string_view shown(std::string_view text, std::string& kept) {
  if (swarm::shows_as_is(text)) return text;
  kept = swarm::printable(text);
  return kept;
}

template <typename Use>
void with_cells(const swarm::SessionRow& row, Use use) {
  char rev[24];
  const std::string_view revision(rev, static_cast<std::size_t>(std::to_chars(rev, rev + sizeof rev, row.revision).ptr - rev));
  const std::string age = age_text(row.age);
  std::string slot_kept, task_kept;
  const std::string_view slot = shown(row.slot, slot_kept);
  if (row.corrupt) {
    const std::string state = "corrupt: " + swarm::printable(row.corrupt_reason);
    use(Cells{slot, "-", "-", age, state, revision});
    return;
  }
  std::string host = swarm::shows_as_is(row.host) ? std::string(row.host) : swarm::printable(row.host);
  if (row.local) host += " *";
  use(Cells{slot, row.task_id.empty() ? std::string_view("-") : shown(row.task_id, task_kept), host, age,
            swarm::to_string(row.state), revision});
}

// The table, written line by line to `out` in pieces (at 100,000 sessions no
// cell grid and no whole text is kept).
void write_table(std::ostream& out, const std::vector<swarm::SessionRow>& rows) {
  if (rows.empty()) {
    out << "no sessions\n";
    return;
  }
  const Cells header = {"SLOT", "TASK", "HOST", "AGE", "STATE", "REV"};
  std::array<std::size_t, 6> width{};
  bool any_local = false;
  auto widen = [&](const Cells& line) {
    for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  };
  widen(header);
  for (const auto& row : rows) {
    with_cells(row, widen);
    any_local = any_local || row.local;
  }
  std::string text;
  constexpr std::size_t kPiece = 64 * 1024;
  auto flush = [&](bool always) {
    if (!always && text.size() < kPiece) return;
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    text.clear();
  };
  auto print = [&](const Cells& line) {
    for (std::size_t i = 0; i < line.size(); ++i) {
      text += line[i];
      if (i + 1 < line.size()) text.append(width[i] - line[i].size() + 2, ' ');
    }
    text += '\n';
    flush(false);
  };
  print(header);
  for (const auto& row : rows) with_cells(row, print);
  if (any_local) text += "* this host\n";
  for (const auto& row : rows)
    if (!row.task_lease_problem.empty()) {
      text += "! slot ";
      text += swarm::printable(row.slot);
      text += ": ";
      text += swarm::printable(row.task_lease_problem);
      text += " (" + swarm::printable(swarm::task_lease_name(std::string(row.task_id))) + ")\n";
      flush(false);
    }
  flush(true);
  out.flush();
}

std::string table(const std::vector<swarm::SessionRow>& rows) {
  std::ostringstream out;
  write_table(out, rows);
  return out.str();
}

// swarm.status.v1, written one session at a time (no tree of all of them),
// to `out` in pieces of about 64 KiB: memory stays flat however many there are.
// A watch adds "change": null on its first line, then the change of each line.
void write_status_json(std::ostream& out, const std::string& bucket, std::chrono::milliseconds ttl,
                       const std::vector<swarm::SessionRow>& rows, bool watching = false,
                       const swarm::Json* change = nullptr) {
  swarm::Json head = swarm::Json::object();
  head.set("schema", "swarm.status.v1")
      .set("bucket", bucket)
      .set("ttl_seconds", static_cast<double>(ttl.count()) / 1000.0);
  std::string text = head.dump();
  text.pop_back();  // reopen the object
  text += ",\"sessions\":[";
  constexpr std::size_t kPiece = 64 * 1024;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i > 0) text += ',';
    append_row_json(text, rows[i]);
    if (text.size() >= kPiece) {
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
      text.clear();
    }
  }
  text += "]";
  if (watching) text += ",\"change\":" + (change ? change->dump() : std::string("null"));
  text += "}\n";
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.flush();
}

std::string status_json(const std::string& bucket, std::chrono::milliseconds ttl,
                        const std::vector<swarm::SessionRow>& rows, bool watching, const swarm::Json* change) {
  std::ostringstream out;
  write_status_json(out, bucket, ttl, rows, watching, change);
  std::string text = out.str();
  text.pop_back();  // rendered() ends the line
  return text;
}

// Redraws the live view on each change (and each second, so ages tick), from
// the library's feed of a KV watch: no polling of the bucket. Ends cleanly
// on SIGINT, SIGTERM or SIGHUP (exit 0).
int watch(Context& ctx, const SignalRouter& signals, const swarm::SessionStore& store, const std::string& slot_filter) {
  using namespace std::chrono_literals;
  const bool tty = isatty(STDOUT_FILENO) != 0;
  const bool json = ctx.out().json();
  swarm::StatusWatch feed(store, ctx.me(), slot_filter, json);
  auto last_draw = std::chrono::steady_clock::now() - 1h;

  auto draw = [&](const std::vector<swarm::SessionRow>& rows, const std::vector<swarm::LiveSessions::Change>& changes) {
    last_draw = std::chrono::steady_clock::now();
    if (json) {
      // One line per change; the first line is the snapshot.
      auto emit = [&](const swarm::LiveSessions::Change* change) {
        swarm::Json c;
        if (change) {
          c = swarm::Json::object();
          c.set("event", swarm::to_string(change->kind)).set("slot", change->slot);
        }
        ctx.out().rendered(status_json(feed.bucket_name(), feed.ttl(), rows, true, change ? &c : nullptr));
      };
      if (changes.empty()) emit(nullptr);
      for (const auto& c : changes) emit(&c);
      return;
    }
    std::string text = table(rows);
    if (tty) {
      std::cout << "\033[H\033[2J" << "swarm status --watch   (" << feed.bucket_name() << ", TTL "
                << swarm::format_duration(feed.ttl()) << "; Ctrl-C to stop)\n\n"
                << text << std::flush;
    } else {
      std::cout << "-- " << swarm::format_rfc3339(std::chrono::system_clock::now()) << "\n" << text << std::flush;
    }
  };

  while (signals.received() == 0) {
    if (auto update = feed.next(250ms)) {
      draw(update->view.rows(), update->changes);
    } else if (tty && !json && feed.caught_up() && std::chrono::steady_clock::now() - last_draw >= 1s) {
      draw(feed.view().rows(), {});
    }
  }
  feed.stop();
  return 0;
}

}  // namespace

std::string status_document(const std::string& bucket, std::chrono::milliseconds ttl,
                            const std::vector<swarm::SessionRow>& rows) {
  return status_json(bucket, ttl, rows, false, nullptr);
}

Verb add_status(CLI::App& app) {
  auto flags = std::make_shared<StatusFlags>();
  CLI::App* cmd = app.add_subcommand("status", "Every session: slot, task, host, age, state (fresh/late/stale/corrupt)");
  cmd->add_flag("--watch", flags->watch, "Keep the view live from a KV watch (--json: one line per change)");
  cmd->add_option("--slot", flags->slot, "Only this slot (exit 4 when it has no record)")
      ->check(slot_name_validator());
  cmd->footer(
      "Examples:\n"
      "  swarm status\n"
      "  swarm status --slot render --json\n"
      "  swarm status --watch          # live; Ctrl-C ends it\n"
      "Ages are read on the server's clock: fresh < TTL/3 <= late < 2*TTL/3 <= stale.");
  return {cmd, [flags](Context& ctx) {
            if (!flags->slot.empty()) swarm::require_slot_name(flags->slot);
            if (flags->watch) {
              const SignalRouter signals;  // before any thread is made
              const auto sessions = ctx.sessions();
              return watch(ctx, signals, sessions.store, flags->slot);
            }
            const auto [store, leases] = ctx.sessions();
            auto ttl = store.ttl();
            // The server's clock is read while the records are: its round trip
            // overlaps theirs instead of following it.
            auto server_clock = std::async(std::launch::async, [&] { return store.server_clock().now; });
            // The task leases too, to say where one disagrees with its session.
            swarm::SessionTable table(ctx.me(), ctx.out().json());
            std::vector<swarm::LeaseEntry> task_leases;
            if (flags->slot.empty()) {
              auto listed = std::async(std::launch::async, [&] { return leases.list("task.>"); });
              table.reserve(static_cast<std::size_t>(store.size_hint()));
              store.for_each([&](swarm::SessionEntry&& entry) { table.add(entry); });
              task_leases = listed.get();
            } else if (auto one = store.get(flags->slot)) {
              table.add(*one);
              if (!one->corrupt() && !one->session->task_id.empty())
                if (auto lease = leases.get(swarm::task_lease_name(one->session->task_id))) task_leases.push_back(*lease);
            } else {
              throw swarm::Error(swarm::Errc::not_found, "no session for slot " + flags->slot);
            }
            auto now = server_clock.get()();
            // A session renewed while the listing ran may have come twice.
            table.finish(flags->slot.empty() ? store.revision_at_open() : 0, ttl, now);
            table.note_task_leases(task_leases, now);
            if (ctx.out().json()) write_status_json(std::cout, store.bucket_name(), ttl, table.rows());
            else write_table(std::cout, table.rows());
            return 0;
          }};
}

}  // namespace cli
