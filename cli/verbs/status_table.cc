#include "cli/verbs/status_table.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <set>
#include <sstream>

#include "swarm/base/duration.h"
#include "swarm/base/text.h"

namespace cli {

namespace {

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
  std::string_view task = row.task_id.empty() ? std::string_view("-") : shown(row.task_id, task_kept);
  if (!row.task_state.empty()) {
    // A queued task: its state beside its id.
    task_kept = std::string(task) + " (" + std::string(row.task_state) + ")";
    task = task_kept;
  }
  use(Cells{slot, task, host, age,
            swarm::to_string(row.state), revision});
}


const char* color_of(std::string_view state) {
  if (state == "fresh") return "\033[32m";
  if (state == "late") return "\033[33m";
  if (state == "stale" || state == "dead") return "\033[1;31m";
  return "\033[35m";  // corrupt
}

}  // namespace

std::string summary(const std::vector<swarm::SessionRow>& rows) {
  std::map<swarm::State, std::size_t> states;
  std::set<std::string_view> hosts;
  for (const auto& row : rows) {
    ++states[row.state];
    if (!row.corrupt) hosts.insert(row.host);
  }
  std::string out = std::to_string(rows.size()) + (rows.size() == 1 ? " session: " : " sessions: ");
  out += std::to_string(states[swarm::State::fresh]) + " fresh, " + std::to_string(states[swarm::State::late]) +
         " late, " + std::to_string(states[swarm::State::stale]) + " stale";
  if (states[swarm::State::dead] != 0) out += ", " + std::to_string(states[swarm::State::dead]) + " dead";
  if (states[swarm::State::corrupt] != 0) out += ", " + std::to_string(states[swarm::State::corrupt]) + " corrupt";
  out += "; " + std::to_string(hosts.size()) + (hosts.size() == 1 ? " host" : " hosts");
  return out;
}

void write_table(std::ostream& out, const std::vector<swarm::SessionRow>& rows, const TableStyle& style) {
  if (rows.empty()) {
    out << "no sessions\n";
    return;
  }
  const Cells header = {"SLOT", "TASK", "HOST", "AGE", "STATE", "REV"};
  constexpr std::size_t kTask = 1, kHost = 2, kState = 4;
  std::array<std::size_t, 6> width{};
  bool any_local = false;
  auto widen = [&](const Cells& line) {
    for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], swarm::display_width(line[i]));
  };
  widen(header);
  for (const auto& row : rows) {
    with_cells(row, widen);
    any_local = any_local || row.local;
  }
  // Too wide for the terminal: task and host share the cut, the wider one
  // giving first, so the task never keeps less than the host (each down
  // to 4). The slot never gives.
  if (style.width != 0) {
    std::size_t total = 2 * (width.size() - 1);
    for (auto w : width) total += w;
    constexpr std::size_t kFloor = 4;
    while (total > style.width && (width[kTask] > kFloor || width[kHost] > kFloor)) {
      const bool host_gives = width[kHost] > kFloor && (width[kHost] >= width[kTask] || width[kTask] <= kFloor);
      --width[host_gives ? kHost : kTask];
      --total;
    }
  }
  std::string text;
  constexpr std::size_t kPiece = 64 * 1024;
  auto flush = [&](bool always) {
    if (!always && text.size() < kPiece) return;
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    text.clear();
  };
  bool heading = true;
  auto print = [&](const Cells& line) {
    for (std::size_t i = 0; i < line.size(); ++i) {
      const bool cut = (i == kTask || i == kHost) && swarm::display_width(line[i]) > width[i];
      // A host is told apart by its end as much as its start (build-07).
      const std::string cell = !cut           ? std::string(line[i])
                               : i == kHost ? swarm::truncated_middle(line[i], width[i])
                                            : swarm::truncated(line[i], width[i]);
      const bool colored = style.color && i == kState && !heading;
      if (colored) text += color_of(line[i].substr(0, line[i].find(':')));
      text += cell;
      if (colored) text += "\033[0m";
      if (i + 1 < line.size()) text.append(width[i] - swarm::display_width(cell) + 2, ' ');
    }
    text += '\n';
    flush(false);
  };
  print(header);
  heading = false;
  for (const auto& row : rows) with_cells(row, print);
  if (any_local) text += "* this host\n";
  for (const auto& row : rows)
    if (!row.task_lease_problem.empty()) {
      const std::string note = "! slot " + swarm::printable(row.slot) + ": " + swarm::printable(row.task_lease_problem) +
                               " (" + swarm::printable(swarm::task_lease_name(std::string(row.task_id))) + ")";
      text += (style.width != 0 ? swarm::truncated(note, style.width) : note) + "\n";
      flush(false);
    }
  // What the agents say they do (renew --status --note), one line each.
  for (const auto& row : rows)
    if (!row.status.empty() || !row.note.empty()) {
      std::string said = "~ " + swarm::printable(row.slot) + " is " +
                         (row.status.empty() ? std::string("at work") : swarm::printable(row.status)) +
                         (row.note.empty() ? std::string() : ": " + swarm::printable(row.note));
      text += (style.width != 0 ? swarm::truncated(said, style.width) : said) + "\n";
      flush(false);
    }
  if (style.summary) text += summary(rows) + "\n";
  flush(true);
  out.flush();
}

std::string table(const std::vector<swarm::SessionRow>& rows, const TableStyle& style) {
  std::ostringstream out;
  write_table(out, rows, style);
  return out.str();
}

}  // namespace cli
