// swarm recovery list|prune: what salvage kept (files in .swarm/recovery/,
// commits under the hub's refs/recovery/), and its removal once old.
#include <iostream>

#include "cli/command/context.h"
#include "swarm/base/duration.h"
#include "swarm/base/text.h"
#include "swarm/slots/recovery_index.h"

namespace cli {

namespace {

struct RecoveryFlags {
  std::string older_than;
  bool dry_run = false;
};

swarm::Json item_json(const swarm::RecoveryItem& i) {
  swarm::Json j = swarm::Json::object();
  j.set("name", i.name).set("slot", i.slot).set("time", swarm::format_rfc3339(i.time)).set("folder", i.folder);
  swarm::Json refs = swarm::Json::array();
  for (const auto& [ref, id] : i.refs) {
    swarm::Json r = swarm::Json::object();
    r.set("ref", swarm::printable(ref)).set("id", id);
    refs.push(std::move(r));
  }
  j.set("refs", std::move(refs));
  return j;
}

}  // namespace

Verb add_recovery(CLI::App& app) {
  auto f = std::make_shared<RecoveryFlags>();
  CLI::App* cmd = app.add_subcommand("recovery", "What salvage kept: list it, prune what is old");
  cmd->require_subcommand(1);
  CLI::App* list = cmd->add_subcommand("list", "Every salvage: its files in .swarm/recovery/ and its refs in the hub");
  CLI::App* prune = cmd->add_subcommand("prune", "Remove salvages older than DUR (folders and hub refs)");
  prune->add_option("--older-than", f->older_than, "Remove what was salvaged longer ago than this (e.g. 30d, 12h)")
      ->required()
      ->option_text("DUR")
      ->check(validator_of([](const std::string& t) { swarm::parse_long_duration(t); }, "DUR"));
  prune->add_flag("--dry-run", f->dry_run, "Say what would go, remove nothing");
  cmd->footer(
      "Examples:\n"
      "  swarm recovery list\n"
      "  swarm recovery prune --older-than 30d --dry-run\n"
      "Only what has the shape salvage gives (<slot>-<time>) is listed or removed; anything else in\n"
      ".swarm/recovery/ or under refs/recovery/ is left alone, and so is whatever is younger.");
  return {cmd, [f, list, prune](Context& ctx) {
            const swarm::Workspace ws = ctx.workspace();
            const auto hub = ws.load_config().hub_location();
            if (list->parsed()) {
              const auto items = swarm::list_recovery(ws, hub);
              swarm::Json rows = swarm::Json::array();
              std::vector<std::vector<std::string>> table = {{"SALVAGED", "SLOT", "FILES", "HUB REFS"}};
              for (const auto& i : items) {
                rows.push(item_json(i));
                table.push_back({swarm::format_rfc3339(i.time), swarm::printable(i.slot),
                                 i.folder ? ".swarm/recovery/" + swarm::printable(i.name) : std::string("-"),
                                 i.refs.empty() ? std::string("-")
                                                : swarm::counted(i.refs.size(), "ref") + " under refs/recovery/" +
                                                      swarm::printable(i.name)});
              }
              std::string text = items.empty() ? "nothing salvaged\n" : aligned(table);
              text.pop_back();
              swarm::Json doc = swarm::Json::object();
              doc.set("recovery", std::move(rows));
              ctx.out().result("recovery", text, std::move(doc));
              return 0;
            }
            const auto before = std::chrono::system_clock::now() - swarm::parse_long_duration(f->older_than);
            const auto r = swarm::prune_recovery(ws, hub, before, f->dry_run);
            const std::string verb = f->dry_run ? "would remove " : "removed ";
            std::string text = verb + swarm::counted(r.folders.size(), "folder") + " and " +
                               swarm::counted(r.refs.size(), "hub ref") + " salvaged before " +
                               swarm::format_rfc3339(before);
            for (const auto& name : r.folders) text += "\n  .swarm/recovery/" + name;
            for (const auto& ref : r.refs) text += "\n  " + swarm::printable(ref);
            swarm::Json doc = swarm::Json::object();
            std::vector<std::string> refs;
            for (const auto& ref : r.refs) refs.push_back(swarm::printable(ref));
            doc.set("dry_run", f->dry_run).set("before", swarm::format_rfc3339(before));
            doc.set("folders", swarm::Json::strings(r.folders)).set("refs", swarm::Json::strings(refs));
            ctx.out().result("recovery", text, std::move(doc));
            (void)prune;
            return 0;
          }};
}

}  // namespace cli
