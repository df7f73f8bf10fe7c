// SlotLifecycle::sync: the hub's onto branch brought into a slot's worktree,
// under the slot folder's lock and only for the session that owns it, as a
// commit is. A clean result is pushed and renews the record; a conflict is
// left in the worktree for the agent (resolve, then `swarm commit`).
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/git/backend.h"
#include "swarm/git/worktree.h"
#include "swarm/slots/events.h"
#include "swarm/slots/folder.h"
#include "swarm/slots/lifecycle.h"

namespace swarm {

SyncOutcome SlotLifecycle::sync(const std::string& slot, const std::string& onto, ExpectedSession session) {
  require_slot_name(slot);
  FileLock folder_lock = lock_slot(workspace_, slot, "sync of slot " + slot);
  SessionEntry entry = read_own(slot, session);
  Worktree worktree = open_worktree(slot);
  SyncOutcome out;
  auto hub = git_backend().open_hub(hub_.text);
  out.onto = onto.empty() ? hub->default_branch() : onto;
  if (!hub->branch_tip(out.onto))
    throw Error(Errc::not_found, "the hub has no branch " + out.onto + " to bring into slot " + slot + "'s worktree");
  const std::string message = "Merge " + out.onto + " into " + worktree.branch();
  out.git = worktree.sync(out.onto, with_provenance(message, *entry.session, entry.token()), author_of(*entry.session));
  const bool moved = out.git.how == "fast-forward" || out.git.how == "merge";
  try {
    if (moved || worktree.hub_lacks_branch()) {
      worktree.push();
      out.pushed = true;
    }
  } catch (const Error& e) {
    out.warnings.push_back(std::string("push failed, the sync stands locally: ") + e.what());
  }
  try {
    out.revision = renew(entry, std::nullopt, &out.warnings);
  } catch (const Error& e) {
    out.warnings.push_back(std::string("renewal failed: ") + e.what());
  }
  if (out.git.how != "up-to-date") journal_.record(sync_event(store_.bucket_name(), entry, out, Actor::here(me_)));
  return out;
}

}  // namespace swarm
