// Doctor's checks of the session records, the slot folders and the slots'
// branches: what the bucket and .swarm/slots/ hold, compared.
#include <algorithm>

#include "swarm/base/duration.h"
#include "swarm/base/names.h"
#include "swarm/doctor/checks.h"

#include "swarm/base/text.h"
#include "swarm/git/worktree.h"
#include "swarm/slots/liveness.h"

namespace swarm::doctor {

namespace fs = std::filesystem;

SessionListing list_sessions(const SessionStore& store, std::chrono::milliseconds ttl, const Here& here,
                             const Clock& clock) {
  SessionListing out;
  out.all.reserve(static_cast<std::size_t>(store.size_hint()));
  // No records, no ages to judge: no need for the server's clock. Read
  // here, not in the visit (a big listing's visits run on its parser thread).
  if (store.size_hint() > 0) out.server = store.server_clock(clock);
  store.for_each([&](SessionEntry&& entry) {
    if (!out.server) out.server = store.server_clock(clock);  // records came to an empty bucket (a small listing)
    out.all.push_back({entry.slot, entry.corrupt() ? std::string() : entry.session->task_id, entry.revision,
                       entry.corrupt(), here.has_record_here(entry),
                       entry.corrupt() ? std::nullopt : entry.session->port_block(),
                       entry.corrupt() ? 0 : entry.token(),
                       entry.corrupt() ? std::vector<std::string>{} : entry.session->holds});
    const bool notable = entry.corrupt() || here.me.owns(*entry.session) ||
                         state_of(age_of(entry.stored_at, out.server->now()), ttl) != State::fresh;
    if (notable) out.notable.push_back(std::move(entry));
  });
  // A session renewed while the pass ran may have come twice: only its
  // newest revision counts, in both lists.
  auto slot_of = [](const auto& e) -> const std::string& { return e.slot; };
  auto revision_of = [](const auto& e) { return e.revision; };
  const auto newest = kv::newest_repeats(out.all, store.revision_at_open(), slot_of, revision_of);
  kv::drop_older(out.all, newest, slot_of, revision_of);
  kv::drop_older(out.notable, newest, slot_of, revision_of);
  std::sort(out.all.begin(), out.all.end(),
            [](const SessionBrief& a, const SessionBrief& b) { return a.slot < b.slot; });
  return out;
}

const SessionBrief* find_brief(const std::vector<SessionBrief>& all, const std::string& slot) {
  auto it = std::lower_bound(all.begin(), all.end(), slot,
                             [](const SessionBrief& b, const std::string& s) { return b.slot < s; });
  return it != all.end() && it->slot == slot ? &*it : nullptr;
}

namespace {

std::string whose(const HostIdentity& me, const Session& s) {
  return me.owns(s) ? "this host's session" : "host " + s.host + "'s session";
}

Finding corrupt_record(const SessionEntry& entry) {
  const std::string& slot = entry.slot;
  return make_finding(Severity::problem, FindingKind::corrupt_record, slot,
                      "the record of slot " + slot + " is corrupt (" + entry.corrupt_reason + ")",
                      is_valid_slot_name(slot) ? "swarm doctor --fix   (or: swarm evict --slot " + slot + ")"
                                               : "swarm doctor --fix");
}

Finding other_workspace_session(const SessionEntry& entry) {
  return make_finding(Severity::notice, FindingKind::other_workspace, entry.slot,
                      "slot " + entry.slot + ": a session of this host in another workspace (hub " +
                          entry.session->hub_url + ") uses this bucket, so its slot names and this workspace's collide",
                      "give each workspace its own bucket: swarm up --bucket NAME");
}

Finding stale_session(const HostIdentity& me, const SessionEntry& entry, std::chrono::milliseconds age,
                      std::chrono::milliseconds ttl) {
  const std::string& slot = entry.slot;
  const Session& s = *entry.session;
  return make_finding(Severity::problem, FindingKind::stale_session, slot,
                      "slot " + slot + ": " + whose(me, s) + " (task " + s.task_id + ") was last renewed " + ago(age) +
                          "; the server drops it at " + format_duration(ttl),
                      me.owns(s) ? "swarm doctor --fix   (or: swarm close --slot " + slot + " --result fail)"
                                 : "on " + s.host + ": swarm doctor --fix   (or here: swarm evict --slot " + slot + ")");
}

Finding dead_session(const SessionEntry& entry) {
  const std::string& slot = entry.slot;
  const Session& s = *entry.session;
  return make_finding(Severity::problem, FindingKind::dead_session, slot,
                      "slot " + slot + ": this host's session (task " + s.task_id + ") was kept by `swarm run` (pid " +
                          std::to_string(s.leaf_pid) + ", agent pid " + std::to_string(s.agent_pid) +
                          "), which is gone: nobody renews it or works in its folder",
                      "swarm doctor --fix   (salvages and removes it; or: swarm join --slot " + slot +
                          " --task " + shell_word(s.task_id) + " takes it over)");
}

Finding missing_folder(const Workspace& ws, const SessionEntry& entry) {
  const std::string& slot = entry.slot;
  return make_finding(Severity::problem, FindingKind::missing_folder, slot,
                      "slot " + slot + ": this host's session (task " + entry.session->task_id + ") has no folder " +
                          ws.slot_dir(slot).string(),
                      "swarm doctor --fix   (or: swarm close --slot " + slot + " --no-artifact)");
}

Finding missing_worktree(const Workspace& ws, const SessionEntry& entry) {
  const std::string& slot = entry.slot;
  return make_finding(Severity::problem, FindingKind::missing_worktree, slot,
                      "slot " + slot + ": this host's live session (task " + entry.session->task_id +
                          ") has no worktree at " + ws.worktree(slot).string() +
                          " (removed?): its agent can neither commit nor close as it is; what it pushed is on the hub",
                      "swarm join --slot " + slot + " --task " + shell_word(entry.session->task_id) +
                          " --force   (a new clone of swarm/" + slot + ", same session's slot)");
}

Finding late_session(const HostIdentity& me, const SessionEntry& entry, std::chrono::milliseconds age,
                     std::chrono::milliseconds ttl) {
  const Session& s = *entry.session;
  return make_finding(Severity::notice, FindingKind::late_session, entry.slot,
                      "slot " + entry.slot + ": " + whose(me, s) + " (task " + s.task_id + ") was last renewed " +
                          ago(age) + ", past a third of the TTL (" + format_duration(ttl) + ")",
                      me.owns(s) ? "swarm renew --slot " + entry.slot
                                 : "on " + s.host + ": swarm renew --slot " + entry.slot);
}

// The finding one notable record makes, if any.
std::optional<Finding> record_finding(const RecordsInput& in, const SessionEntry& entry, TimePoint server_now) {
  if (entry.corrupt()) return corrupt_record(entry);
  const Session& s = *entry.session;
  if (in.here.other_workspace(s)) return other_workspace_session(entry);
  const HostIdentity& me = in.here.me;
  auto age = age_of(entry.stored_at, server_now);
  State state = observed_state(age, in.ttl, in.margin);
  if (state == State::stale) return stale_session(me, entry, age, in.ttl);
  if (me.owns(s) && run_is_gone(s.leaf_pid, s.leaf_start, s.agent_pid, s.agent_start)) return dead_session(entry);
  if (me.owns(s) && !in.has_folder(entry.slot)) return missing_folder(in.ws, entry);
  if (me.owns(s) && in.has_worktree && !in.has_worktree(entry.slot)) return missing_worktree(in.ws, entry);
  if (state == State::late) return late_session(me, entry, age, in.ttl);
  return std::nullopt;
}

}  // namespace

Findings check_records(const RecordsInput& in) {
  if (in.notable.empty()) return {};
  const TimePoint server_now = in.server_now();
  Findings out;
  for (const auto& entry : in.notable)
    if (auto f = record_finding(in, entry, server_now)) out.push_back(std::move(*f));
  return out;
}

std::vector<SlotEntry> list_slot_entries(const Workspace& ws) {
  std::optional<SafeDir> slots = kept_folder(ws, kSlotsFolder);
  if (!slots) return {};
  std::vector<std::string> names = slots->list();
  std::sort(names.begin(), names.end());
  std::vector<SlotEntry> out;
  for (auto& name : names) {
    const EntryKind kind = slots->kind(name);
    out.push_back({std::move(name), kind});
  }
  return out;
}

// Slot folders whose record is gone (the session expired, its agent died),
// and anything in .swarm/slots/ that is no slot folder.
Findings check_folders(const FolderInput& in) {
  Findings out;
  const fs::path slots = in.ws.slots_dir();
  for (const auto& entry : in.entries) {
    const std::string& name = entry.name;
    if (in.unsafe.count(slots / name) > 0) continue;  // reported already, never touched
    const SessionBrief* record = find_brief(in.all, name);
    if (!is_valid_slot_name(name) || entry.kind != EntryKind::folder) {
      const fs::path path = slots / name;
      out.push_back(make_finding(Severity::notice, FindingKind::stray_entry, path.string(),
                                 path.string() + " is not a slot folder (only folders named like slots are): swarm "
                                 "never removes it",
                                 "move it out of " + slots.string()));
    } else if (record == nullptr || !record->here) {
      out.push_back(make_finding(Severity::problem, FindingKind::orphan_folder, name,
                                 "slot folder " + in.ws.slot_dir(name).string() + " has no record: its session expired "
                                 "(the agent died or stopped renewing)",
                                 "swarm doctor --fix   (salvages uncommitted files, removes the folder; or resume "
                                 "it: swarm join --slot " + name + " --task ...)"));
    }
  }
  return out;
}

namespace {

// Whether the slot's worktree is a real folder with a .git in it.
bool has_git_worktree(const Workspace& ws, const std::string& slot) {
  try {
    auto folder = ws.slot_folder(slot);
    auto wt = folder ? folder->folder_if_exists(kWorktreeName) : std::nullopt;
    return wt && wt->kind(".git") != EntryKind::missing;
  } catch (const Error& e) {
    if (e.kind() != Errc::bad_input) throw;
    return false;
  }
}

}  // namespace

std::vector<BranchTip> branch_tips(const Workspace& ws, const HubProbe& hub, const Here& here,
                                   const std::vector<SessionEntry>& notable) {
  std::vector<BranchTip> out;
  if (!hub.hub) return out;
  for (const auto& entry : notable) {
    if (entry.corrupt() || !here.me.owns(*entry.session) || here.other_workspace(*entry.session)) continue;
    if (!has_git_worktree(ws, entry.slot)) continue;
    std::optional<Worktree> worktree;
    try {
      worktree.emplace(Worktree::open(ws.worktree(entry.slot), entry.slot, hub.where));
    } catch (const Error&) {
      continue;  // an unreadable worktree: check_folders has its say
    }
    auto local = worktree->branch_tip();
    auto on_hub = hub.hub->branch_tip("swarm/" + entry.slot);
    if (!local || local == on_hub) continue;
    // Read only when it matters: a branch the hub lacks.
    const bool beyond = !on_hub && worktree->has_commits_beyond_default();
    out.push_back({entry.slot, *local, on_hub, beyond});
  }
  return out;
}

// This host's slots whose last commit is not on the hub (a push failed or
// was never made): a notice, since the commit is safe here and close
// salvages it, but other hosts do not see it.
Findings check_unpushed_branches(const FolderInput& in) {
  Findings out;
  for (const auto& tip : in.tips) {
    // A branch that never moved from where the slot began has nothing to push.
    if (!tip.on_hub && !tip.beyond_default) continue;
    const std::string branch = "swarm/" + tip.slot;
    out.push_back(make_finding(
        Severity::notice, FindingKind::unpushed_branch, tip.slot,
        "slot " + tip.slot + ": its last commit " + tip.local.substr(0, 12) + " is not on the hub (the hub's " +
            branch + (tip.on_hub ? " is at " + tip.on_hub->substr(0, 12) : std::string(" is missing")) +
            "): a push failed or has not happened, so other hosts do not see it",
        "swarm commit --slot " + tip.slot + " -m MSG   (pushes " + branch + " again, with or without new changes)"));
  }
  return out;
}

}  // namespace swarm::doctor
