// The lanes as Landing reads them: each slot branch's close, its task, the
// queue in landing order, and what a commit overlaps.
#include "swarm/landing/landing.h"

#include <signal.h>

#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <cctype>
#include <map>

#include "swarm/base/boot_clock.h"
#include "swarm/base/error.h"
#include "swarm/base/file_lock.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/base/safe_dir.h"
#include "swarm/base/text.h"
#include "swarm/git/hub.h"
#include "swarm/git/worktree.h"
#include "swarm/holds/hold_store.h"
#include "swarm/landing/check.h"
#include "swarm/landing/events.h"
#include "swarm/landing/land_hold.h"
#include "swarm/lease/lease_keeper.h"
#include "swarm/lease/mutex.h"
#include "swarm/slots/events.h"
#include "swarm/tasks/task_rules.h"

namespace swarm {

std::optional<Event> Landing::last_close(const std::string& slot) const {
  JournalQuery query;
  query.thing = Thing::slot;
  query.name = slot;
  query.buckets = {store_.bucket_name()};
  query.kinds = {"close"};
  query.last = 1;
  auto events = journal_.read(query);
  if (events.empty()) return std::nullopt;
  return std::move(events.back());
}

std::optional<Event> Landing::close_of(const std::string& lane, const std::string& tip) const {
  if (!is_parked_lane(lane)) return last_close(lane);
  // A parked head is one its slot closed as done, a few tasks ago at most.
  constexpr std::size_t kClosesRead = 64;
  JournalQuery query;
  query.thing = Thing::slot;
  query.name = lane_slot(lane);
  query.buckets = {store_.bucket_name()};
  query.kinds = {"close"};
  query.last = kClosesRead;
  auto events = journal_.read(query);
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    const cJSON* head = cJSON_GetObjectItemCaseSensitive(it->detail.get(), "head");
    if (cJSON_IsString(head) && tip == head->valuestring) return std::move(*it);
  }
  return std::nullopt;
}

std::string Landing::task_branch(const std::string& slot, const std::string& id) const {
  const std::string parked = parked_branch(slot, id);
  if (Hub::open(hub_).branch_tip(parked)) return parked;
  return "swarm/" + slot;
}

std::string Landing::closed_task_of(const std::string& lane) const {
  if (is_parked_lane(lane)) {
    const auto tip = Hub::open(hub_).branch_tip("swarm/" + lane);
    const auto close = tip ? close_of(lane, *tip) : std::nullopt;
    return close ? close->task_id : "";
  }
  const auto close = last_close(lane);
  return close ? close->task_id : "";
}

std::string Landing::task_of(const std::string& slot) const {
  if (is_parked_lane(slot)) return closed_task_of(slot);
  JournalQuery query;
  query.thing = Thing::slot;
  query.name = slot;
  query.buckets = {store_.bucket_name()};
  query.kinds = {"close", "join"};
  query.last = 1;
  auto events = journal_.read(query);
  return events.empty() ? "" : events.back().task_id;
}

Branches Landing::branches(const std::string& onto, bool foresee) {
  Branches out;
  out.onto = onto;
  git().refresh();
  if (!git().tip(onto)) throw Error(Errc::not_found, "the hub has no branch " + onto + " to compare the slots with");
  auto infos = git().slot_branches(onto);
  // Live sessions, aged on the server's clock.
  std::map<std::string, State> states;
  const auto ttl = store_.ttl();
  const ServerClock clock = store_.server_clock();
  const TimePoint now = clock.now();
  const auto margin = observer_margin(ttl, clock.uncertainty);
  for (const auto& entry : store_.list())
    states[entry.slot] = entry.corrupt() ? State::corrupt : observed_state(age_of(entry.stored_at, now), ttl, margin);
  // Each slot's last close: its last event when that is one, else read back for it.
  std::map<std::string, Event> closes;
  for (auto& e : journal_.last_each(Thing::slot, store_.bucket_name()))
    if (e.kind == "close") closes.emplace(e.name, std::move(e));
  for (auto& info : infos) {
    BranchRow row;
    const bool parked = is_parked_lane(info.slot);
    if (auto it = states.find(info.slot); it != states.end() && !parked) row.state = it->second;
    auto close = parked ? closes.end() : closes.find(info.slot);
    if (close == closes.end())
      if (auto found = close_of(info.slot, info.head)) close = closes.insert_or_assign(info.slot, std::move(*found)).first;
    if (close != closes.end()) {
      if (const cJSON* r = cJSON_GetObjectItemCaseSensitive(close->second.detail.get(), "result");
          cJSON_IsString(r))
        row.result = r->valuestring;
      row.task_id = close->second.task_id;
      row.closed_seq = close->second.seq;
      if (const cJSON* h = cJSON_GetObjectItemCaseSensitive(close->second.detail.get(), "head"); cJSON_IsString(h))
        row.closed_head = h->valuestring;
      const cJSON* lane = cJSON_GetObjectItemCaseSensitive(close->second.detail.get(), "priority");
      row.priority_high = cJSON_IsString(lane) && std::string_view(lane->valuestring) == "high";
    }
    row.git = std::move(info);
    // What a land would take (closed as done, unlanded, no live session):
    // whether a check's refusal stands against it.
    if (row.result == "success" && !row.git.landed && !row.state) row.refused = refusal_of(row.git.slot, row.git.head);
    if (!row.task_id.empty()) row.task = queued(row.task_id);
    if (row.task && row.task->slot == lane_slot(row.git.slot)) row.review = review_word(*row.task, row.git.head);
    out.rows.push_back(std::move(row));
  }
  std::sort(out.rows.begin(), out.rows.end(), [](const BranchRow& a, const BranchRow& b) { return a.git.slot < b.git.slot; });
  if (foresee) {
    std::vector<std::string> unlanded;
    for (const auto& row : out.rows)
      if (!row.git.landed) unlanded.push_back("swarm/" + row.git.slot);
    auto seen = git().foresee(onto, unlanded, "");
    std::map<std::string, std::vector<Overlap>> by_branch;
    for (auto& f : seen) by_branch[f.branch] = std::move(f.overlaps);
    for (auto& row : out.rows)
      if (auto it = by_branch.find("swarm/" + row.git.slot); it != by_branch.end()) row.conflicts = std::move(it->second);
  }
  return out;
}

std::string Landing::lane_of_task(const std::string& onto, const std::string& id) {
  const BranchRow* found = nullptr;
  const auto report = branches(onto, false);
  for (const auto& row : report.rows)
    if (row.task_id == id && !row.git.landed && row.closed_head == row.git.head &&
        (found == nullptr || row.closed_seq > found->closed_seq))
      found = &row;
  if (found == nullptr)
    throw Error(Errc::not_found, "no unlanded branch on the hub holds the head task " + printable(id) +
                                     " was closed at; see `swarm branches` (a task lands once its slot closed it)");
  return found->git.slot;
}

std::vector<Overlap> Landing::commit_overlaps(const std::string& slot, const std::string& onto, std::uint64_t token,
                                              const std::string& task, std::uint64_t revision) {
  const auto started = std::chrono::steady_clock::now();
  git().refresh();
  const std::string mine = "swarm/" + slot;
  std::vector<std::string> unlanded;
  for (const auto& info : git().slot_branches(onto))
    if (!info.landed) unlanded.push_back("swarm/" + info.slot);
  if (std::find(unlanded.begin(), unlanded.end(), mine) == unlanded.end()) return {};
  auto seen = git().foresee(onto, unlanded, mine);
  swarm::log::info("foreseen: {} against {} other unlanded branches and {} in {} ms", mine, unlanded.size() - 1, onto,
                   std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started)
                       .count());
  if (seen.empty()) return {};
  for (const auto& overlap : seen.front().overlaps)
    journal_.record(overlap_event(store_.bucket_name(), slot, overlap, task, token, revision, Actor::here(me_)));
  return std::move(seen.front().overlaps);
}

std::vector<BranchRow> Landing::ready(const std::string& onto, std::vector<BranchRow>* unreviewed) {
  std::vector<BranchRow> out;
  for (auto& row : branches(onto, false).rows) {
    // Landed, and its task not moved (the lander killed between its push
    // and the task's write): completed now, as a land of it would.
    if (row.git.landed && row.task && row.task->slot == lane_slot(row.git.slot) && row.task->head == row.git.head &&
        (row.task->state() == TaskState::approved || row.task->state() == TaskState::in_review)) {
      LandResult landed;
      landed.outcome = LandResult::Outcome::already_landed;
      landed.slot = row.git.slot;
      landed.onto = onto;
      landed.head = row.git.head;
      move_task(landed, row.task->id);
    }
    if (row.result != "success" || row.git.landed || row.state) continue;
    // Its branch moved past that close (the slot took up another task): what
    // is there now was never said to be done.
    if (!row.closed_head.empty() && row.closed_head != row.git.head) continue;
    if (!review_required_ || (row.task && approved_at(*row.task, row.git.head))) out.push_back(std::move(row));
    else if (unreviewed != nullptr) unreviewed->push_back(std::move(row));
  }
  std::sort(out.begin(), out.end(), [](const BranchRow& a, const BranchRow& b) {
    if (a.priority_high != b.priority_high) return a.priority_high;
    return a.closed_seq < b.closed_seq;
  });
  return out;
}

}  // namespace swarm
