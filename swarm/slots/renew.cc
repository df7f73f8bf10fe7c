// A slot's renewal: its session's TTL and presence, the task lease and holds
// beside it renewed together, and the leases a session leaves released.
#include "swarm/slots/lifecycle.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <future>
#include <sstream>

#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/base/warnings.h"
#include "swarm/git/hub.h"
#include "swarm/git/worktree.h"
#include "swarm/slots/events.h"
#include "swarm/slots/folder.h"
#include "swarm/slots/liveness.h"

namespace swarm {

namespace fs = std::filesystem;

namespace {

// A task lease as its renewal wrote it (renewal_of): its token kept, the TTL of now.
LeaseEntry as_renewed(const LeaseEntry& lease, std::uint64_t revision, std::chrono::milliseconds ttl) {
  LeaseEntry out = lease;
  out.revision = revision;
  out.record->token = lease.token();
  out.record->ttl = ttl;
  return out;
}

}  // namespace

void Presence::apply_to(Session& s) const {
  if (status) s.status = *status;
  if (note) s.note = *note;
  if (agent) {
    s.agent_pid = agent->first;
    s.agent_start = agent->second;
  }
  if (leaf_start) s.leaf_start = *leaf_start;
  for (const auto& name : add_holds)
    if (std::find(s.holds.begin(), s.holds.end(), name) == s.holds.end()) s.holds.push_back(name);
  for (const auto& name : drop_holds) s.holds.erase(std::remove(s.holds.begin(), s.holds.end(), name), s.holds.end());
}

void require_presence(const Presence& presence) {
  if (presence.status && !presence.status->empty()) {
    bool known = false;
    for (const char* status : kAgentStatuses) known = known || *presence.status == status;
    if (!known)
      throw Error(Errc::bad_input, "bad --status '" + printable(presence.status->substr(0, 40)) +
                                       "': use working, blocked, idle or waiting ('' says nothing)");
  }
  if (presence.note && (presence.note->size() > kMaxNoteBytes || !is_plain_text(*presence.note)))
    throw Error(Errc::bad_input, "bad --note '" + printable(presence.note->substr(0, 60)) + "': at most " +
                                     std::to_string(kMaxNoteBytes) + " bytes of UTF-8, one line, no control character");
}

std::uint64_t SlotLifecycle::renew(const SessionEntry& entry, const Presence& presence, SessionEntry* written) const {
  return same_session_cas(entry, "renewing", [&](SessionEntry& current) {
    // Only last_renewed and the presence asked change (and the session
    // token is kept from now on); every other field (a newer client's too)
    // stays.
    current.session->session_token = current.token();
    current.session->last_renewed = clock_();
    presence.apply_to(*current.session);
    const std::uint64_t revision = store_.update(*current.session, current.revision);
    if (written != nullptr) {
      *written = current;
      written->revision = revision;
    }
    return revision;
  });
}

std::uint64_t SlotLifecycle::renew(const SessionEntry& entry, std::optional<LeaseEntry> task_lease,
                                   std::vector<std::string>* warnings, const Presence& presence,
                                   SessionEntry* written, std::optional<LeaseEntry>* task_written) const {
  if (task_written != nullptr) task_written->reset();
  const Session& s = *entry.session;
  auto warn = [&](const std::string& w) { if (warnings != nullptr && !w.empty()) warnings->push_back(w); };
  const std::optional<PortBlock> block = s.port_block();
  if (s.task_id.empty() && !block && s.holds.empty() && presence.add_holds.empty())
    return renew(entry, presence, written);
  // The leases that live with the session, as held now: each one the slot
  // still holds is renewed in the session's round trip; one released or
  // taken meanwhile is claimed again after, if it is free.
  Session renewed = s;
  renewed.last_renewed = clock_();
  renewed.session_token = entry.token();
  presence.apply_to(renewed);
  std::vector<kv::Bucket::Write> writes = {{&store_.bucket(), s.slot, "", entry.revision}};
  int task_write = -1, block_write = -1;
  // Read before the session's value is written out: a lost hold leaves its list.
  const HoldsRenewal holds = renew_holds(entry, renewed, writes, warn);
  writes[0].value = to_json(renewed);
  if (!s.task_id.empty()) {
    if (!task_lease) task_lease = translating_kv([&] { return tasks_.read(s.task_id); });
    if (task_lease && TaskLeases::held_by(*task_lease, s.slot, s.task_id)) {
      task_write = static_cast<int>(writes.size());
      writes.push_back(tasks_.renewal(*task_lease, store_.ttl()));
    }
  }
  std::optional<LeaseEntry> block_held;
  if (block) {
    auto held = read_arriving([&] { return translating_kv([&] { return ports_.read(*block); }); });
    if (held.value && translating_kv([&] { return ports_.renewable(*held.value, held.at, s.slot); })) {
      block_write = static_cast<int>(writes.size());
      writes.push_back(ports_.renewal(*held.value, store_.ttl()));
      block_held = held.value;
    }
  }
  std::uint64_t revision = 0;
  std::vector<kv::Bucket::WriteResult> results;
  auto kept = [&](int index) { return index > 0 && !results[static_cast<std::size_t>(index)].error; };
  if (writes.size() == 1 && renewed.holds == s.holds) {
    revision = renew(entry, presence, written);
  } else {
    results = kv::Bucket::update_together(writes);
    revision = results[0].revision;
    if (!results[0].error && written != nullptr) {
      *written = entry;
      written->session = renewed;
      written->revision = revision;
    }
    if (results[0].error) {
      const Error failed = from_kv(*results[0].error);
      if (failed.kind() != Errc::conflict) throw failed;  // it may have landed: the leases stay
      try {
        revision = renew(entry, presence, written);  // lost a race: reread, and go on only for the same session
      } catch (const Error& e) {
        // The session is gone (or another's now): a block renewed beside it is given up.
        if (e.kind() == Errc::not_found || e.kind() == Errc::conflict) {
          if (kept(block_write)) ports_.give_up(*block_held);
          // Its holds too: nothing renews them any more.
          for (std::size_t i = 0; i < holds.held.size(); ++i)
            if (kept(holds.at[i])) holds_.release(holds.held[i].name, holds.held[i].token());
        }
        throw;
      }
    }
  }
  if (kept(task_write) && task_written != nullptr)
    *task_written = as_renewed(*task_lease, results[static_cast<std::size_t>(task_write)].revision, store_.ttl());
  if (!s.task_id.empty() && !kept(task_write)) warn(tasks_.reclaim(s.slot, s.task_id, s.leaf_pid));
  if (block && !kept(block_write)) warn(ports_.reclaim(s.slot, *block, s.leaf_pid));
  if (kept(block_write))
    warn(ports_.confirm_renewal(s.slot, *block, *block_held, results[static_cast<std::size_t>(block_write)].revision));
  for (std::size_t i = 0; i < holds.held.size(); ++i) {
    if (kept(holds.at[i]))
      warn(holds_.confirm_renewal(holds.held[i], holds.arrived,
                                  results[static_cast<std::size_t>(holds.at[i])].revision));
    else if (!results.empty())
      warn("the hold " + holds.held[i].name + " was not renewed (it changed meanwhile); the next renewal looks again");
  }
  return revision;
}

SlotLifecycle::HoldsRenewal SlotLifecycle::renew_holds(const SessionEntry& entry, Session& renewed,
                                                       std::vector<kv::Bucket::Write>& writes,
                                                       const std::function<void(const std::string&)>& warn) const {
  HoldsRenewal out;
  const Session& s = *entry.session;
  if (renewed.holds.empty()) return out;
  // The names as the record has them after this write's changes; one that
  // names no hold of this slot (planted) is dropped.
  const std::vector<std::string> named = renewed.holds;
  renewed.holds = names_of_slot(s.slot, named);
  if (renewed.holds.size() != named.size())
    warn("the record of slot " + s.slot + " named holds that are none of its own; they are no longer named");
  if (renewed.holds.empty()) return out;
  auto read = translating_kv([&] { return holds_.read(renewed.holds); });
  out.arrived = read.at;
  const std::vector<std::string> names = std::move(renewed.holds);
  renewed.holds.clear();
  for (const auto& name : names) {
    auto it = std::find_if(read.value.begin(), read.value.end(), [&](const LeaseEntry& e) { return e.name == name; });
    if (it != read.value.end() && translating_kv([&] { return holds_.renewable(*it, read.at, s.slot, entry.token()); })) {
      out.at.push_back(static_cast<int>(writes.size()));
      writes.push_back(holds_.renewal(*it, store_.ttl()));
      out.held.push_back(*it);
      renewed.holds.push_back(name);
      continue;
    }
    warn("the hold " + name + " of slot " + s.slot + " was lost (" +
         (it == read.value.end() ? std::string("released") : hold_of(*it, s.slot, entry.token()) ? "expired" : "now another's") +
         "); hold its paths again with `swarm hold`");
  }
  return out;
}

std::vector<std::string> SlotLifecycle::release_leases(const SessionEntry& entry) const {
  std::vector<std::string> warnings;
  const Session& s = *entry.session;
  if (auto w = tasks_.release(s.slot, s.task_id); !w.empty()) warnings.push_back(w);
  if (auto block = s.port_block())
    if (auto w = ports_.release(s.slot, *block); !w.empty()) warnings.push_back(w);
  for (auto& w : holds_.release_all(s.slot, entry.token(), s.holds)) warnings.push_back(std::move(w));
  return warnings;
}

std::uint64_t SlotLifecycle::renew(const std::string& slot, std::vector<std::string>* warnings,
                                   ExpectedSession session, const Presence& presence) {
  require_presence(presence);
  return renew(read_own(slot, session), std::nullopt, warnings, presence);
}

}  // namespace swarm
