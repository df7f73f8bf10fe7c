// One task's work per branch (adr/0050): a slot that takes up another task
// than the one its branch holds starts it from the onto branch's tip (or
// from that task's own parked head, for rework), and the work it leaves is
// kept: a task closed as done under swarm/<slot>.<key>, where it stays
// reviewable and landable by itself; anything else under refs/recovery/.
#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/text.h"
#include "swarm/base/warnings.h"
#include "swarm/git/backend.h"
#include "swarm/slots/lifecycle.h"
#include "swarm/slots/recovery.h"

namespace swarm {

namespace {

// What the slot's branch holds, as the journal says: the task of its last
// join or close, and, when that was a close of success, the head it closed.
struct HeldTask {
  std::string task;
  std::string closed_head;  // "" unless closed success
};

std::optional<HeldTask> held_task(const Journal& journal, const std::string& bucket, const std::string& slot) {
  JournalQuery query;
  query.thing = Thing::slot;
  query.name = slot;
  query.buckets = {bucket};
  query.kinds = {"join", "close"};
  query.last = 1;
  std::vector<Event> last;
  try {
    last = journal.read(query);
  } catch (const Error& e) {
    warn("the journal could not be read to tell which task slot " + slot + "'s branch holds (" + e.what() +
         "); its branch is taken up as it is");
    return std::nullopt;
  }
  if (last.empty() || last.back().task_id.empty()) return std::nullopt;
  HeldTask held{last.back().task_id, ""};
  const Event& e = last.back();
  const cJSON* result = cJSON_GetObjectItemCaseSensitive(e.detail.get(), "result");
  const cJSON* head = cJSON_GetObjectItemCaseSensitive(e.detail.get(), "head");
  if (e.kind == "close" && cJSON_IsString(result) && std::string_view(result->valuestring) == "success" &&
      cJSON_IsString(head))
    held.closed_head = head->valuestring;
  return held;
}

}  // namespace

WorktreeStart SlotLifecycle::task_start(const std::string& slot, const std::string& task,
                                        const std::string& base) const {
  WorktreeStart start{.base = base, .recovery_prefix = "refs/recovery/" + recovery_name(slot, clock_())};
  if (!base.empty()) return start;  // --base says where, and keeps what it replaces
  const auto held = held_task(journal_, store_.bucket_name(), slot);
  if (!held || held->task == task) return start;  // the same task's work goes on
  start.other_task = true;
  start.park_as = parked_branch(slot, held->task);
  start.park_if_at = held->closed_head;
  start.resume = parked_branch(slot, task);
  log::phase("join: slot's branch holds task " + printable(held->task) + ", not this one");
  return start;
}

void SlotLifecycle::forget_resumed(const JoinResult& result, const WorktreeStart& start) const {
  if (result.started.from != "parked" || result.started.resumed_id.empty()) return;
  // The slot's branch is that head now: its parked copy would be a second
  // row of one task. Removed only while it is still that commit.
  try {
    git_backend().delete_refs(hub_.text, {{"refs/heads/" + start.resume, result.started.resumed_id}});
  } catch (const Error& e) {
    warn("the parked branch " + start.resume + " was taken up, and could not be removed (" + e.what() +
         "); `swarm branches` shows it until it is");
  }
}

}  // namespace swarm
