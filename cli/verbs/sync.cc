// swarm sync: the hub's onto branch brought into the slot's worktree, so a
// refused land is fixed where the work is: sync, resolve, commit, close, land.
#include "cli/verbs/progress.h"
#include "cli/verbs/verbs.h"
#include "swarm/base/error.h"
#include "swarm/landing/landing.h"
#include "swarm/base/text.h"
#include "swarm/git/backend.h"
#include "swarm/slots/lifecycle.h"

namespace cli {

namespace {

struct SyncRequest {
  std::string slot;
  std::string onto;
  std::string session;
};

VerbResult sync(const SyncRequest& r, Context& ctx, Reporter& report) {
  auto git = swarm::prefetch_git_backend();  // overlaps the NATS round trips below
  auto lifecycle = ctx.lifecycle();
  Progress progress("syncing slot " + r.slot + " (fetching from the hub)", ctx.draws_progress());
  auto s = lifecycle.sync(r.slot, r.onto, session_of(r.session));
  progress.done();
  for (const auto& w : s.warnings) report.warn(w);
  const std::string branch = "swarm/" + r.slot;
  const std::string onto = swarm::printable(s.onto);
  if (s.git.how == "conflict") {
    std::string paths;
    for (const auto& p : s.git.conflicts) paths += (paths.empty() ? "" : ", ") + swarm::printable(p);
    const std::string wt = lifecycle.workspace().worktree(r.slot).string();
    throw swarm::Error(swarm::Errc::conflict, onto + " does not merge cleanly into " + branch + ": conflicts in " +
                                                  paths + ", left in " + wt + " with their markers; edit them, then "
                                                  "`swarm commit` finishes the merge (or drop it: git -C " +
                                                  swarm::shell_word(wt) + " merge --abort)");
  }
  VerbResult out;
  out.text = s.git.how == "up-to-date"     ? branch + " has everything of " + onto + " already"
             : s.git.how == "fast-forward" ? "fast-forwarded " + branch + " to " + onto + " (" + s.git.to.substr(0, 12) + ")"
                                           : "merged " + onto + " into " + branch + ": " + s.git.to.substr(0, 12);
  if (s.git.how != "up-to-date") out.text += s.pushed ? " (pushed to the hub)" : " (not pushed)";
  out.doc.set("slot", r.slot).set("onto", s.onto).set("how", s.git.how).set("from", s.git.from);
  out.doc.set("to", s.git.to).set("pushed", s.pushed).set("renewed", s.revision != 0);
  return out;
}

}  // namespace

VerbSpec sync_verb() {
  auto options =
      OptionTable<SyncRequest>()
          .text(&SyncRequest::slot, slot_option())
          .text(&SyncRequest::onto,
                {.name = "--onto",
                 .value_name = "BRANCH",
                 .help = "The branch to bring in (default: the hub's default branch)",
                 .check = [](const std::string& b) { swarm::require_branch_name(b, "--onto"); }})
          .text(&SyncRequest::session, session_option())
          .done();
  return make_verb<SyncRequest>(
      {"sync"}, "Bring the onto branch into the slot's worktree (merge; conflicts left for you to resolve and commit)",
      "Examples:\n"
      "  swarm sync                         # inside the worktree: main into swarm/<slot>\n"
      "  swarm sync --slot render --onto release/2\n"
      "A fast-forward when the slot's branch has nothing of its own, else a merge commit with both\n"
      "parents, pushed to the hub. A conflict is left in the worktree, the paths named (exit 3): edit\n"
      "them, then `swarm commit` finishes the merge (or `git merge --abort` drops it). Needs the\n"
      "tracked files committed first.",
      std::move(options), {}, [](SyncRequest& r, const Context& ctx) { resolve_slot(r.slot, ctx); }, sync);
}

}  // namespace cli
