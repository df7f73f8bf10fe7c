#include "swarm/run/agent_run.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "swarm/base/error.h"
#include "swarm/base/file_lock.h"
#include "swarm/base/process_info.h"
#include "swarm/base/test_seam.h"
#include "swarm/lease/lease_keeper.h"
#include "swarm/slots/events.h"
#include "swarm/slots/folder.h"

namespace swarm {

namespace {

using namespace std::chrono_literals;

// The journal's word on a lost session is tried this long (NATS may be what was lost).
constexpr std::chrono::milliseconds kLostEventBudget{1000};

void say(const std::function<void(const std::string&)>& to, const std::string& what) {
  if (to) to(what);
}

// The variables `join --env` prints, for the agent.
std::vector<std::pair<std::string, std::string>> agent_env(const Workspace& ws, const JoinResult& joined) {
  const Session& s = joined.session;
  std::vector<std::pair<std::string, std::string>> env = {
      {"SWARM_SLOT", s.slot},
      {"SWARM_SESSION", std::to_string(joined.revision)},
      {"SWARM_WORKTREE", joined.worktree.string()},
      {"SWARM_TASK", s.task_id},
      {"SWARM_WORKSPACE", ws.root().string()},
  };
  if (auto block = s.port_block()) {
    env.emplace_back("SWARM_PORT_BASE", std::to_string(block->base));
    env.emplace_back("SWARM_PORTS", std::to_string(block->count));
  }
  return env;
}

// While the agent runs: once the run is sent a signal (forwarded to the
// agent by the caller), the agent has `grace` to end, then SIGKILL.
class GraceWatch {
 public:
  GraceWatch(ChildProcess& child, const RunOptions& o) : thread_([this, &child, &o] {
    std::optional<std::chrono::steady_clock::time_point> kill_at;
    while (!ended_) {
      if (!kill_at && o.signalled && o.signalled() != 0) kill_at = std::chrono::steady_clock::now() + o.grace;
      if (kill_at && std::chrono::steady_clock::now() >= *kill_at) {
        say(o.note, "the agent did not end within --grace of the signal: SIGKILL");
        child.signal(SIGKILL);
        return;
      }
      std::this_thread::sleep_for(50ms);
    }
  }) {}
  ~GraceWatch() {
    ended_ = true;
    thread_.join();
  }
  GraceWatch(const GraceWatch&) = delete;
  GraceWatch& operator=(const GraceWatch&) = delete;

 private:
  std::atomic<bool> ended_{false};
  std::thread thread_;
};

// What the run's caller may have set that is not this agent's: another
// slot's ports, a lease's token, a land's variables (agent_env sets its own).
bool not_the_agents(std::string_view name) {
  for (std::string_view other : {"SWARM_PORT_BASE", "SWARM_PORTS", "SWARM_LEASE", "SWARM_FENCING_TOKEN",
                                 "SWARM_PERMIT", "SWARM_LAND_SLOT", "SWARM_LAND_ONTO", "SWARM_LAND_BATCH",
                                 "SWARM_SOCKET"})
    if (name == other) return true;
  return false;
}

// The agent started: its process, or the slot closed as a fail again when
// it cannot start (nothing ran in it), then the error.
std::unique_ptr<ChildProcess> start_agent(SlotLifecycle& life, const RunOptions& o, const JoinResult& joined) {
  try {
    auto env = agent_env(life.workspace(), joined);
    env.insert(env.end(), o.env.begin(), o.env.end());
    return ChildProcess::start(o.agent, env,
                               {.cwd = joined.worktree.string(), .withhold_env = not_the_agents, .foreground = true});
  } catch (...) {
    try {
      life.close(o.slot, {.result = Outcome::fail, .session = joined.revision, .by_run = true});
    } catch (const Error& e) {
      say(o.warn, std::string("could not close slot ") + o.slot + " again: " + e.what());
    }
    throw;
  }
}

// Where the keeper starts from: the record as last written, when that
// write was sent, and what its renewals still have to write.
struct Named {
  SessionEntry entry;
  BootTime sent;
  Presence pending;
};

// The record names the agent (pid, start time), written as a renewal: the
// first of its renewals. When NATS does not answer, the keeper writes it
// with its next renewal, and the deadline is the join's (`joined_at`: sent
// before the join's write). Nullopt when the session was lost already (the
// keeper is not started then; `lost` says how).
std::optional<Named> name_agent(const SlotLifecycle& life, const JoinResult& joined, BootTime joined_at,
                                const ChildProcess& child, RunOutcome& out) {
  SessionEntry entry;
  entry.slot = joined.session.slot;
  entry.revision = joined.revision;
  entry.session = joined.session;
  const pid_t agent = child.command_pid() > 0 ? child.command_pid() : child.pid();
  Presence presence;
  presence.agent = {agent, process_start_ticks(agent).value_or(0)};
  const BootTime sent = BootClock::now();
  try {
    SessionEntry written;
    life.with_budget(life.sessions().ttl() / 3).renew(entry, std::nullopt, &out.warnings, presence, &written);
    return Named{std::move(written), sent, {}};
  } catch (const Error& e) {
    if (e.kind() == Errc::unavailable) return Named{entry, joined_at, presence};  // the keeper tries again
    out.lost = e.kind() == Errc::not_found ? SessionKeeper::Loss::evicted : SessionKeeper::Loss::taken;
    out.lost_why = e.what();
    return std::nullopt;
  }
}

// The agent is gone, the run goes on (a commit, a close) or leaves the slot
// open (--keep): the record stops naming the agent (and, for a kept slot,
// the run), so that it is not taken for dead. A failure is a warning: the
// session then looks dead until the run closes it.
void unname_agent(const SlotLifecycle& life, const SessionEntry& last, bool keep, RunOutcome& out) {
  Presence presence;
  presence.agent = {0, 0};
  if (keep) presence.leaf_start = 0;
  try {
    life.renew(last, std::nullopt, &out.warnings, presence, nullptr);
  } catch (const Error& e) {
    out.warnings.push_back(std::string("the record of slot ") + last.slot + " still names the agent that ended: " +
                           e.what());
  }
}

// The words of a fail of an agent that exited 0 with nothing committed.
constexpr const char* kNoCommit = "the agent exited 0 without a commit in this run";

// After the agent ended by itself: commit what is left (--commit, a success
// only), then close as it ended (unless --keep): a success needs a commit
// in this run, as close's artifact rule asks (unless --no-artifact).
void finish_slot(SlotLifecycle& life, const RunOptions& o, RunOutcome& out) {
  if (o.keep) return;
  // The agent's exit 0 is its word that the work is done, whether or not a
  // signal to the run asked it to end.
  Outcome outcome = out.status == 0 ? Outcome::success : Outcome::fail;
  out.result = std::string(to_string(outcome));
  try {
    if (outcome == Outcome::success && o.commit) {
      auto committed = life.commit(o.slot, *o.commit, {}, out.session);
      out.committed = committed.commit;
      for (auto& w : committed.warnings) out.warnings.push_back(std::move(w));
    }
    if (outcome == Outcome::success && !o.no_artifact && !life.committed_since_taken(o.slot)) {
      outcome = Outcome::fail;  // nothing to show for it: the task goes back to open, attempts + 1
      out.result = std::string(to_string(outcome));
      out.why = kNoCommit;
    }
    auto closed = life.close(o.slot, {.result = outcome, .no_artifact = o.no_artifact, .why = out.why,
                                      .session = out.session, .by_run = true});
    out.closed = true;
    if (closed.salvage.files > 0)
      out.warnings.push_back(std::to_string(closed.salvage.files) + " uncommitted file(s) were kept in " +
                             closed.salvage.folder.string() + " (--commit MSG commits what is left)");
    for (auto& w : closed.warnings) out.warnings.push_back(std::move(w));
  } catch (const Error& e) {
    out.failed = e;
  }
}

// The caller routes signals to the agent while it lives, and never after.
struct Routed {
  const RunOptions& o;
  explicit Routed(const RunOptions& options, ChildProcess* c) : o(options) {
    if (o.running) o.running(c);
  }
  Routed(const Routed&) = delete;
  Routed& operator=(const Routed&) = delete;
  ~Routed() {
    if (o.running) o.running(nullptr);
  }
};

}  // namespace

RunOutcome run_agent(SlotLifecycle& life, const RunOptions& o) {
  RunOutcome out;
  out.slot = o.slot;
  out.task = o.task;
  const Workspace& ws = life.workspace();
  // The slot's folder is this run's while its agent lives.
  auto run_lock = try_lock_run(ws, o.slot, "swarm run of slot " + o.slot);
  if (!run_lock)
    throw Error(Errc::conflict, "slot " + o.slot + " is busy on this host (" + run_lock_holder(ws, o.slot) +
                                    "); nothing was changed");
  const auto own_start = process_start_ticks(::getpid()).value_or(0);
  const BootTime joined_at = BootClock::now();  // before the join's write: its deadline is no earlier
  const Joiner joiner{true, own_start};
  const JoinResult joined = o.next ? life.join_next(o.slot, o.labels, o.wait, o.takeover, ::getpid(), o.base, o.ports, joiner)
                                   : life.join(o.slot, o.task, o.takeover, ::getpid(), o.base, o.ports, joiner);
  out.task = joined.session.task_id;
  out.session = joined.revision;
  out.worktree = joined.worktree;
  stop_here_for_test(kRunStop, "joined");

  std::unique_ptr<ChildProcess> child = start_agent(life, o, joined);
  std::optional<Routed> routed(std::in_place, o, child.get());
  ChildStopper stopper(*child);
  std::optional<SessionKeeper> keeper;
  std::optional<GraceWatch> grace;
  const auto ttl = life.sessions().ttl();
  // Lost: the agent goes before the session's deadline; when the record is
  // gone or another's already, within --grace of now at the latest.
  auto stop_agent = [&](SessionKeeper::Loss loss, BootTime deadline) {
    BootTime kill_at = deadline - kill_lead(ttl);
    if (loss != SessionKeeper::Loss::unreachable) kill_at = std::min(kill_at, BootClock::now() + o.grace);
    stopper.stop_by(kill_at);
  };
  if (auto named = name_agent(life, joined, joined_at, *child, out)) {
    keeper.emplace(
        life, std::move(named->entry), named->sent,
        [&](SessionKeeper::Loss loss, const std::string& why, BootTime deadline) {
          out.lost = loss;
          out.lost_why = why;
          say(o.note, "slot " + o.slot + " was lost (" + std::string(to_string(loss)) + ": " + why +
                          "): stopping its agent before the session's deadline");
          stop_agent(loss, deadline);
        },
        std::move(named->pending));
  } else {
    say(o.note, "slot " + o.slot + " was lost before its agent was named (" + out.lost_why + "): stopping it");
    stopper.stop_by(BootClock::now() + kill_lead(ttl));
  }
  grace.emplace(*child, o);
  out.status = child->wait();
  stopper.finished();
  grace.reset();
  routed.reset();
  if (keeper) keeper->stop();

  if (out.lost) {
    out.ended = "session_lost";
    // The agent is gone: the journal says why the session ended so.
    Session s = joined.session;
    s.agent_pid = child->command_pid();
    life.journal().with_budget(kLostEventBudget).record(
        session_lost_event(life.sessions().bucket_name(), s, out.session, out.session, to_string(*out.lost),
                           out.lost_why, Actor::here(life.me())));
    return out;
  }
  // How the agent ended, whoever sent a signal: one that ended it (the
  // run's --grace SIGKILL, an OOM kill) or its own exit (a forwarded
  // SIGTERM it handled and exited on, or an `exit 137` of its own).
  out.ended = child->signalled() ? "signalled" : "exited";
  if (keeper) unname_agent(life, keeper->entry(), o.keep, out);
  finish_slot(life, o, out);
  return out;
}

}  // namespace swarm
