// swarm commit: commit in the slot's worktree, push to the hub, renew.
#include <filesystem>

#include <fcntl.h>
#include <spawn.h>

#include "cli/command/context.h"
#include "cli/verbs/documents/documents.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/base/process_secrets.h"
#include "swarm/git/backend.h"
#include "swarm/git/hub.h"
#include "swarm/git/worktree.h"

namespace cli {

namespace {

// A local hub with too many packs is repacked by another swarm process,
// started here and not waited for: no commit waits for a repack (adr/0016).
void repack_in_background(const swarm::Workspace& ws, const swarm::HubLocation& hub) {
  if (hub.remote() || swarm::Hub::pack_count(hub.path()) <= swarm::kHubPackLimit) return;
  std::string self = "/proc/self/exe";
  std::vector<std::string> args = {"swarm", "_repack-hub", "--workspace", ws.root().string()};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (int fd : {0, 1, 2}) posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);  // nats.c's socket is not close-on-exec
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);  // out of the caller's terminal and process group
  std::vector<std::string> env = swarm::child_environment();
  std::vector<char*> envp;
  for (auto& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, self.c_str(), &actions, &attr, argv.data(), envp.data()) != 0)
    swarm::log::debug("could not start a repack of the hub");
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
}

// After a push: the conflicts the slot's branch now has with another slot's
// unlanded branch or the hub's default branch, said on stderr at once and
// journaled. Never fails the commit: what cannot be foreseen is a warning.
std::vector<swarm::Overlap> overlaps_after(Context& ctx, const swarm::SlotLifecycle& life, const std::string& slot,
                                           const swarm::CommitResult& r) {
  if (!r.pushed) return {};
  try {
    swarm::Landing landing(life.workspace(), life.hub(), life.sessions(), life.leases(), ctx.me());
    auto overlaps = landing.commit_overlaps(slot, landing.onto({}), r.token, r.task_id, r.revision);
    for (const auto& o : overlaps) {
      std::string line = overlaps_text({o}, "swarm/" + slot + " ");
      line.pop_back();
      ctx.out().warn(line + (o.with.rfind("swarm/", 0) == 0 ? " (whichever lands second must sync and resolve)"
                                                            : " (swarm sync brings it here to resolve now)"));
    }
    return overlaps;
  } catch (const swarm::Error& e) {
    ctx.out().warn(std::string("conflicts with other slots could not be foreseen: ") + e.what());
    return {};
  }
}

}  // namespace

Verb add_repack_hub(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("_repack-hub", "Repack the workspace's local hub when it has too many packs");
  cmd->group("");  // hidden: commit starts it
  return {cmd, [](Context& ctx) {
            auto ws = ctx.workspace();
            const swarm::HubLocation hub = ws.load_config().hub_location();
            if (hub.remote()) return 0;  // the server's to keep
            auto r = swarm::Hub::repack(hub.path());
            swarm::Json doc = swarm::Json::object();
            doc.set("busy", r.busy).set("packs_before", r.packs_before).set("packs_after", r.packs_after);
            doc.set("objects", static_cast<std::int64_t>(r.objects));
            ctx.out().result("repack", r.busy ? "another repack is at it\n"
                                              : "packs: " + std::to_string(r.packs_before) + " -> " +
                                                    std::to_string(r.packs_after) + "\n",
                             std::move(doc));
            return 0;
          }};
}

namespace {
struct CommitFlags {
  std::string slot;
  std::string message;
  std::vector<std::string> paths;
  std::string session;
};
}  // namespace

Verb add_commit(CLI::App& app) {
  auto flags = std::make_shared<CommitFlags>();
  CLI::App* cmd = app.add_subcommand("commit", "Commit in the slot's worktree, push swarm/<slot> to the hub, renew");
  add_slot_option(*cmd, flags->slot);
  cmd->add_option("-m,--message", flags->message, "Commit message")->required();
  cmd->add_option("paths", flags->paths, "Paths to commit (default: every change, untracked files included)")
      ->option_text("PATH...");
  add_session_option(*cmd, flags->session);
  cmd->footer(
      "Examples:\n"
      "  swarm commit --slot render -m \"render: tile cache\"          # every change\n"
      "  swarm commit --slot render -m \"fix\" src/tile.cc docs/      # only these\n"
      "A failed push or renewal is a warning (exit 0): the local commit stands.");
  return {cmd, [flags](Context& ctx) {
            flags->slot = ctx.slot_of(flags->slot);
            if (flags->message.empty())
              throw swarm::Error(swarm::Errc::bad_input, "an empty commit message; say what changed with -m");
            auto git = swarm::prefetch_git_backend();  // overlaps the NATS round trips below
            // Paths are checked before any NATS round trip: bad ones change nothing.
            auto ws = ctx.workspace();
            std::vector<std::string> relative;
            const auto cwd = swarm::current_folder();
            for (const auto& p : flags->paths) {
              if (!cwd && std::filesystem::path(p).is_relative())
                throw swarm::Error(swarm::Errc::bad_input, "path " + p + " is relative, and the current folder no "
                                                           "longer exists: cd into the worktree, or give it whole");
              relative.push_back(swarm::path_inside(ws.worktree(flags->slot), cwd.value_or(ws.root()), p));
            }
            auto lifecycle = ctx.lifecycle();
            auto r = lifecycle.commit(flags->slot, flags->message, relative, session_of(flags->session));
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
            doc.set("overlaps", overlaps_json(overlaps_after(ctx, lifecycle, flags->slot, r)));
            ctx.out().result("commit", human, std::move(doc));
            if (r.pushed) repack_in_background(ws, lifecycle.hub());
            return 0;
          }};
}

}  // namespace cli
