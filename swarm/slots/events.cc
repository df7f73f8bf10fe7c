#include "swarm/slots/events.h"

namespace swarm {

Event join_event(std::string_view bucket, const JoinResult& join, std::optional<State> replaced_state) {
  const Session& s = join.session;
  Event e = slot_event("join", bucket, s.slot, {s.host, s.host_id, s.leaf_pid}, s.task_id, join.revision,
                       join.revision);
  if (join.replaced && join.replaced->session) {
    const Session& old = *join.replaced->session;
    e.detail.set("replaced", replaced_state == State::stale ? "stale" : replaced_state == State::dead ? "dead" : "force")
        .set("replaced_token", join.replaced->token())
        .set("replaced_host", old.host)
        .set("replaced_task_id", old.task_id);
  } else {
    e.detail.set_null("replaced");
  }
  e.detail.set("resumed_worktree", join.resumed_worktree);
  return e;
}

Event commit_event(std::string_view bucket, const SessionEntry& entry, const CommitResult& commit,
                   const Actor& actor) {
  Event e = slot_event("commit", bucket, entry.slot, actor, entry.session ? entry.session->task_id : "",
                       entry.token(), commit.revision != 0 ? commit.revision : entry.revision);
  if (commit.commit) e.detail.set("head", *commit.commit);
  else e.detail.set_null("head");
  e.detail.set("pushed", commit.pushed).set("branch", commit.branch).set("renewed", commit.revision != 0);
  return e;
}

Event hold_conflict_event(std::string_view bucket, std::string_view slot, std::string_view task_id,
                          std::uint64_t token, std::uint64_t revision, std::string_view act,
                          const std::vector<HeldPath>& held, std::string_view policy, const Actor& actor) {
  Event e = slot_event("hold.conflict", bucket, slot, actor, task_id, token, revision);
  std::vector<std::string> paths;
  Json holds = Json::array();
  for (const auto& h : held) {
    paths.push_back(h.path);
    Json one = Json::object();
    one.set("path", h.path).set("hold", h.hold).set("slot", h.slot).set("host", h.host).set("token", h.token);
    holds.push(std::move(one));
  }
  e.detail.set("act", act).set("policy", policy).set("paths", Json::strings(paths)).set("holds", std::move(holds));
  return e;
}

Event sync_event(std::string_view bucket, const SessionEntry& entry, const SyncOutcome& sync, const Actor& actor) {
  Event e = slot_event("sync", bucket, entry.slot, actor, entry.session ? entry.session->task_id : "", entry.token(),
                       sync.revision != 0 ? sync.revision : entry.revision);
  e.detail.set("onto", sync.onto).set("how", sync.git.how).set("head", sync.git.to).set("pushed", sync.pushed);
  if (!sync.git.conflicts.empty()) e.detail.set("paths", Json::strings(sync.git.conflicts));
  return e;
}

Event close_event(std::string_view bucket, const std::string& slot, const CloseResult& result, Outcome outcome,
                  const std::optional<std::string>& head, const Actor& actor, bool priority_high,
                  const std::string& why) {
  const SessionEntry* released = result.released ? &*result.released : nullptr;
  Event e = slot_event("close", bucket, slot, actor,
                       released && released->session ? released->session->task_id : "",
                       released ? released->token() : 0, released ? released->revision : 0);
  e.detail.set("result", to_string(outcome));
  if (!why.empty()) e.detail.set("why", why);
  if (priority_high) e.detail.set("priority", "high");
  if (head) e.detail.set("head", *head);
  else e.detail.set_null("head");
  e.detail.set("salvaged", static_cast<std::int64_t>(result.salvage.files));
  if (!result.salvage.folder.empty()) e.detail.set("recovery", result.salvage.folder.string());
  else e.detail.set_null("recovery");
  if (!result.salvage.commits_ref.empty()) e.detail.set("recovery_ref", result.salvage.commits_ref);
  e.detail.set("removed_worktree", result.removed_worktree);
  return e;
}

Event evict_event(std::string_view bucket, const SessionEntry& removed, const Actor& actor) {
  const Session* s = removed.session ? &*removed.session : nullptr;
  Event e = slot_event("evict", bucket, removed.slot, actor, s ? s->task_id : "", removed.token(), removed.revision);
  Json what = Json::object();
  what.set("host", s ? s->host : "").set("host_id", s ? s->host_id : "").set("corrupt", removed.corrupt());
  e.detail.set("removed", std::move(what));
  return e;
}

Event session_expired_event(std::string_view bucket, const SessionEntry& ended, std::uint64_t marker_revision,
                            TimePoint at, const HostIdentity& seen_by) {
  const Session* s = ended.session ? &*ended.session : nullptr;
  // The actor is the session's own host: whose session ended.
  Actor owner;
  if (s) owner = {s->host, s->host_id, s->leaf_pid};
  Event e = slot_event("session.expired", bucket, ended.slot, owner, s ? s->task_id : "", ended.token(),
                       marker_revision);
  e.detail.set("expired_at", format_rfc3339(at))
      .set("last_renewed_revision", static_cast<std::int64_t>(ended.revision))
      .set("seen_by", seen_by.host);
  return e;
}

Event session_lost_event(std::string_view bucket, const Session& session, std::uint64_t token,
                         std::uint64_t revision, std::string_view reason, std::string_view why, const Actor& actor) {
  Event e = slot_event("session.lost", bucket, session.slot, actor, session.task_id, token, revision);
  e.detail.set("reason", reason).set("why", why).set("agent_pid", static_cast<std::int64_t>(session.agent_pid));
  return e;
}

}  // namespace swarm
