#include "swarm/slots/task_lease.h"

#include "swarm/base/error.h"
#include "swarm/base/log.h"

namespace swarm {

namespace {

std::string held_message(const std::string& task, const LeaseRecord& r) {
  return "task " + task + " is being worked by slot " + (r.slot.empty() ? r.holder : r.slot) + " (host " + r.host +
         "); take another task, or `swarm close --slot " + (r.slot.empty() ? r.holder : r.slot) + "` first";
}

}  // namespace

std::optional<LeaseEntry> TaskLeases::read(const std::string& task) const { return store_.get(task_lease_name(task)); }

bool TaskLeases::held_by(const LeaseEntry& entry, const std::string& slot, const std::string& task) {
  return !entry.corrupt() && entry.record->slot == slot && entry.record->task == task;
}

namespace {

// Throws why `slot` may not claim `task` over `last` (read at `arrived`);
// returns when it may: free, expired, or this slot's own claim (`own`).
void check_claim(const ServerClock& clock, const std::string& slot, const std::string& task, const std::string& name,
                 const LastWrite& last, Steady::time_point arrived, bool* own) {
  *own = false;
  if (last.revision == 0 || last.released) return;
  if (!last.record) throw Error::corrupt_lease(name, "the lease of task " + task + ": " + last.corrupt_reason);
  const LeaseRecord& r = *last.record;
  if (r.slot == slot && r.task == task) {
    *own = true;
    return;
  }
  if (r.task != task && !r.task.empty())
    throw Error(Errc::conflict, "task " + task + " and task " + r.task + " share the lease name " + name +
                                    " (a hash collision); give one of them another id");
  // Another slot's claim: taken over only when it certainly expired, timed
  // from when the read's answer arrived.
  if (!certainly_expired(clock, arrived, last.stored_at, r.ttl, Steady::now()))
    throw Error(Errc::conflict, held_message(task, r));
}

}  // namespace

void TaskLeases::require_claimable(const std::string& slot, const std::string& task) const {
  const std::string name = task_lease_name(task);
  auto read = read_arriving([&] { return store_.last(name); });
  bool own = false;
  check_claim(store_.server_clock(), slot, task, name, read.value, read.at, &own);
}

Lease TaskLeases::claim(const std::string& slot, const std::string& task, std::int64_t pid, bool* kept_out) const {
  const std::string name = task_lease_name(task);
  LeaseHolder who = LeaseHolder::process(me_, pid, slot);
  who.slot = slot;
  who.task = task;
  auto read = read_arriving([&] { return store_.last(name); });
  const LastWrite& last = read.value;
  bool own = false;
  check_claim(store_.server_clock(), slot, task, name, last, read.at, &own);
  if (kept_out != nullptr) *kept_out = own;
  if (own) {
    // This slot's own claim (a stale takeover, a --force rejoin): kept,
    // with its token, for the new session.
    return store_.renew(kept_grant(name, *last.record, last.revision, who, ttl_));
  }
  try {
    return store_.grant(name, who, ttl_, last);
  } catch (const Error& e) {
    if (e.kind() != Errc::conflict) throw;
    // Another join took it between our read and our write.
    if (auto now = store_.get(name); now && !now->corrupt())
      throw Error(Errc::conflict, held_message(task, *now->record));
    throw;
  }
}

kv::Bucket::Write TaskLeases::renewal(const LeaseEntry& held, std::chrono::milliseconds ttl) const {
  return store_.renewal_of(held, ttl);
}

std::string TaskLeases::reclaim(const std::string& slot, const std::string& task, std::int64_t pid) const {
  try {
    claim(slot, task, pid);
    return {};
  } catch (const Error& e) {
    return std::string("the task lease could not be kept: ") + e.what();
  }
}

std::string TaskLeases::release(const std::string& slot, const std::string& task) const {
  if (task.empty()) return {};
  try {
    auto entry = read(task);
    if (!entry || !held_by(*entry, slot, task)) return {};
    store_.release(entry->name, entry->token());
    return {};
  } catch (const Error& e) {
    return "the lease of task " + task + " was not released (it expires by itself): " + e.what();
  }
}

}  // namespace swarm
