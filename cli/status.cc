// swarm status: every session, its age (server timestamps) and state.
#include <chrono>
#include <sstream>

#include "cli/context.h"
#include "swarm/duration.h"
#include "swarm/error.h"
#include "swarm/names.h"
#include "swarm/status.h"

namespace cli {

namespace {

struct StatusFlags {
  std::string slot;
  bool watch = false;
};

swarm::Json row_json(const swarm::SessionRow& row) {
  const auto& e = row.entry;
  swarm::Json item = e.corrupt() ? swarm::Json::object() : swarm::Json::parse(swarm::to_json(*e.session));
  if (e.corrupt()) item.set("slot", e.slot);
  item.set("revision", e.revision)
      .set("state", swarm::to_string(row.state))
      .set("age_seconds", static_cast<double>(row.age.count()) / 1000.0)
      .set("local", row.local);
  if (e.corrupt()) item.set("error", e.corrupt_reason);
  return item;
}

std::string age_text(std::chrono::milliseconds age) {
  return swarm::format_duration(std::chrono::duration_cast<std::chrono::seconds>(age));
}

std::string table(const std::vector<swarm::SessionRow>& rows) {
  if (rows.empty()) return "no sessions\n";
  std::vector<std::vector<std::string>> cells = {{"SLOT", "TASK", "HOST", "AGE", "STATE", "REV"}};
  bool any_local = false;
  for (const auto& row : rows) {
    const auto& e = row.entry;
    if (e.corrupt()) {
      cells.push_back({e.slot, "-", "-", age_text(row.age), "corrupt: " + e.corrupt_reason, std::to_string(e.revision)});
      continue;
    }
    any_local = any_local || row.local;
    cells.push_back({e.slot, e.session->task_id.empty() ? "-" : e.session->task_id,
                     e.session->host + (row.local ? " *" : ""), age_text(row.age),
                     std::string(swarm::to_string(row.state)), std::to_string(e.revision)});
  }
  std::vector<std::size_t> width(cells[0].size(), 0);
  for (const auto& line : cells)
    for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  std::ostringstream out;
  for (const auto& line : cells) {
    for (std::size_t i = 0; i < line.size(); ++i) {
      out << line[i];
      if (i + 1 < line.size()) out << std::string(width[i] - line[i].size() + 2, ' ');
    }
    out << "\n";
  }
  if (any_local) out << "* this host\n";
  return out.str();
}

}  // namespace

Verb add_status(CLI::App& app) {
  auto flags = std::make_shared<StatusFlags>();
  CLI::App* cmd = app.add_subcommand("status", "Every session: slot, task, host, age, state (fresh/late/stale/corrupt)");
  cmd->add_option("--slot", flags->slot, "Only this slot (exit 4 when it has no record)")
      ->check(slot_name_validator());
  cmd->footer(
      "Examples:\n"
      "  swarm status\n"
      "  swarm status --slot render --json\n"
      "Ages come from the server's timestamps: fresh < TTL/3 <= late < 2*TTL/3 <= stale.");
  return {cmd, [flags](Context& ctx) {
            if (!flags->slot.empty()) swarm::require_slot_name(flags->slot);
            auto lifecycle = ctx.lifecycle();
            const auto& store = lifecycle.store();
            auto ttl = store.ttl();
            std::vector<swarm::SessionEntry> entries;
            if (flags->slot.empty()) {
              entries = store.list();
            } else if (auto one = store.get(flags->slot)) {
              entries.push_back(*one);
            } else {
              throw swarm::Error(swarm::Errc::not_found, "no session for slot " + flags->slot);
            }
            auto rows = swarm::rows_of(entries, ttl, std::chrono::system_clock::now(), lifecycle.me());
            swarm::Json sessions = swarm::Json::array();
            for (const auto& row : rows) sessions.push(row_json(row));
            swarm::Json doc = swarm::Json::object();
            doc.set("bucket", store.bucket_name())
                .set("ttl_seconds", static_cast<double>(ttl.count()) / 1000.0)
                .set("sessions", std::move(sessions));
            ctx.out().result("status", table(rows), std::move(doc));
            return 0;
          }};
}

}  // namespace cli
