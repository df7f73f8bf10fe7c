// swarm close: release the slot, salvage, remove the worktree.
#include "cli/command/context.h"
#include "cli/verbs/progress.h"
#include "swarm/base/text.h"
#include "swarm/git/backend.h"

namespace cli {

namespace {
struct CloseFlags {
  std::string slot;
  std::string session;
  std::string result = "success";
  std::string priority = "normal";
  swarm::CloseOptions options;
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

}  // namespace

Verb add_close(CLI::App& app) {
  auto flags = std::make_shared<CloseFlags>();
  CLI::App* cmd = app.add_subcommand("close", "Release the slot: delete its record, salvage and remove its worktree");
  add_slot_option(*cmd, flags->slot);
  cmd->add_option("--result", flags->result, "How the work ended: success, fail or fork")
      ->capture_default_str()
      ->check(CLI::IsMember({"success", "fail", "fork"}));
  cmd->add_option("--priority", flags->priority,
                  "The lane of a success in land --ready: high lands ahead of every normal one")
      ->capture_default_str()
      ->check(CLI::IsMember({"normal", "high"}));
  cmd->add_flag("--keep-worktree", flags->options.keep_worktree, "Keep the worktree folder");
  cmd->add_flag("--no-artifact", flags->options.no_artifact, "Allow --result success without any commit");
  add_session_option(*cmd, flags->session);
  cmd->footer(
      "Examples:\n"
      "  swarm close --slot render                    # success: needs at least one commit\n"
      "  swarm close --slot render --result fail\n"
      "  swarm close --slot hotfix --priority high     # lands before every normal slot\n"
      "Uncommitted files are copied to .swarm/recovery/<slot>-<time>/ before the worktree goes.");
  return {cmd, [flags](Context& ctx) {
            flags->slot = ctx.slot_of(flags->slot);
            auto git = swarm::prefetch_git_backend();  // overlaps the NATS round trips below
            flags->options.session = session_of(flags->session);
            flags->options.result = swarm::parse_outcome(flags->result);
            flags->options.priority_high = flags->priority == "high";
            if (flags->options.priority_high && flags->options.result != swarm::Outcome::success)
              throw swarm::Error(swarm::Errc::bad_input, "--priority high is for work that lands: it needs --result "
                                                         "success, not " + flags->result);
            auto lifecycle = ctx.lifecycle();
            const swarm::Workspace ws = ctx.workspace();
            const bool inside = in_folder(swarm::current_folder(), ws.worktree(flags->slot));
            Progress progress("closing slot " + flags->slot + " (pushing and salvaging)");
            auto r = lifecycle.close(flags->slot, flags->options);
            progress.done();
            for (const auto& w : r.warnings) ctx.out().warn(w);
            // A shell left in the removed worktree stands nowhere: say where to go.
            if (inside && r.removed_worktree)
              ctx.out().note("the current folder was in slot " + flags->slot + "'s worktree, which is gone now: cd " +
                             swarm::shell_word(ws.root().string()));
            std::string human = "closed slot " + flags->slot + " (" + flags->result + ")";
            if (r.salvage.files > 0 || r.salvage.deleted > 0)
              human += "; salvaged " + std::to_string(r.salvage.files) + " uncommitted file(s) to " +
                       r.salvage.folder.string();
            if (!r.salvage.commits_ref.empty())
              human += "; history the hub lacked is in the hub under " + r.salvage.commits_ref + "/";
            if (flags->options.keep_worktree) human += "; kept the worktree";
            swarm::Json doc = swarm::Json::object();
            doc.set("slot", flags->slot)
                .set("result", swarm::to_string(flags->options.result))
                .set("released", r.released.has_value())
                .set("removed_worktree", r.removed_worktree)
                .set("salvaged_files", r.salvage.files);
            if (r.salvage.folder.empty()) doc.set_null("recovery");
            else doc.set("recovery", r.salvage.folder.string());
            if (r.salvage.commits_ref.empty()) doc.set_null("recovery_ref");
            else doc.set("recovery_ref", r.salvage.commits_ref);
            swarm::Json refs = swarm::Json::array();
            for (const auto& ref : r.salvage.refs) refs.push(swarm::Json::parse(swarm::quoted(ref)));
            doc.set("recovery_refs", std::move(refs));
            ctx.out().result("close", human, std::move(doc));
            return 0;
          }};
}

}  // namespace cli
