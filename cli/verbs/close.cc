// swarm close: release the slot, salvage, remove the worktree.
#include <filesystem>

#include "cli/verbs/progress.h"
#include "cli/verbs/verbs.h"
#include "swarm/base/error.h"
#include "swarm/base/text.h"
#include "swarm/git/backend.h"
#include "swarm/slots/lifecycle.h"

namespace cli {

namespace {

struct CloseRequest {
  std::string slot;
  std::string session;
  std::string result = "success";
  std::string priority = "normal";
  bool keep_worktree = false;
  bool no_artifact = false;
  bool inside = false;  // resolved: the caller stands in the slot's worktree
};

// Whether `here` is `folder` or lies below it.
bool in_folder(const std::optional<std::filesystem::path>& here, const std::filesystem::path& folder) {
  if (!here) return false;
  std::error_code ec;
  const auto base = std::filesystem::weakly_canonical(folder, ec);
  if (ec) return false;
  const auto rel = here->lexically_relative(base);
  return !rel.empty() && *rel.begin() != "..";
}

VerbResult close(const CloseRequest& r, Context& ctx, Reporter& report) {
  auto git = swarm::prefetch_git_backend();  // overlaps the NATS round trips below
  swarm::CloseOptions options;
  options.session = session_of(r.session);
  options.result = swarm::parse_outcome(r.result);
  options.priority_high = r.priority == "high";
  options.keep_worktree = r.keep_worktree;
  options.no_artifact = r.no_artifact;
  auto lifecycle = ctx.lifecycle();
  Progress progress("closing slot " + r.slot + " (pushing and salvaging)", ctx.draws_progress());
  auto c = lifecycle.close(r.slot, options);
  progress.done();
  for (const auto& w : c.warnings) report.warn(w);
  // A shell left in the removed worktree stands nowhere: say where to go.
  if (r.inside && c.removed_worktree)
    report.note("the current folder was in slot " + r.slot + "'s worktree, which is gone now: cd " +
                swarm::shell_word(lifecycle.workspace().root().string()));
  VerbResult out;
  out.text = "closed slot " + r.slot + " (" + r.result + ")";
  if (c.salvage.files > 0 || c.salvage.deleted > 0)
    out.text += "; salvaged " + std::to_string(c.salvage.files) + " uncommitted file(s) to " + c.salvage.folder.string();
  if (!c.salvage.commits_ref.empty())
    out.text += "; history the hub lacked is in the hub under " + c.salvage.commits_ref + "/";
  if (r.keep_worktree) out.text += "; kept the worktree";
  out.doc.set("slot", r.slot)
      .set("result", swarm::to_string(options.result))
      .set("released", c.released.has_value())
      .set("removed_worktree", c.removed_worktree)
      .set("salvaged_files", c.salvage.files);
  if (c.salvage.folder.empty()) out.doc.set_null("recovery");
  else out.doc.set("recovery", c.salvage.folder.string());
  if (c.salvage.commits_ref.empty()) out.doc.set_null("recovery_ref");
  else out.doc.set("recovery_ref", c.salvage.commits_ref);
  out.doc.set("recovery_refs", swarm::Json::strings(c.salvage.refs));
  return out;
}

}  // namespace

VerbSpec close_verb() {
  auto options =
      OptionTable<CloseRequest>()
          .text(&CloseRequest::slot, slot_option())
          .text(&CloseRequest::result, {.name = "--result",
                                        .value_name = "success|fail|fork",
                                        .help = "How the work ended: success, fail or fork (default: success)",
                                        .choices = {"success", "fail", "fork"}})
          .text(&CloseRequest::priority,
                {.name = "--priority",
                 .value_name = "normal|high",
                 .help = "The lane of a success in land --ready: high lands ahead of every normal one (default: normal)",
                 .choices = {"normal", "high"}})
          .flag(&CloseRequest::keep_worktree, {.name = "--keep-worktree", .help = "Keep the worktree folder"})
          .flag(&CloseRequest::no_artifact,
                {.name = "--no-artifact", .help = "Allow --result success without any commit"})
          .text(&CloseRequest::session, session_option())
          .flag(&CloseRequest::inside, {.name = "--inside", .resolved = true})
          .done();
  return make_verb<CloseRequest>(
      {"close"}, "Release the slot: delete its record, salvage and remove its worktree",
      "Examples:\n"
      "  swarm close --slot render                    # success: needs at least one commit\n"
      "  swarm close --slot render --result fail\n"
      "  swarm close --slot hotfix --priority high     # lands before every normal slot\n"
      "Uncommitted files are copied to .swarm/recovery/<slot>-<time>/ before the worktree goes.",
      std::move(options),
      [](const CloseRequest& r) {
        if (r.priority == "high" && r.result != "success")
          throw swarm::Error(swarm::Errc::bad_input,
                             "--priority high is for work that lands: it needs --result success, not " + r.result);
      },
      [](CloseRequest& r, const Context& ctx) {
        resolve_slot(r.slot, ctx);
        r.inside = in_folder(swarm::current_folder(), ctx.workspace().worktree(r.slot));
      },
      close);
}

}  // namespace cli
