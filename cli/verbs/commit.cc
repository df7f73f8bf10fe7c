// swarm commit: commit in the slot's worktree, push to the hub, renew.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <thread>

#include <filesystem>

#include "cli/verbs/documents/documents.h"
#include "cli/verbs/verbs.h"
#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/process_secrets.h"
#include "swarm/base/text.h"
#include "swarm/git/backend.h"
#include "swarm/git/hub.h"
#include "swarm/git/worktree.h"
#include "swarm/landing/landing.h"
#include "swarm/slots/lifecycle.h"

namespace cli {

namespace {

struct CommitRequest {
  std::string slot;
  std::string message;
  std::vector<std::string> paths;  // relative to the worktree once resolved
  std::string session;
};

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
  // Out of the caller's terminal and process group, and with no signal
  // blocked: a run that answers the agent's commit blocks them on every
  // thread (SignalRouter), and the repack must stay stoppable.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  std::vector<std::string> env = swarm::child_environment();
  std::vector<char*> envp;
  for (auto& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, self.c_str(), &actions, &attr, argv.data(), envp.data()) != 0)
    swarm::log::debug("could not start a repack of the hub");
  else  // reaped when it ends: a long-lived run keeps no zombie
    std::thread([pid] {
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }).detach();
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
}

// After a push: the conflicts the slot's branch now has with another slot's
// unlanded branch or the hub's default branch, said at once and journaled.
// Never fails the commit: what cannot be foreseen is a warning.
std::vector<swarm::Overlap> overlaps_after(Context& ctx, const swarm::SlotLifecycle& life, const std::string& slot,
                                           const swarm::CommitResult& r, Reporter& report) {
  if (!r.pushed) return {};
  try {
    swarm::Landing landing(life.workspace(), life.hub(), life.sessions(), life.leases(), ctx.me());
    auto overlaps = landing.commit_overlaps(slot, landing.onto({}), r.token, r.task_id, r.revision);
    for (const auto& o : overlaps) {
      std::string line = overlaps_text({o}, "swarm/" + slot + " ");
      line.pop_back();
      report.warn(line + (o.with.rfind("swarm/", 0) == 0 ? " (whichever lands second must sync and resolve)"
                                                         : " (swarm sync brings it here to resolve now)"));
    }
    return overlaps;
  } catch (const swarm::Error& e) {
    report.warn(std::string("conflicts with other slots could not be foreseen: ") + e.what());
    return {};
  }
}

// Paths as the caller named them (relative to its folder), made relative
// to the slot's worktree: bad ones are refused before any NATS round trip.
void resolve(CommitRequest& r, const Context& ctx) {
  resolve_slot(r.slot, ctx);
  if (r.paths.empty()) return;
  const swarm::Workspace ws = ctx.workspace();
  const auto cwd = swarm::current_folder();
  for (auto& p : r.paths) {
    if (!cwd && std::filesystem::path(p).is_relative())
      throw swarm::Error(swarm::Errc::bad_input, "path " + p + " is relative, and the current folder no "
                                                 "longer exists: cd into the worktree, or give it whole");
    p = swarm::path_inside(ws.worktree(r.slot), cwd.value_or(ws.root()), p);
  }
}

VerbResult commit(const CommitRequest& r, Context& ctx, Reporter& report) {
  auto git = swarm::prefetch_git_backend();  // overlaps the NATS round trips below
  auto lifecycle = ctx.lifecycle();
  auto c = lifecycle.commit(r.slot, r.message, r.paths, session_of(r.session));
  for (const auto& w : c.warnings) report.warn(w);
  VerbResult out;
  out.text = c.commit ? c.commit->substr(0, 12) + " on " + c.branch + (c.pushed ? " (pushed to the hub)" : " (not pushed)")
                      : "nothing to commit on " + c.branch + (c.pushed ? " (pushed its earlier commits to the hub)" : "");
  out.doc.set("slot", r.slot).set("branch", c.branch);
  if (c.commit) out.doc.set("commit", *c.commit);
  else out.doc.set_null("commit");
  out.doc.set("pushed", c.pushed).set("renewed", c.revision != 0).set("revision", c.revision);
  out.doc.set("warnings", swarm::Json::strings(c.warnings));
  out.doc.set("overlaps", overlaps_json(overlaps_after(ctx, lifecycle, r.slot, c, report)));
  if (c.pushed) repack_in_background(lifecycle.workspace(), lifecycle.hub());
  return out;
}

}  // namespace

VerbSpec commit_verb() {
  auto options =
      OptionTable<CommitRequest>()
          .text(&CommitRequest::slot, slot_option())
          .text(&CommitRequest::message,
                {.name = "--message", .alias = "-m", .value_name = "TEXT", .help = "Commit message", .required = true})
          .texts(&CommitRequest::paths, {.name = "paths",
                                         .value_name = "PATH...",
                                         .help = "Paths to commit (default: every change, untracked files included)"})
          .text(&CommitRequest::session, session_option())
          .done();
  return make_verb<CommitRequest>(
      {"commit"}, "Commit in the slot's worktree, push swarm/<slot> to the hub, renew",
      "Examples:\n"
      "  swarm commit --slot render -m \"render: tile cache\"          # every change\n"
      "  swarm commit --slot render -m \"fix\" src/tile.cc docs/      # only these\n"
      "A failed push or renewal is a warning (exit 0): the local commit stands.",
      std::move(options),
      [](const CommitRequest& r) {
        if (r.message.empty())
          throw swarm::Error(swarm::Errc::bad_input, "an empty commit message; say what changed with -m");
      },
      resolve, commit);
}

}  // namespace cli
