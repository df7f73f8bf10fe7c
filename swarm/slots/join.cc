// SlotLifecycle::join, step by step, as a small transaction: the record
// first (racing joins lose before touching the disk), then the task lease,
// then the worktree and the slot's crumbs. A step that fails undoes the
// steps before it, in reverse, and says what it could not undo.
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/base/warnings.h"
#include "swarm/git/worktree.h"
#include "swarm/lease/rules.h"
#include "swarm/slots/events.h"
#include "swarm/slots/folder.h"
#include "swarm/slots/lifecycle.h"
#include "swarm/slots/liveness.h"

namespace swarm {

namespace fs = std::filesystem;

namespace {

// Why a join is refused while a `swarm run` of this host keeps the slot.
std::string kept_by_run(const Workspace& workspace, const std::string& slot) {
  return "slot " + slot + " is kept by a `swarm run` of this host (" + run_lock_holder(workspace, slot) +
         ") whose agent still works in its folder; it closes the slot when its agent ends (stop it with SIGTERM, or "
         "`swarm evict --slot " + slot + "`, and join when it is gone); nothing was changed";
}

}  // namespace

Session SlotLifecycle::new_session(const std::string& slot, const std::string& task, std::int64_t leaf_pid,
                                   std::uint64_t leaf_start) const {
  Session s;
  s.leaf_start = leaf_start;
  s.slot = slot;
  s.task_id = task;
  s.agent_id = "slot-" + slot;
  s.host = me_.host;
  s.host_id = me_.host_id;
  s.leaf_pid = leaf_pid;
  s.hub_url = hub_.session_url();
  // As the record keeps it (milliseconds): the session read back is the same.
  s.started_at = std::chrono::floor<std::chrono::milliseconds>(clock_());
  s.last_renewed = s.started_at;
  return s;
}

State SlotLifecycle::require_takeover(const SessionEntry& existing, std::chrono::steady_clock::time_point arrived,
                                      Takeover takeover) const {
  const std::string& slot = existing.slot;
  if (existing.corrupt()) throw Error::corrupt_session(slot, existing.corrupt_reason);
  const Session& owner = *existing.session;
  if (!me_.owns(owner)) throw Error(Errc::foreign_host, foreign_message(slot, owner));
  auto server = store_.server_clock(clock_);
  // The age it can be sure of, timed from when the read's answer arrived: a
  // session renewed while a slow read was under way is young (adr/0023).
  // Unmeasured (no server clock), the age by this host's clock says only
  // what the message below says.
  auto age = server.measured ? certain_age(server, arrived, existing.stored_at, store_.ttl(), Steady::now())
                             : age_of(existing.stored_at, server.now());
  State state = state_of(age, store_.ttl());
  // A run of this host that is gone (by /proc) is taken over as a stale one.
  if (state != State::stale && run_is_gone(owner.leaf_pid, owner.leaf_start, owner.agent_pid, owner.agent_start))
    return State::dead;
  const bool forced = takeover == Takeover::force;
  if (state == State::stale && !server.measured && !forced)
    throw Error(Errc::conflict, "slot " + slot + " looks stale by this host's clock, but the server's clock could "
                                "not be read to be sure; take it over with --force, or try again");
  if (state != State::stale && !forced) {
    // The age status shows (the server's clock now), and why a join waits a
    // little longer than that: the clock's margin (adr/0023).
    const auto shown = std::chrono::duration_cast<std::chrono::milliseconds>(age_of(existing.stored_at, server.now()));
    const auto stale_at = store_.ttl() * 2 / 3;
    throw Error(Errc::conflict, "slot " + slot + " is held by a " + std::string(to_string(state)) +
                                    " session of this host (task " + printable(owner.task_id) + ", renewed " +
                                    format_duration(std::chrono::duration_cast<std::chrono::milliseconds>(shown)) +
                                    " ago; a join takes it over once it is surely older than " +
                                    format_duration(stale_at) + ", the clock's margin included); take it over with "
                                    "--force, or `swarm close --slot " + slot + "` first");
  }
  return state;
}

void SlotLifecycle::claim_ports(JoinResult& result, unsigned count, const std::optional<SessionEntry>& replacing,
                                JoinSteps& done) const {
  if (count == 0) return;
  Session& s = result.session;
  const auto keep = replacing ? replacing->session->port_block() : std::nullopt;
  const PortBlock block = ports_.claim(s.slot, count, *config_.ports, s.leaf_pid, keep, &done.ports_kept);
  done.ports_claimed = true;
  s.port_base = block.base;
  s.ports = block.count;
}

void SlotLifecycle::write_join_record(JoinResult& result, Takeover takeover, unsigned ports, JoinSteps& done) const {
  const std::string& slot = result.session.slot;
  auto read = read_arriving([&] { return store_.get(slot); });
  const auto& existing = read.value;
  // The slot is this join's to take (free, or a session it may replace):
  // its port block first, so that the record names it from its first write.
  const std::optional<State> state =
      existing ? std::optional<State>(require_takeover(*existing, read.at, takeover)) : std::nullopt;
  claim_ports(result, ports, existing, done);
  try {
    result.revision = store_.begin(result.session, existing ? std::optional(existing->revision) : std::nullopt);
  } catch (const Error& e) {
    // Refused for sure: the block goes back. A write whose answer was lost
    // may have landed (its record naming the block): then it is left to expire.
    if (e.kind() != Errc::conflict) throw;
    if (done.ports_claimed && !done.ports_kept) ports_.release(slot, *result.session.port_block());
    throw Error(Errc::conflict, "slot " + slot + (existing ? " changed while joining" : " was just taken by another "
                                "join") + "; see `swarm status --slot " + slot + "`");
  }
  if (!existing) return;
  result.replaced = existing;
  result.replaced_state = state;
  swarm::log::debug("slot {}: replaced a {} session of this host (revision {})", slot, to_string(*state),
                    existing->revision);
}

void SlotLifecycle::require_joinable(const std::string& slot) const {
  if (auto slots = workspace_.folder_if_exists(kSlotsFolder)) {
    const EntryKind kind = slots->kind(slot);
    if (kind == EntryKind::file || kind == EntryKind::other)
      throw Error(Errc::conflict, workspace_.slot_dir(slot).string() + " is a file where the folder of slot " + slot +
                                      " should be; move it away (swarm never removes it)");
  }
  if (has_worktree(slot)) {
    SafeDir folder = *workspace_.slot_folder(slot);
    if (folder.kind(kSalvageMarkName) != EntryKind::missing)
      throw Error(Errc::conflict, "the worktree of slot " + slot + " is half salvaged (a close or doctor --fix was "
                                  "interrupted while moving its files to .swarm/recovery/); finish it with `swarm "
                                  "doctor --fix`, then join again; nothing was changed");
    if (folder.folder(kWorktreeName).kind(".git") != EntryKind::folder)
      throw Error(Errc::conflict, "the folder " + workspace_.worktree(slot).string() + " exists but is not a git "
                                  "worktree; move it away, or salvage and remove it with `swarm doctor --fix`; "
                                  "nothing was changed");
  }
}

void SlotLifecycle::set_up_joined_slot(JoinResult& result, JoinSteps& done) const {
  const Session& s = result.session;
  task_step(done.task_refused, [&] { tasks_.claim(s.slot, s.task_id, s.leaf_pid, &done.task_kept); });
  log::phase("join: took the task's lease");
  done.task_claimed = true;
  task_step(done.task_refused, [&] { claim_queued(result, done); });
  // A new worktree starts where its task's work does (task_start); a
  // folder that is there (a takeover of a session that never closed, or
  // --force) carries that run on, as it always did.
  const WorktreeStart start = has_worktree(s.slot) ? WorktreeStart{} : task_start(s.slot, s.task_id, result.base);
  Worktree worktree = ensure_worktree(s.slot, &result.resumed_worktree, start, &result.started);
  done.resume = start;
  SafeDir folder = *workspace_.slot_folder(s.slot);
  folder.write_file(kLeafPidName, std::to_string(s.leaf_pid) + "\n");
  // A slot's run of work starts with a new worktree (or one kept by close);
  // a join that takes over a worktree its session never closed (expired,
  // stale or forced out) carries that run on, its commits included.
  if (!result.resumed_worktree || folder.kind(kSessionBaseName) == EntryKind::missing)
    folder.write_file(kSessionBaseName, worktree.branch_tip().value_or("") + "\n");
}

void SlotLifecycle::undo_join(const JoinResult& result, const JoinSteps& done) const {
  const std::string& slot = result.session.slot;
  if (!result.resumed_worktree) {
    // Made just now, or never made: nothing in it is work yet.
    try {
      if (auto folder = workspace_.slot_folder(slot)) {
        folder->remove_tree(kWorktreeName);
        folder->remove_file(kLeafPidName);
        folder->remove_file(kSessionBaseName);
      }
      remove_if_empty(workspace_, slot);
    } catch (const Error&) {
      // A folder that is not ours to clean (a link, a stranger's): left as it is.
    }
  }
  std::string left;  // what could not be undone, for the message
  undo_queued_claim(result, done);
  // A live session this join replaced (--force) is put back as it was, its
  // token kept: a join that failed must not have taken the slot from it.
  // A stale one was dead already: the slot is left free.
  const bool restore = result.replaced && result.replaced->session &&
                       (result.replaced_state == State::fresh || result.replaced_state == State::late);
  try {
    if (restore) {
      Session previous = *result.replaced->session;
      previous.session_token = result.replaced->token();
      store_.update(previous, result.revision);
    } else {
      store_.erase(slot, result.revision);
    }
  } catch (const Error& e) {
    // Expired or taken meanwhile: either way it is not ours to remove now.
    // NATS gone: the record stays, and the user must know it is there.
    if (e.kind() == Errc::unavailable)
      left = "; its record could not be removed (" + std::string(e.what()) + "): `swarm doctor --fix` removes it "
             "once NATS answers, or it expires within the TTL (" + format_duration(config_.ttl) + ")";
  }
  // A lease the claim only kept is the restored session's: it stays.
  if (done.task_claimed && !(done.task_kept && restore)) tasks_.release(slot, result.session.task_id);
  if (done.ports_claimed && !(done.ports_kept && restore)) ports_.release(slot, *result.session.port_block());
  if (left.empty()) throw;
  try {
    throw;
  } catch (const Error& e) {
    throw Error(e.kind(), e.what() + left);
  }
}

JoinResult SlotLifecycle::join(const std::string& slot, const std::string& task, Takeover takeover,
                               std::int64_t leaf_pid, const std::string& base, unsigned ports, Joiner joiner) {
  require_slot_name(slot);
  require_task_id(task);
  if (ports > 0 && !config_.ports)
    throw Error(Errc::bad_input, "--ports " + std::to_string(ports) + ": the workspace has no port range to take "
                                 "them from; give it one with `swarm up --ports A-B`");
  // Only the winner of the slot makes a worktree (and loads git); every
  // joiner checks the hub is there, cheaply.
  require_hub();
  // The slot's folder is ours alone from here: a close or doctor --fix of
  // this host removing it finishes first, and sees the record we write.
  FileLock folder_lock = lock_slot(workspace_, slot, "join of slot " + slot);
  require_kept_folders(slot);
  if (!base.empty() && has_worktree(slot))
    throw Error(Errc::conflict, "slot " + slot + " has a worktree already (" + workspace_.worktree(slot).string() +
                                    "), so --base has nothing to start; close the slot first, then join with --base");
  // What would refuse the join half way is asked first, by reads alone: a
  // refused join (forced or not) leaves the live session, its task lease
  // and its worktree as they were.
  require_joinable(slot);
  task_step(joiner.task_refused, [&] {
    release_dead_claim(slot, task);
    tasks_.require_claimable(slot, task);
    require_queued_claimable(slot, task, joiner);
  });
  log::phase("join: checked the slot's folder and its task's lease");
  // A live `swarm run` holds its slot's folder for its agent: never taken
  // from under it, forced or not (its own join holds the lock already).
  // Asked after the record: another host's session is exit 5 first.
  std::optional<FileLock> run_lock;
  if (!joiner.run) {
    run_lock = try_lock_run(workspace_, slot, "join of slot " + slot);
    if (!run_lock)
      if (auto existing = store_.get(slot); existing && !existing->corrupt() && !me_.owns(*existing->session))
        throw Error(Errc::foreign_host, foreign_message(slot, *existing->session));
    if (!run_lock) throw Error(Errc::conflict, kept_by_run(workspace_, slot));
  }
  if (ports > 0) {
    // The block of the session a join may replace is kept (same size) or
    // let go: it is no obstacle.
    std::optional<PortBlock> keep;
    if (auto existing = store_.get(slot); existing && !existing->corrupt() && me_.owns(*existing->session))
      keep = existing->session->port_block();
    ports_.require_room(slot, ports, *config_.ports, keep);
  }
  JoinResult result;
  result.base = base;
  result.session = new_session(slot, task, leaf_pid, joiner.leaf_start);
  JoinSteps done;
  done.task_refused = joiner.task_refused;
  done.queued_only = joiner.queued_only;
  done.labels = &joiner.labels;
  write_join_record(result, takeover, ports, done);
  log::phase("join: wrote the session record");
  // The record is ours: now the task's lease, then the worktree. If either
  // fails, undo the record (and the leases), and the worktree too when it was
  // made just now (it holds no work yet).
  try {
    set_up_joined_slot(result, done);
  } catch (...) {
    undo_join(result, done);
  }
  log::phase("join: made the worktree");
  // A rejoin for another task (or another size of port block) lets the old
  // one go, once nothing can fail the join (a failed one restores the
  // session it replaced, with its leases).
  if (result.replaced && result.replaced->session->task_id != result.session.task_id)
    if (auto w = tasks_.release(slot, result.replaced->session->task_id); !w.empty()) warn(w);
  if (auto old = result.replaced ? result.replaced->session->port_block() : std::nullopt;
      old && old != result.session.port_block())
    if (auto w = ports_.release(slot, *old); !w.empty()) warn(w);
  // The replaced session's holds were its own: the new one holds nothing yet.
  if (result.replaced && result.replaced->session)
    for (const auto& w : holds_.release_all(slot, result.replaced->token(), result.replaced->session->holds)) warn(w);
  forget_resumed(result, done.resume);
  result.worktree = fs::weakly_canonical(workspace_.worktree(slot));
  journal_.record(join_event(store_.bucket_name(), result, result.replaced_state));
  log::phase("join: journaled");
  return result;
}

}  // namespace swarm
