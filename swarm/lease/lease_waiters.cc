// Who waits in line for a lease: the places (_wait.<name>.<id>) still live, by
// their writer's pid or by the beat beside them, and a waiter's place in line.
#include "swarm/lease/lease.h"

#include <algorithm>
#include <cstdio>

#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/base/process_info.h"
#include "swarm/base/record.h"
#include "swarm/base/text.h"
#include "swarm/lease/events.h"

namespace swarm {

namespace {

constexpr const char* kQueueRoot = "_wait.";
constexpr const char* kBeatRoot = "_beat.";

}  // namespace

std::string queue_prefix(const std::string& name) { return kQueueRoot + name + "."; }
std::string beat_prefix(const std::string& name) { return kBeatRoot + name + "."; }

bool gone_from(const LeaseRecord& record, const std::string& host, const std::string& host_id) {
  // Only a record that names its host id is judged by its pid here.
  return !record.host_id.empty() && HostIdentity{host, host_id}.owns(record.host, record.host_id) && record.pid > 0 &&
         !process_is(static_cast<pid_t>(record.pid), record.pid_start);
}

std::optional<std::string> place_of(std::string_view key) {
  // "_wait.<name>.<id>": the name is everything between.
  const std::string_view root = kQueueRoot;
  if (key.substr(0, root.size()) != root) return std::nullopt;
  auto last_dot = key.rfind('.');
  if (last_dot == std::string_view::npos || last_dot <= root.size()) return std::nullopt;
  return std::string(key.substr(root.size(), last_dot - root.size()));
}

std::optional<std::string> beat_of(std::string_view key) {
  // "_beat.<name>.<id>" -> "_wait.<name>.<id>": the place it keeps alive.
  const std::string_view root = kBeatRoot;
  if (key.substr(0, root.size()) != root) return std::nullopt;
  return std::string(kQueueRoot) + std::string(key.substr(root.size()));
}

bool place_is_live(const kv::Entry& place, const std::optional<TimePoint>& last_beat, TimePoint now,
                   const std::string& host, const std::string& host_id) {
  auto lease = place_of(place.key);
  if (!lease) return false;
  auto parsed = parse_lease(place.value);
  if (!parsed.lease) return false;
  if (gone_from(*parsed.lease, host, host_id)) return false;
  LeaseEntry as_entry{*lease, place.revision, place.created, std::move(parsed.lease), {}, {}};
  // A place is written once; a waiter that has waited a while beats beside it.
  if (standing_of(as_entry, now).state == LeaseState::held) return true;
  if (!last_beat) return false;
  as_entry.stored_at = *last_beat;
  return standing_of(as_entry, now).state == LeaseState::held;
}

std::vector<LiveWaiter> LeaseStore::live_waiters(const std::string& name, const std::string& host,
                                                 const std::string& host_id) const {
  const std::string pattern = name.empty() ? std::string(kQueueRoot) + ">" : queue_prefix(name) + "*";
  std::vector<kv::Entry> places = keys_.list(pattern);
  std::vector<LiveWaiter> out;
  const TimePoint now = server_clock().now();
  for (auto& place : places) {
    auto lease = place_of(place.key);
    if (!lease) continue;
    std::optional<TimePoint> beat;
    if (!place_is_live(place, std::nullopt, now, host, host_id)) {
      auto stored = keys_.get(beat_prefix(*lease) + place.key.substr(place.key.rfind('.') + 1));
      if (!stored) continue;
      beat = stored->created;
    }
    if (!place_is_live(place, beat, now, host, host_id)) continue;
    auto parsed = parse_lease(place.value);
    out.push_back({*lease, token_of(parsed.lease ? parsed.lease->order : 0, place.revision),
                   place.key.substr(place.key.rfind('.') + 1), parsed.lease ? parsed.lease->holder : ""});
  }
  return out;
}

std::map<std::string, int> LeaseStore::waiting(const std::string& name, const std::string& host,
                                               const std::string& host_id) const {
  std::map<std::string, int> out;
  for (const auto& w : live_waiters(name, host, host_id)) ++out[w.lease];
  return out;
}

int LeaseStore::place_in_line(const std::string& name, std::uint64_t order) const {
  int place = 1;
  for (const auto& w : live_waiters(name)) place += w.order < order ? 1 : 0;
  return place;
}

}  // namespace swarm
