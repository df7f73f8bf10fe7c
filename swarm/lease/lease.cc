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

using std::chrono::duration_cast;
using std::chrono::milliseconds;

constexpr const char* kResignRoot = "_resign.";

// How long a grant's or release's event may take: a sixth of the TTL (the
// holder's command waits for the grant's), at most a second.
milliseconds event_budget(milliseconds ttl) { return std::clamp(ttl / 6, milliseconds(50), milliseconds(1000)); }

std::string seconds_text(milliseconds d) {
  return format_duration(duration_cast<std::chrono::seconds>(d + std::chrono::milliseconds(999)));
}

std::string held_message(const std::string& name, const LeaseRecord& r, std::uint64_t token, milliseconds left) {
  return "lease " + name + " is held by " + printable(r.holder) + " on host " + printable(r.host) +
         (r.pid != 0 ? " (pid " + std::to_string(r.pid) + ")" : std::string()) + ", token " + std::to_string(token) +
         ", for up to " + seconds_text(left) + " more unless renewed; wait for it with --wait DUR";
}

// kv errors in swarm's terms, with a CAS conflict said as `conflict_message`.
template <typename Call>
auto cas(const std::string& conflict_message, Call&& call) -> decltype(call()) {
  try {
    return call();
  } catch (const kv::Error& e) {
    if (e.kind() == kv::Errc::conflict) throw Error(Errc::conflict, conflict_message);
    throw from_kv(e);
  }
}

}  // namespace

LeaseHolder LeaseHolder::process(const HostIdentity& me, std::int64_t pid, const std::string& holder) {
  LeaseHolder who;
  who.host = me.host;
  who.host_id = me.host_id;
  who.pid = pid;
  who.pid_start = process_start_ticks(static_cast<pid_t>(pid)).value_or(0);
  who.holder = holder.empty() ? me.host + ":" + std::to_string(pid) : holder;
  return who;
}

std::string_view to_string(LeaseState state) {
  switch (state) {
    case LeaseState::held: return "held";
    case LeaseState::expired: return "expired";
    case LeaseState::corrupt: return "corrupt";
  }
  return "corrupt";
}

LeaseStanding standing_of(const LeaseEntry& entry, TimePoint server_now) {
  LeaseStanding out;
  out.age = std::max(milliseconds(0), duration_cast<milliseconds>(server_now - entry.stored_at));
  if (entry.corrupt()) return out;
  out.left = std::max(milliseconds(0), entry.record->ttl - out.age);
  out.state = out.left.count() > 0 ? LeaseState::held : LeaseState::expired;
  return out;
}

std::string task_lease_name(const std::string& task_id) {
  std::string plain = "task." + task_id;
  if (is_valid_lease_name(plain)) return plain;
  return "task.h" + stable_hash_hex(task_id);
}

std::string resign_key(const std::string& name) { return kResignRoot + name; }

void require_user_lease_name(std::string_view name) {
  require_lease_name(name);
  static constexpr std::pair<std::string_view, std::string_view> kOwn[] = {
      {"task.", "`swarm join --task` takes task.<id> for its slot"},
      {"ports.", "`swarm join --ports` takes ports.<first>-<last> for its slot"},
      {"land.", "`swarm land` takes land.<onto> while it lands"},
      {"hold.", "`swarm hold` takes hold.<slot>.<n> for a slot's paths"},
  };
  for (const auto& [prefix, who] : kOwn)
    if (name.substr(0, prefix.size()) == prefix)
      throw Error(Errc::bad_input, "lease name '" + std::string(name) + "' is one swarm gives itself: " +
                                       std::string(who) + "; name yours otherwise (e.g. claim." +
                                       std::string(name.substr(prefix.size())) + ")");
  const auto gate = std::string_view(".gate");
  if (name.find(".permit.") != std::string_view::npos ||
      (name.size() > gate.size() && name.substr(name.size() - gate.size()) == gate))
    throw Error(Errc::bad_input, "lease name '" + std::string(name) + "' is a part of a semaphore (its permits are "
                                 "<name>.permit.<k>, its line <name>.gate): take a permit with --limit N on the "
                                 "semaphore's own name");
}

bool is_lease_key(std::string_view key) { return !key.empty() && key.front() != '_'; }

LeaseEntry lease_entry_of(kv::Entry&& entry) {
  LeaseEntry out;
  out.name = std::move(entry.key);
  out.revision = entry.revision;
  out.stored_at = entry.created;
  ParsedLease parsed = parse_lease(entry.value);
  out.corrupt_reason = record::keyed_reason(out.name, is_valid_lease_name(out.name), "lease", parsed.corrupt_reason,
                                            "name", parsed.lease ? &parsed.lease->name : nullptr);
  if (out.corrupt_reason.empty()) out.record = std::move(parsed.lease);
  else out.raw = std::move(entry.value);
  return out;
}

LeaseStore LeaseStore::open(const kv::Connection& connection, const WorkspaceNames& names) {
  try {
    return LeaseStore(kv::Bucket::open(connection, names.leases), names);
  } catch (const kv::Error& e) {
    throw bucket_open_error(e, "lease", names.leases, connection.connected_url());
  }
}

const ServerClock* LeaseStore::SharedClock::usable() const {
  if (readings.empty()) return nullptr;
  const ServerClock* last = readings.back().get();
  if (last->measured || std::chrono::steady_clock::now() - last_read < std::chrono::seconds(1)) return last;
  return nullptr;
}

void LeaseStore::SharedClock::keep(std::unique_ptr<const ServerClock> reading) {
  // Readings older than the last few are used by no caller any more.
  constexpr std::size_t kKept = 64;
  if (readings.size() >= kKept) readings.erase(readings.begin(), readings.begin() + kKept / 2);
  readings.push_back(std::move(reading));
  last_read = std::chrono::steady_clock::now();
}

const ServerClock& LeaseStore::server_clock() const {
  std::lock_guard lock(server_clock_->mu);
  if (const ServerClock* kept = server_clock_->usable()) return *kept;
  server_clock_->keep(std::make_unique<const ServerClock>(read_server_clock(bucket())));
  return *server_clock_->readings.back();
}

std::vector<LeaseEntry> LeaseStore::current(const std::string& pattern) const {
  std::vector<LeaseEntry> out;
  translating_kv([&] {
    for (auto& e : bucket().current(pattern))
      if (is_lease_key(e.key)) out.push_back(lease_entry_of(std::move(e)));
  });
  return out;
}

std::vector<LeaseEntry> LeaseStore::list_with_clock(const std::string& pattern) const {
  return with_clock([&] { return list(pattern); });
}

std::vector<LeaseEntry> LeaseStore::current_with_clock(const std::string& pattern) const {
  return with_clock([&] { return current(pattern); });
}

std::vector<LeaseEntry> LeaseStore::with_clock(const std::function<std::vector<LeaseEntry>()>& listing) const {
  {
    std::lock_guard lock(server_clock_->mu);
    if (server_clock_->usable()) return listing();
  }
  PendingServerClock pending(bucket());
  auto listed = listing();
  auto clock = std::make_unique<const ServerClock>(pending.get());
  std::lock_guard lock(server_clock_->mu);
  if (!server_clock_->usable()) server_clock_->keep(std::move(clock));
  return listed;
}

std::optional<LeaseEntry> LeaseStore::get(const std::string& name) const {
  require_lease_name(name);
  auto entry = keys_.get(name);
  if (!entry) return std::nullopt;
  return lease_entry_of(std::move(*entry));
}

std::vector<LeaseEntry> LeaseStore::get_together(const std::vector<std::string>& names) const {
  for (const auto& name : names) require_lease_name(name);
  std::vector<LeaseEntry> out;
  for (auto& entry : keys_.get_together(names))
    if (entry) out.push_back(lease_entry_of(std::move(*entry)));
  return out;
}

std::vector<LeaseEntry> LeaseStore::list(const std::string& pattern) const {
  std::vector<LeaseEntry> out;
  translating_kv([&] {
    bucket().for_each(
        [&](kv::Entry&& e) {
          if (is_lease_key(e.key)) out.push_back(lease_entry_of(std::move(e)));
        },
        false, pattern);
  });
  kv::drop_repeats(out, bucket().revision_at_open(), [](const LeaseEntry& e) -> const std::string& { return e.name; },
                   [](const LeaseEntry& e) { return e.revision; });
  return out;
}

LeaseRecord record_for(const std::string& name, const LeaseHolder& who, milliseconds ttl) {
  LeaseRecord r;
  r.name = name;
  r.holder = who.holder;
  r.host = who.host;
  r.host_id = who.host_id;
  r.pid = who.pid;
  r.pid_start = who.pid_start;
  r.ttl = ttl;
  r.slot = who.slot;
  r.task = who.task;
  r.patterns = who.patterns;
  r.kind = who.kind;
  r.reason = who.reason;
  r.session = who.session;
  r.priority = who.priority;
  r.min_term = who.min_term;
  r.acquired_at = std::chrono::system_clock::now();
  r.renewed_at = r.acquired_at;
  return r;
}

LastWrite LeaseStore::last(const std::string& name) const {
  require_lease_name(name);
  bool released = false;
  auto entry = keys_.last(name, &released);
  LastWrite out;
  if (!entry) return out;
  out.revision = entry->revision;
  out.released = released;
  out.stored_at = entry->created;
  auto parsed = parse_lease(entry->value);
  if (parsed.lease) out.record = std::move(parsed.lease);
  else if (!released) out.corrupt_reason = parsed.corrupt_reason;
  return out;
}

Lease LeaseStore::acquire(const std::string& name, const LeaseHolder& who, milliseconds ttl) const {
  require_lease_name(name);
  require_lease_ttl(ttl);
  auto read = read_arriving([&] { return last(name); });
  const LastWrite& before = read.value;
  if (before.revision != 0 && !before.released) {
    if (!before.record)
      throw Error::corrupt_lease(name, before.corrupt_reason);
    const ServerClock& clock = server_clock();
    // Taken only when it is certainly expired, timed from when the read's
    // answer arrived; a clock that could not be read leaves it to the holder.
    const auto now = Steady::now();
    if (!certainly_expired(clock, read.at, before.stored_at, before.record->ttl, now)) {
      const auto left = observed_expiry(clock, read.at, before.stored_at, before.record->ttl) - now;
      throw Error(Errc::conflict, held_message(name, *before.record, token_of(before.record->token, before.revision),
                                               std::max(milliseconds(0), duration_cast<milliseconds>(left))));
    }
  }
  // Free: granted only when nobody waits in line for it.
  const int waiters = waiting(name, who.host, who.host_id)[name];
  if (waiters > 0)
    throw Error(Errc::conflict, "lease " + name + " is free, but " + std::to_string(waiters) +
                                    " waiter(s) are in line for it first; join the line with --wait DUR");
  return grant(name, who, ttl, before);
}

Lease LeaseStore::grant(const std::string& name, const LeaseHolder& who, milliseconds ttl,
                        const LastWrite& over) const {
  require_lease_name(name);
  require_lease_ttl(ttl);
  LeaseRecord r = record_for(name, who, ttl);
  // A lease that changes hands counts it; a release's marker keeps the count.
  if (over.record) r.transitions = over.record->transitions + 1;
  return write_grant(name, std::move(r), over);
}

Lease LeaseStore::write_grant(const std::string& name, LeaseRecord r, const LastWrite& over) const {
  const std::string value = to_json(r);
  const std::string server = watermark_ ? watermark_->before_grant(bucket()) : std::string();
  // A holder's deadline counts from just before the write is sent (adr/0023).
  const BootTime sent = BootClock::now();
  std::uint64_t revision = cas("lease " + name + " was just granted to another", [&] {
    const kv::Bucket written = bucket().with_message_ttl(server_expiry_after(r.ttl));
    return over.revision == 0 ? written.create(name, value) : written.update(name, value, over.revision);
  });
  if (watermark_) {
    try {
      watermark_->granted(bucket(), server, revision);
    } catch (...) {
      // A token that may be another's is never handed out: the grant is
      // taken back (by CAS on what this wrote) and refused.
      try {
        bucket().erase(name, revision, value);
      } catch (const std::exception&) {
      }
      throw;
    }
  }
  Lease lease;
  lease.name = name;
  lease.token = revision;
  lease.revision = revision;
  lease.deadline = holder_deadline(sent, r.ttl);
  lease.record = std::move(r);
  // Briefly: the grant's TTL runs meanwhile (a lock starts its command after).
  journal_.with_budget(event_budget(lease.record.ttl)).record(lease_grant_event(bucket().name(), lease, over));
  return lease;
}

Lease LeaseStore::renew(const Lease& lease) const {
  Lease next = lease;
  next.record.token = lease.token;
  next.record.renewed_at = std::chrono::system_clock::now();
  const std::string value = to_json(next.record);
  const BootTime sent = BootClock::now();
  next.revision = cas("lease " + lease.name + " is no longer held by token " + std::to_string(lease.token) +
                          ": it was released, or granted to another",
                      [&] {
                        return bucket()
                            .with_message_ttl(server_expiry_after(next.record.ttl))
                            .update(lease.name, value, lease.revision);
                      });
  next.deadline = holder_deadline(sent, next.record.ttl);
  return next;
}

void LeaseStore::release(const Lease& lease, const std::string& handover_to,
                         const std::string& handover_holder) const {
  LeaseRecord marker = lease.record;
  marker.token = lease.token;
  marker.handover_to = handover_to;
  marker.handover_holder = handover_holder;
  cas("lease " + lease.name + " is no longer held by token " + std::to_string(lease.token) +
          ": it was released, or granted to another",
      [&] {
        bucket().erase(lease.name, lease.revision, to_json(marker));
        return 0;
      });
  journal_.with_budget(event_budget(lease.record.ttl)).record(lease_release_event(bucket().name(), lease));
}

namespace {

// The lease `name` when `token` still names its grant: not_found, corrupt or
// conflict otherwise, saying why.
LeaseEntry current_grant(const LeaseStore& store, const std::string& name, std::uint64_t token) {
  auto entry = store.get(name);
  if (!entry) {
    // Released since: the token is no longer the lease's (exit 3, as when it
    // changed hands); never taken at all: there is no such lease (exit 4).
    LastWrite last = store.last(name);
    if (last.released)
      throw Error(Errc::conflict, "lease " + name + " was released" +
                                      (last.record ? " (token " + std::to_string(last.record->token) + ")" : "") +
                                      "; token " + std::to_string(token) + " holds nothing, and nothing was changed");
    throw Error(Errc::not_found, "no lease " + name + " (never taken, or gone with its bucket)");
  }
  if (entry->corrupt())
    throw Error::corrupt_lease(name, entry->corrupt_reason);
  if (entry->token() != token)
    throw Error(Errc::conflict, "lease " + name + " is now token " + std::to_string(entry->token()) + " (" +
                                    entry->record->holder + "), not " + std::to_string(token) +
                                    ": it changed hands, and nothing was changed");
  return *entry;
}

}  // namespace

Lease LeaseStore::renew(const std::string& name, std::uint64_t token) const {
  LeaseEntry entry = current_grant(*this, name, token);
  const ServerClock& clock = server_clock();
  auto standing = standing_of(entry, clock.now());
  // Past its TTL another may take it at any moment: the holder must not act
  // on it any more, so it is not renewed either.
  if (clock.measured && standing.state == LeaseState::expired)
    throw Error(Errc::conflict, "lease " + name + " (token " + std::to_string(token) + ") expired " +
                                    seconds_text(standing.age - entry.record->ttl) +
                                    " ago and nothing was changed; acquire it again");
  Lease lease;
  lease.name = name;
  lease.token = token;
  lease.revision = entry.revision;
  lease.record = *entry.record;
  return renew(lease);
}

Lease kept_grant(const std::string& name, const LeaseRecord& record, std::uint64_t revision, const LeaseHolder& who,
                 milliseconds ttl) {
  Lease kept;
  kept.name = name;
  kept.token = token_of(record.token, revision);
  kept.revision = revision;
  kept.record = record;
  kept.record.pid = who.pid;
  kept.record.pid_start = who.pid_start;
  kept.record.ttl = ttl;
  return kept;
}

kv::Bucket::Write LeaseStore::renewal_of(const LeaseEntry& held, std::optional<std::chrono::milliseconds> ttl) const {
  LeaseRecord r = *held.record;
  if (ttl) r.ttl = *ttl;
  r.token = held.token();
  r.renewed_at = std::chrono::system_clock::now();
  kv::Bucket::Write w = keys_.write(held.name, to_json(r), held.revision);
  w.message_ttl = server_expiry_after(r.ttl);
  return w;
}

void LeaseStore::release(const std::string& name, std::uint64_t token) const {
  LeaseEntry entry = current_grant(*this, name, token);
  Lease lease;
  lease.name = name;
  lease.token = token;
  lease.revision = entry.revision;
  lease.record = *entry.record;
  release(lease);
}

}  // namespace swarm
