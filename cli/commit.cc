// swarm commit: commit in the slot's worktree, push to the hub, renew.
#include <filesystem>

#include "cli/context.h"
#include "swarm/git_backend.h"
#include "swarm/names.h"
#include "swarm/worktree.h"

namespace cli {

namespace {
struct CommitFlags {
  std::string slot;
  std::string message;
  std::vector<std::string> paths;
};
}  // namespace

Verb add_commit(CLI::App& app) {
  auto flags = std::make_shared<CommitFlags>();
  CLI::App* cmd = app.add_subcommand("commit", "Commit in the slot's worktree, push swarm/<slot> to the hub, renew");
  cmd->add_option("--slot", flags->slot, "Slot name")->required()
      ->check(slot_name_validator());
  cmd->add_option("-m,--message", flags->message, "Commit message")->required();
  cmd->add_option("paths", flags->paths, "Paths to commit (default: every change, untracked files included)")
      ->option_text("PATH...");
  cmd->footer(
      "Examples:\n"
      "  swarm commit --slot render -m \"render: tile cache\"          # every change\n"
      "  swarm commit --slot render -m \"fix\" src/tile.cc docs/      # only these\n"
      "A failed push or renewal is a warning (exit 0): the local commit stands.");
  return {cmd, [flags](Context& ctx) {
            swarm::require_slot_name(flags->slot);
            if (flags->message.empty())
              throw swarm::Error(swarm::Errc::bad_input, "an empty commit message; say what changed with -m");
            auto git = swarm::prefetch_git_backend();  // overlaps the NATS round trips below
            // Paths are checked before any NATS round trip: bad ones change nothing.
            auto ws = ctx.workspace();
            std::vector<std::string> relative;
            for (const auto& p : flags->paths)
              relative.push_back(swarm::path_inside(ws.worktree(flags->slot), std::filesystem::current_path(), p));
            auto lifecycle = ctx.lifecycle();
            auto r = lifecycle.commit(flags->slot, flags->message, relative);
            for (const auto& w : r.warnings) ctx.out().warn(w);
            std::string human = r.commit ? r.commit->substr(0, 12) + " on " + r.branch +
                                               (r.pushed ? " (pushed to the hub)" : " (not pushed)")
                                         : "nothing to commit on " + r.branch +
                                               (r.pushed ? " (pushed its earlier commits to the hub)" : "");
            swarm::Json doc = swarm::Json::object();
            doc.set("slot", flags->slot).set("branch", r.branch);
            if (r.commit) doc.set("commit", *r.commit);
            else doc.set_null("commit");
            doc.set("pushed", r.pushed).set("renewed", r.revision != 0).set("revision", r.revision);
            swarm::Json warnings = swarm::Json::array();
            for (const auto& w : r.warnings) {
              swarm::Json item = swarm::Json::parse(swarm::quoted(w));
              warnings.push(std::move(item));
            }
            doc.set("warnings", std::move(warnings));
            ctx.out().result("commit", human, std::move(doc));
            return 0;
          }};
}

}  // namespace cli
