// swarm sync: the hub's onto branch brought into the slot's worktree, so a
// refused land is fixed where the work is: sync, resolve, commit, close, land.
#include "cli/command/context.h"
#include "cli/verbs/progress.h"
#include "swarm/base/text.h"
#include "swarm/landing/landing.h"

namespace cli {

namespace {
struct SyncFlags {
  std::string slot;
  std::string onto;
  std::string session;
};
}  // namespace

Verb add_sync(CLI::App& app) {
  auto flags = std::make_shared<SyncFlags>();
  CLI::App* cmd = app.add_subcommand("sync", "Bring the onto branch into the slot's worktree (merge; conflicts left "
                                             "for you to resolve and commit)");
  add_slot_option(*cmd, flags->slot);
  cmd->add_option("--onto", flags->onto, "The branch to bring in (default: the hub's default branch)")
      ->option_text("BRANCH")
      ->check(validator_of([](const std::string& b) { swarm::require_branch_name(b, "--onto"); }, "BRANCH"));
  add_session_option(*cmd, flags->session);
  cmd->footer(
      "Examples:\n"
      "  swarm sync                         # inside the worktree: main into swarm/<slot>\n"
      "  swarm sync --slot render --onto release/2\n"
      "A fast-forward when the slot's branch has nothing of its own, else a merge commit with both\n"
      "parents, pushed to the hub. A conflict is left in the worktree, the paths named (exit 3): edit\n"
      "them, then `swarm commit` finishes the merge (or `git merge --abort` drops it). Needs the\n"
      "tracked files committed first.");
  return {cmd, [flags](Context& ctx) {
            flags->slot = ctx.slot_of(flags->slot);
            auto git = swarm::prefetch_git_backend();  // overlaps the NATS round trips below
            auto lifecycle = ctx.lifecycle();
            Progress progress("syncing slot " + flags->slot + " (fetching from the hub)");
            auto r = lifecycle.sync(flags->slot, flags->onto, session_of(flags->session));
            progress.done();
            for (const auto& w : r.warnings) ctx.out().warn(w);
            const std::string branch = "swarm/" + flags->slot;
            const std::string onto = swarm::printable(r.onto);
            if (r.git.how == "conflict") {
              std::string paths;
              for (const auto& p : r.git.conflicts) paths += (paths.empty() ? "" : ", ") + swarm::printable(p);
              const std::string wt = lifecycle.workspace().worktree(flags->slot).string();
              throw swarm::Error(swarm::Errc::conflict,
                                 onto + " does not merge cleanly into " + branch + ": conflicts in " + paths +
                                     ", left in " + wt + " with their markers; edit them, then `swarm commit` "
                                     "finishes the merge (or drop it: git -C " + swarm::shell_word(wt) +
                                     " merge --abort)");
            }
            std::string human = r.git.how == "up-to-date" ? branch + " has everything of " + onto + " already"
                                : r.git.how == "fast-forward"
                                    ? "fast-forwarded " + branch + " to " + onto + " (" + r.git.to.substr(0, 12) + ")"
                                    : "merged " + onto + " into " + branch + ": " + r.git.to.substr(0, 12);
            if (r.git.how != "up-to-date") human += r.pushed ? " (pushed to the hub)" : " (not pushed)";
            swarm::Json doc = swarm::Json::object();
            doc.set("slot", flags->slot).set("onto", r.onto).set("how", r.git.how).set("from", r.git.from);
            doc.set("to", r.git.to).set("pushed", r.pushed).set("renewed", r.revision != 0);
            ctx.out().result("sync", human, std::move(doc));
            return 0;
          }};
}

}  // namespace cli
