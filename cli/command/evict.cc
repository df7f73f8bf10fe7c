// swarm evict: operator override, any host.
#include "cli/command/context.h"
#include "swarm/base/json.h"
#include "swarm/base/text.h"

namespace cli {

Verb add_evict(CLI::App& app) {
  auto slot = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("evict", "Operator override: CAS-delete the slot's record, whatever its host");
  cmd->add_option("--slot", *slot, "Slot name")->required()
      ->check(slot_name_validator());
  cmd->footer(
      "Example:\n  swarm evict --slot render     # prints the record it removed\n"
      "The worktree (on its own host) is left alone; `swarm doctor --fix` there salvages it.");
  return {cmd, [slot](Context& ctx) {
            auto lifecycle = ctx.lifecycle();
            auto removed = lifecycle.evict(*slot);
            std::string human;
            if (removed.corrupt())
              human = "evicted slot " + *slot + ": its record was corrupt (" + swarm::printable(removed.corrupt_reason) +
                      ") and is gone (revision " + std::to_string(removed.revision) + ")";
            else
              human = "evicted slot " + *slot + ": the session of host " + swarm::printable(removed.session->host) +
                      " (task " + swarm::printable(removed.session->task_id) + ", session " +
                      std::to_string(removed.token()) + ", started " +
                      (removed.session->started_at ? swarm::format_rfc3339(*removed.session->started_at) : "?") +
                      ") is gone and its task lease released; its worktree on " +
                      swarm::printable(removed.session->host) +
                      " is left as it is (`swarm doctor --fix` there salvages it). `--json` shows the record removed.";
            const std::string stored = removed.corrupt() ? removed.raw : swarm::to_json(*removed.session);
            swarm::Json doc = swarm::Json::object();
            doc.set("slot", *slot).set("revision", removed.revision).set("corrupt", removed.corrupt());
            swarm::Json record = removed.corrupt() ? swarm::Json() : swarm::Json::parse(stored);
            if (record) doc.set("record", std::move(record));
            else doc.set("raw", stored);
            ctx.out().result("evict", human, std::move(doc));
            return 0;
          }};
}

}  // namespace cli
