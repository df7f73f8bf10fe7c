#include "swarm/doctor.h"

#include <algorithm>
#include <map>
#include <set>

#include "kv/bucket.h"
#include "swarm/bootstrap.h"
#include "swarm/duration.h"
#include "swarm/embedded_server.h"
#include "swarm/error.h"
#include "swarm/hub.h"
#include "swarm/lease/lease.h"
#include "swarm/liveness.h"
#include "swarm/log.h"
#include "swarm/names.h"
#include "swarm/process_info.h"
#include "swarm/recovery.h"
#include "swarm/session_store.h"
#include "swarm/slot_folder.h"
#include "swarm/slot_lifecycle.h"
#include "swarm/worktree.h"

namespace swarm {

namespace fs = std::filesystem;

std::string_view to_string(Severity severity) { return severity == Severity::notice ? "notice" : "problem"; }

int DoctorReport::problems_remaining() const {
  return static_cast<int>(std::count_if(findings.begin(), findings.end(), [](const Finding& f) {
    return f.severity == Severity::problem && !f.fixed;
  }));
}

int DoctorReport::notices() const {
  return static_cast<int>(
      std::count_if(findings.begin(), findings.end(), [](const Finding& f) { return f.severity == Severity::notice; }));
}

int DoctorReport::fixed() const {
  return static_cast<int>(std::count_if(findings.begin(), findings.end(), [](const Finding& f) { return f.fixed; }));
}

namespace {

std::string ago(std::chrono::milliseconds age) {
  return format_duration(std::chrono::duration_cast<std::chrono::seconds>(age)) + " ago";
}

// One run of the checks; fixes as it goes when asked.
class Checkup {
 public:
  Checkup(const Workspace& ws, const HostIdentity& me, const Clock& clock, bool fix)
      : ws_(ws), me_(me), clock_(clock), fix_(fix) {}

  // The records read are not the workspace's own (`why` names the option):
  // --fix then removes no slot folder.
  void forbid_folder_removal(const std::string& why) { folders_elsewhere_ = why; }

  // This workspace's hub as sessions record it (hub_url), once config is read.
  void set_hub(const HubLocation& hub) {
    hub_location_ = hub;
    hub_url_ = hub.session_url();
  }

  DoctorReport& report() { return report_; }

  Finding& add(Severity severity, std::string check, std::string subject, std::string message, std::string fix) {
    report_.findings.push_back({severity, std::move(check), std::move(subject), std::move(message), std::move(fix)});
    return report_.findings.back();
  }

  void check_hub(const HubLocation& where) {
    try {
      hub_.emplace(Hub::open(where));
      hub_present_ = true;
      return;
    } catch (const Error& e) {
      if (where.remote()) {
        remote_hub_problem(where, e);
        return;
      }
      bool missing = !fs::exists(where.path());
      // A hub elsewhere (a shared filesystem) that is missing is more likely
      // unmounted than lost: `swarm up` would make an empty one there.
      bool own = fs::weakly_canonical(ws_.hub_dir()) == fs::path(where.text);
      add(Severity::problem, "hub", where.text,
          missing ? "the hub is missing, so no slot can be joined or push its work"
                  : std::string("the hub is broken: ") + e.what(),
          !missing ? "move " + where.text + " away (keep it: slot branches live there), then swarm up"
          : own    ? "swarm up"
                   : "mount or restore " + where.text + " (every host's branches live there); `swarm up` would start "
                     "an empty hub in its place");
    }
  }

  void remote_hub_problem(const HubLocation& where, const Error& e) {
    std::string fix;
    switch (e.kind()) {
      case Errc::unavailable:
        fix = "check the network and the git server of " + where.host + ", then swarm doctor   (if the hub moved: "
              "swarm up --hub NEW-URL, with no slot folder open)";
        break;
      case Errc::bad_input:
        fix = where.transport == HubLocation::Transport::ssh
                  ? "give this host a key the hub accepts (ssh-agent, ~/.ssh/id_ed25519, or $SWARM_SSH_KEY) and the "
                    "hub's host key in ~/.ssh/known_hosts, then swarm doctor"
                  : "set $SWARM_HUB_USERNAME and $SWARM_HUB_PASSWORD (or trust the server's certificate), then swarm "
                    "doctor";
        break;
      default: fix = "swarm up   (seeds an empty hub; a hub whose HEAD names no branch needs it set on the server)";
    }
    add(Severity::problem, "hub", where.shown(), std::string("the hub cannot be used: ") + e.what(), fix);
  }

  // This host's slots whose last commit is not on the hub (a push failed or
  // was never made): a notice, since the commit is safe here and close
  // salvages it, but other hosts do not see it.
  void check_slot_branches(const std::vector<SessionEntry>& entries) {
    if (!hub_) return;
    for (const auto& entry : entries) {
      if (entry.corrupt() || !me_.owns(*entry.session) || other_workspace(*entry.session)) continue;
      const fs::path wt = ws_.worktree(entry.slot);
      if (!has_git_worktree(entry.slot)) continue;
      std::optional<Worktree> worktree;
      try {
        worktree.emplace(Worktree::open(wt, entry.slot, hub_location_));
      } catch (const Error&) {
        continue;  // an unreadable worktree: check_folders has its say
      }
      const std::string branch = "swarm/" + entry.slot;
      auto local = worktree->branch_tip();
      auto on_hub = hub_->branch_tip(branch);
      if (!local || local == on_hub) continue;
      // A branch that never moved from where the slot began has nothing to push.
      if (!on_hub && !worktree->has_commits_beyond_default()) continue;
      add(Severity::notice, "unpushed_branch", entry.slot,
          "slot " + entry.slot + ": its last commit " + local->substr(0, 12) + " is not on the hub (the hub's " +
              branch + (on_hub ? " is at " + on_hub->substr(0, 12) : std::string(" is missing")) +
              "): a push failed or has not happened, so other hosts do not see it",
          "swarm commit --slot " + entry.slot + " -m MSG   (pushes " + branch + " again, with or without new changes)");
    }
  }

  void check_embedded_server(const WorkspaceConfig& config) {
    if (unsafe_.count(ws_.nats_dir()) > 0) return;  // reported already: never read through
    EmbeddedServer server(ws_.nats_dir());
    if (!config.embedded) {
      if (auto strays = server.all_on_store(); !strays.empty())
        add(Severity::problem, "embedded_server", server.data_dir().string(),
            "a nats-server (pid " + std::to_string(strays.front()) + ") runs on this workspace's store, though "
            "config.json names another server (" + kv::redact_urls(config.nats_url) + ")",
            "swarm down");
      return;
    }
    auto running = server.running();
    auto ours = running ? std::optional<pid_t>(running->pid) : std::nullopt;
    auto on_store = server.all_on_store();
    if (on_store.size() > 1)
      add(Severity::problem, "embedded_server", server.data_dir().string(),
          std::to_string(on_store.size()) + " nats-servers run on this workspace's store (an older `swarm up` raced "
          "another); only one may",
          "swarm down && swarm up");
    if (running && !running->token_auth)
      add(Severity::problem, "embedded_server", server.data_dir().string(),
          "the embedded nats-server (pid " + std::to_string(running->pid) + ") lets any local user in: it was "
          "started before workspaces had a token, so anyone on this host can read and change its records",
          "swarm up   (restarts it with the workspace's token; sessions and leases are kept)");
    // A full store stops JetStream's writes (and, before 2.10, JetStream):
    // reads may still answer, so doctor looks at the filesystem itself.
    if (ours && store_full(ws_.nats_dir()))
      add(Severity::problem, "embedded_store_full", server.data_dir().string(),
          embedded_trouble(ws_.nats_dir(), config), "free space on " + server.data_dir().string() +
                                                        "'s filesystem, then swarm up");
    if (ours) return;
    auto pid = server.recorded_pid();
    add(Severity::problem, "embedded_server", server.pid_file().string(),
        pid ? "the embedded nats-server is not running (the pid file names process " + std::to_string(*pid) +
                  ", which is gone or is another program now)"
            : "the embedded nats-server has no pid file: it was never started here, or its folder was removed",
        "swarm up");
  }

  void check_bucket(const SessionStore& store, const WorkspaceConfig& config, const kv::Connection& nats) {
    auto have = store.bucket_config();
    // A replicated workspace on nats-server before 2.10 (README: Which NATS server).
    if (have.replicas > 1)
      if (const std::string version = nats.server_version(); kv::version_before(version, 2, 10))
        add(Severity::notice, "nats_server_version", kv::redact_urls(nats.connected_url()),
            "NATS at " + kv::redact_urls(nats.connected_url()) + " runs nats-server " + version + ": on this "
            "replicated workspace every CAS write carries one more round trip (it checks a clustered stream's "
            "per-key CAS before it proposes a write only), and a stream leader cut off by a partition was seen to "
            "lose acknowledged writes when it rejoined",
            "upgrade every node to nats-server 2.10 or later (2.15.2 is tested); see the README's Which NATS server");
    if (have.ttl != config.ttl)
      add(Severity::problem, "bucket_config", store.bucket_name(),
          "bucket " + store.bucket_name() + " has TTL " + format_duration(have.ttl) + " but config.json says " +
              format_duration(config.ttl) + ": sessions expire on the bucket's clock",
          "swarm up --ttl " + format_duration(have.ttl) + "   (or recreate the bucket with the config's TTL when no "
          "session is live)");
    if (have.replicas != config.replicas)
      add(Severity::problem, "bucket_config", store.bucket_name(),
          "bucket " + store.bucket_name() + " has " + std::to_string(have.replicas) + " replica(s) but config.json says " +
              std::to_string(config.replicas),
          "swarm up --replicas " + std::to_string(have.replicas));
    try {
      kv::Bucket::open(nats, config.lease_bucket);
    } catch (const kv::Error& e) {
      if (e.kind() != kv::Errc::not_found) throw from_kv(e);
      add(Severity::problem, "lease_bucket", config.lease_bucket,
          "the lease bucket " + config.lease_bucket + " does not exist", "swarm up");
    }
  }

  // A session of this host in another workspace that shares the bucket (its
  // hub is elsewhere): the same slot name there is another slot.
  bool other_workspace(const Session& s) const { return me_.owns(s) && !s.hub_url.empty() && s.hub_url != hub_url_; }
  // Whether a slot folder here has a record: a corrupt one, or a session
  // that is not another workspace's.
  bool has_record_here(const SessionEntry& e) const { return e.corrupt() || !other_workspace(*e.session); }

  // What doctor keeps of the records: every one briefly (for the folder and
  // lease checks), and whole only those it may report on: corrupt, this
  // host's, or no longer fresh. At 100,000 sessions of other hosts that is
  // a few MB instead of all the records.
  struct Brief {
    std::string slot;
    std::string task_id;  // "" when corrupt
    std::uint64_t revision = 0;
    bool corrupt = false;
    bool here = false;  // a record of this workspace (has_record_here)
  };
  struct Listing {
    std::vector<Brief> all;
    std::vector<SessionEntry> notable;
    std::optional<ServerClock> server;  // read before the first record is judged
  };

  Listing list_sessions(const SessionStore& store, std::chrono::milliseconds ttl) {
    Listing out;
    out.all.reserve(static_cast<std::size_t>(store.size_hint()));
    // No records, no ages to judge: no need for the server's clock. Read
    // here, not in the visit (a big listing's visits run on its parser thread).
    if (store.size_hint() > 0) out.server = store.server_clock(clock_);
    store.for_each([&](SessionEntry&& entry) {
      if (!out.server) out.server = store.server_clock(clock_);  // records came to an empty bucket (a small listing)
      out.all.push_back({entry.slot, entry.corrupt() ? std::string() : entry.session->task_id, entry.revision,
                         entry.corrupt(), has_record_here(entry)});
      const bool notable = entry.corrupt() || me_.owns(*entry.session) ||
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
    std::sort(out.all.begin(), out.all.end(), [](const Brief& a, const Brief& b) { return a.slot < b.slot; });
    return out;
  }

  // The brief of `slot`'s record, if there is one (`all` is sorted by slot).
  static const Brief* find(const std::vector<Brief>& all, const std::string& slot) {
    auto it = std::lower_bound(all.begin(), all.end(), slot, [](const Brief& b, const std::string& s) { return b.slot < s; });
    return it != all.end() && it->slot == slot ? &*it : nullptr;
  }

  // Records: late, stale, corrupt, and this host's records with no folder.
  void check_records(const SessionStore& store, const Listing& listing, std::chrono::milliseconds ttl) {
    if (listing.notable.empty()) return;
    const ServerClock& server = *listing.server;
    const TimePoint server_now = server.now();
    for (const auto& entry : listing.notable) {
      if (entry.corrupt()) {
        corrupt_record(store, entry);
        continue;
      }
      const Session& s = *entry.session;
      if (other_workspace(s)) {
        other_workspace_session(entry);
        continue;
      }
      auto age = age_of(entry.stored_at, server_now);
      State state = state_of(age, ttl);
      if (state == State::stale) stale_session(store, entry, age, ttl, server.measured);
      else if (me_.owns(s) && !has_folder(entry.slot)) missing_folder(store, entry);
      else if (state == State::late) late_session(entry, age, ttl);
    }
  }

  // .swarm/'s own folders, each slot folder and its worktree: a link or a
  // stranger's folder in any of those places is reported, and never
  // followed, listed, moved or emptied (the checks after this skip it).
  void check_kept_folders() {
    for (const char* name : {kSlotsFolder, kTrashFolder, kRecoveryFolder, kLocksFolder, kNatsFolder}) {
      try {
        ws_.folder_if_exists(name);
      } catch (const Error& e) {
        if (e.kind() != Errc::bad_input) throw;
        unsafe_path(ws_.swarm_dir() / name, e);
      }
    }
    // What nats-server opens by path: a link there would have it write elsewhere.
    if (auto nats = kept_folder(kNatsFolder))
      for (const char* name : {"nats.log", "nats.pid", "data", "server.json", "server.conf", "token"})
        if (nats->kind(name) == EntryKind::link)
          unsafe_path(ws_.nats_dir() / name,
                      Error(Errc::bad_input, (ws_.nats_dir() / name).string() + " is a symbolic link where the "
                                             "embedded server keeps a file of its own"));
    std::optional<SafeDir> slots = kept_folder(kSlotsFolder);
    if (!slots) return;
    for (const auto& name : slots->list()) {
      if (slots->kind(name) != EntryKind::link && slots->kind(name) != EntryKind::folder) continue;
      try {
        // An entry that goes while we look (a swap, a close) is not reported.
        // (A file in the worktree's place is no danger: salvage keeps it whole.)
        auto folder = slots->folder_if_exists(name);
        const EntryKind wt = folder ? folder->kind(kWorktreeName) : EntryKind::missing;
        if (wt == EntryKind::link || wt == EntryKind::folder) folder->folder_if_exists(kWorktreeName);  // throws for a link
      } catch (const Error& e) {
        if (e.kind() != Errc::bad_input) throw;
        unsafe_path(ws_.slots_dir() / name, e);
      }
    }
  }

  // Slot folders whose record is gone (the session expired, its agent died),
  // and anything in .swarm/slots/ that is no slot folder.
  void check_folders(const SessionStore& store, const std::vector<Brief>& all) {
    std::optional<SafeDir> slots = kept_folder(kSlotsFolder);
    if (!slots) return;
    std::vector<std::string> names = slots->list();
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      if (unsafe_.count(ws_.slots_dir() / name) > 0) continue;  // reported already, never touched
      const Brief* record = find(all, name);
      if (!is_valid_slot_name(name) || slots->kind(name) != EntryKind::folder) stray_entry(ws_.slots_dir() / name);
      else if (record == nullptr || !record->here) orphan_folder(store, name);
    }
  }

  // Leases: corrupt records, leases held by a process of this host that is
  // gone, task leases whose session is gone (problems: --fix removes or
  // releases them, this host's only), and expired leases (a notice).
  void check_leases(const kv::Connection& nats, const WorkspaceConfig& config, const SessionStore& sessions,
                    const std::vector<Brief>& all) {
    std::optional<LeaseStore> store;
    try {
      store.emplace(LeaseStore::open(nats, config.lease_bucket));
    } catch (const Error& e) {
      if (e.kind() == Errc::not_bootstrapped) return;  // reported by check_bucket
      throw;
    }
    // Whether `slot` has a session for `task` (removed ones left out).
    auto has_session = [&](const std::string& slot, const std::string& task) {
      const Brief* b = find(all, slot);
      return b != nullptr && !b->corrupt && erased_slots_.count(slot) == 0 && b->task_id == task;
    };
    const ServerClock& clock = store->server_clock();
    for (const auto& lease : store->list()) {
      if (lease.corrupt()) {
        auto& f = add(Severity::problem, "corrupt_lease", lease.name,
                      "the record of lease " + lease.name + " is corrupt (" + lease.corrupt_reason + ")",
                      "swarm doctor --fix");
        if (fix_) erase_lease(*store, lease, f, "removed the corrupt lease record");
        continue;
      }
      const LeaseRecord& r = *lease.record;
      auto standing = standing_of(lease, clock.now());
      const bool mine = r.host_id.empty() ? r.host == me_.host : r.host_id == me_.host_id && r.host == me_.host;
      const bool orphan_task = !r.slot.empty() && !has_session(r.slot, r.task);
      if (standing.state == LeaseState::expired) {
        auto& f = add(Severity::notice, "expired_lease", lease.name,
            "lease " + lease.name + " (" + r.holder + ", token " + std::to_string(lease.token()) + ") expired " +
                ago(standing.age - r.ttl) + "; its holder stopped renewing it, and the next to ask takes it",
            "nothing to do   (or: swarm lease release " + lease.name + " --token " + std::to_string(lease.token()) +
                ")");
        // This host's task lease of a session that is gone: tidied away.
        if (fix_ && mine && orphan_task) release_lease(*store, lease, f);
        continue;
      }
      if (!r.slot.empty()) {
        // A task lease lives with its session.
        if (!orphan_task) continue;
        auto& f = add(mine ? Severity::problem : Severity::notice, "orphan_task_lease", lease.name,
                      "lease " + lease.name + " claims task " + r.task + " for slot " + r.slot +
                          ", which has no session for that task; it expires within " +
                          format_duration(std::chrono::duration_cast<std::chrono::seconds>(standing.left)) +
                          " unless released",
                      mine ? "swarm doctor --fix" : "on " + r.host + ": swarm doctor --fix");
        // A join writes its session before its task lease: look again first.
        if (fix_ && mine) {
          if (auto now = sessions.get(r.slot); now && !now->corrupt() && now->session->task_id == r.task) {
            f.severity = Severity::notice;
            f.fix_note = "a session took the task meanwhile; left alone";
          } else {
            release_lease(*store, lease, f);
          }
        }
        continue;
      }
      if (mine && r.pid != 0 && !process_is(static_cast<pid_t>(r.pid), r.pid_start)) {
        auto& f = add(Severity::problem, "dead_holder", lease.name,
                      "lease " + lease.name + " is held by process " + std::to_string(r.pid) + " of this host (" +
                          r.holder + "), which is gone",
                      "swarm doctor --fix   (or: swarm lease release " + lease.name + " --token " +
                          std::to_string(lease.token()) + ")");
        if (fix_) release_lease(*store, lease, f);
      }
    }
  }

  // What interrupted removals left in .swarm/trash/: salvaged already.
  // Only entries of the shape swarm gives them; anything else is not ours.
  void check_leftovers() {
    if (!kept_folder(kTrashFolder)) return;
    for (const auto& name : leftover_removals(ws_)) {
      const std::string leftover = (ws_.trash_dir() / name).string();
      auto& f = add(Severity::problem, "unfinished_removal", leftover,
                    leftover + " is what a removal of a slot folder left: it was salvaged (or is a clone "
                    "no one got), and deleting it was interrupted",
                    "swarm doctor --fix");
      if (!fix_) continue;
      std::string slot = name.substr(0, name.find('.'));
      auto lock = try_lock_slot(ws_, slot, "doctor --fix of slot " + slot);
      if (!lock) {
        busy(f, slot);
        continue;
      }
      if (auto problem = finish_removal(ws_, name); !problem.empty()) {
        f.fix_note = problem;
        continue;
      }
      f.fixed = true;
      f.fix_note = "deleted " + leftover;
    }
  }

 private:
  void unsafe_path(const fs::path& path, const Error& e) {
    unsafe_.insert(path);
    add(Severity::problem, "unsafe_path", path.string(), e.what(),
        "look at " + path.string() + " and move or remove it yourself: swarm never follows, empties or fixes it");
  }

  // A folder swarm keeps in .swarm/, when it is there and safe to use
  // (an unsafe one was reported by check_kept_folders).
  std::optional<SafeDir> kept_folder(const char* name) const {
    try {
      return ws_.folder_if_exists(name);
    } catch (const Error& e) {
      if (e.kind() != Errc::bad_input) throw;
      return std::nullopt;
    }
  }

  // Whether the slot has a folder; a link or a stranger's folder there
  // counts as one (never taken for missing: it is reported, not fixed).
  bool has_folder(const std::string& slot) const {
    auto slots = kept_folder(kSlotsFolder);
    return slots && slots->kind(slot) != EntryKind::missing;
  }

  // Whether the slot's worktree is a real folder with a .git in it.
  bool has_git_worktree(const std::string& slot) const {
    try {
      auto folder = ws_.slot_folder(slot);
      auto wt = folder ? folder->folder_if_exists(kWorktreeName) : std::nullopt;
      return wt && wt->kind(".git") != EntryKind::missing;
    } catch (const Error& e) {
      if (e.kind() != Errc::bad_input) throw;
      return false;
    }
  }

  void corrupt_record(const SessionStore& store, const SessionEntry& entry) {
    const std::string& slot = entry.slot;
    auto& f = add(Severity::problem, "corrupt_record", slot,
                  "the record of slot " + slot + " is corrupt (" + entry.corrupt_reason + ")",
                  is_valid_slot_name(slot) ? "swarm doctor --fix   (or: swarm evict --slot " + slot + ")"
                                           : "swarm doctor --fix");
    if (fix_) erase(store, entry, f, "removed the corrupt record");
  }

  void other_workspace_session(const SessionEntry& entry) {
    add(Severity::notice, "other_workspace", entry.slot,
        "slot " + entry.slot + ": a session of this host in another workspace (hub " + entry.session->hub_url +
            ") uses this bucket, so its slot names and this workspace's collide",
        "give each workspace its own bucket: swarm up --bucket NAME");
  }

  std::string whose(const Session& s) const { return me_.owns(s) ? "this host's session" : "host " + s.host + "'s session"; }

  void stale_session(const SessionStore& store, const SessionEntry& entry, std::chrono::milliseconds age,
                     std::chrono::milliseconds ttl, bool age_is_certain) {
    const std::string& slot = entry.slot;
    const Session& s = *entry.session;
    const bool mine = me_.owns(s);
    auto& f = add(Severity::problem, "stale_session", slot,
                  "slot " + slot + ": " + whose(s) + " (task " + s.task_id + ") was last renewed " + ago(age) +
                      "; the server drops it at " + format_duration(ttl),
                  mine ? "swarm doctor --fix   (or: swarm close --slot " + slot + " --result fail)"
                       : "on " + s.host + ": swarm doctor --fix   (or here: swarm evict --slot " + slot + ")");
    if (!fix_ || !mine) return;
    if (!age_is_certain) {
      f.fix_note = "not fixed: the server's clock could not be read, so the age is not certain";
      return;
    }
    auto lock = try_lock_slot(ws_, slot, "doctor --fix of slot " + slot);
    if (!lock) {
      busy(f, slot);
      return;
    }
    // By CAS on the revision read: a session that renewed meanwhile survives.
    if (erase(store, entry, f, "removed the stale record") && has_folder(slot)) remove_folder(slot, f);
  }

  void missing_folder(const SessionStore& store, const SessionEntry& entry) {
    const std::string& slot = entry.slot;
    auto& f = add(Severity::problem, "missing_folder", slot,
                  "slot " + slot + ": this host's session (task " + entry.session->task_id + ") has no folder " +
                      ws_.slot_dir(slot).string(),
                  "swarm doctor --fix   (or: swarm close --slot " + slot + " --no-artifact)");
    if (!fix_) return;
    // A join holds the lock from before its record until its folder is made.
    auto lock = try_lock_slot(ws_, slot, "doctor --fix of slot " + slot);
    if (!lock) {
      busy(f, slot);
      return;
    }
    if (!has_folder(slot)) erase(store, entry, f, "removed the record whose folder was gone");
  }

  void late_session(const SessionEntry& entry, std::chrono::milliseconds age, std::chrono::milliseconds ttl) {
    const Session& s = *entry.session;
    add(Severity::notice, "late_session", entry.slot,
        "slot " + entry.slot + ": " + whose(s) + " (task " + s.task_id + ") was last renewed " + ago(age) +
            ", past a third of the TTL (" + format_duration(ttl) + ")",
        me_.owns(s) ? "swarm renew --slot " + entry.slot : "on " + s.host + ": swarm renew --slot " + entry.slot);
  }

  void stray_entry(const fs::path& path) {
    add(Severity::notice, "stray_entry", path.string(),
        path.string() + " is not a slot folder (only folders named like slots are): swarm never removes it",
        "move it out of " + ws_.slots_dir().string());
  }

  void orphan_folder(const SessionStore& store, const std::string& slot) {
    auto& f = add(Severity::problem, "orphan_folder", slot,
                  "slot folder " + ws_.slot_dir(slot).string() + " has no record: its session expired (the agent "
                  "died or stopped renewing)",
                  "swarm doctor --fix   (salvages uncommitted files, removes the folder; or resume it: swarm join "
                  "--slot " + slot + " --task ...)");
    if (!fix_) return;
    auto lock = try_lock_slot(ws_, slot, "doctor --fix of slot " + slot);
    if (!lock) {
      busy(f, slot);
      return;
    }
    // A join that took the slot before we locked it wrote its record first: look again.
    if (auto now = store.get(slot); now && has_record_here(*now)) {
      f.fix_note = "a session took the slot meanwhile; left alone";
      f.severity = Severity::notice;
      return;
    }
    remove_folder(slot, f);
  }

  // Releases a lease for the grant read (its token): a renewal meanwhile
  // keeps it, a new grant is left alone.
  void release_lease(const LeaseStore& store, const LeaseEntry& lease, Finding& f) {
    try {
      store.release(lease.name, lease.token());
      f.fixed = true;
      f.fix_note = "released lease " + lease.name + " (token " + std::to_string(lease.token()) + ")";
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict && e.kind() != Errc::not_found) throw;
      f.severity = Severity::notice;
      f.fix_note = std::string("left alone: ") + e.what();
    }
  }

  void erase_lease(const LeaseStore& store, const LeaseEntry& lease, Finding& f, const std::string& done) {
    try {
      store.keys().erase(lease.name, lease.revision);
      f.fixed = true;
      f.fix_note = done;
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict) throw;
      f.severity = Severity::notice;
      f.fix_note = "the record changed meanwhile; left alone";
    }
  }

  // Another swarm process of this host holds the slot's folder right now.
  void busy(Finding& f, const std::string& slot) {
    f.fix_note = "left alone: another swarm process is working on the slot's folder (" +
                 slot_lock_holder(ws_, slot) + "); run doctor again when it is done";
  }

  // CAS delete at the revision read: a session that renewed meanwhile survives.
  bool erase(const SessionStore& store, const SessionEntry& entry, Finding& f, const std::string& done) {
    try {
      store.erase(entry);
      erased_slots_.insert(entry.slot);
      f.fixed = true;
      f.fix_note = done;
      spdlog::debug("doctor: {} of slot {} (revision {})", done, entry.slot, entry.revision);
      return true;
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict) throw;
      f.severity = Severity::notice;
      f.fix_note = "the record changed meanwhile (renewed or replaced); left alone";
      return false;
    }
  }

  // Salvages and removes a slot folder; the caller holds the slot's lock.
  void remove_folder(const std::string& slot, Finding& f) {
    if (!folders_elsewhere_.empty()) {
      f.fixed = false;
      f.fix_note = "left alone: the records were read from another server or bucket than config.json's (" +
                   folders_elsewhere_ + "), where this slot may well have a session; run doctor without it";
      return;
    }
    if (!hub_present_) {
      f.fixed = false;
      f.fix_note = "left alone: the hub is missing, and salvage keeps history there; fix the hub first";
      return;
    }
    Removal removal;
    try {
      removal = remove_slot_folder(ws_, slot, hub_location_, clock_());
    } catch (const std::exception& e) {
      f.fixed = false;
      f.fix_note = std::string("left alone: could not salvage it first: ") + e.what();
      return;
    }
    const Salvage& salvage = removal.salvage;
    std::string note = f.fix_note.empty() ? "" : f.fix_note + "; ";
    if (!removal.removed) {
      f.fixed = false;
      f.fix_note = note + "salvaged, but " + removal.warning;
      return;
    }
    f.fixed = true;
    note += "removed " + ws_.slot_dir(slot).string();
    if (salvage.files > 0)
      note += " after salvaging " + std::to_string(salvage.files) + " file(s) to " + salvage.folder.string();
    if (salvage.unreadable_repository) note += " (every file kept, its .git whole: the repository could not be read)";
    if (!salvage.commits_ref.empty()) note += "; history the hub lacked is in the hub under " + salvage.commits_ref;
    f.fix_note = note;
  }

  const Workspace& ws_;
  const HostIdentity& me_;
  const Clock& clock_;
  bool fix_;
  std::string hub_url_;
  HubLocation hub_location_;
  bool hub_present_ = false;
  std::optional<Hub> hub_;
  std::string folders_elsewhere_;  // non-empty: folders are reported only
  std::set<std::string> erased_slots_;  // sessions this run removed
  std::set<fs::path> unsafe_;           // links and strangers' folders reported: never touched
  DoctorReport report_;
};

}  // namespace

Doctor::Doctor(Workspace workspace, HostIdentity me, kv::ConnectionOptions connection, std::string bucket_override,
               Clock clock)
    : workspace_(std::move(workspace)),
      me_(std::move(me)),
      connection_(std::move(connection)),
      bucket_override_(std::move(bucket_override)),
      clock_(std::move(clock)) {}

DoctorReport Doctor::run(bool fix) {
  Checkup checkup(workspace_, me_, clock_, fix);
  DoctorReport& report = checkup.report();
  report.workspace = workspace_.root().string();

  auto file = workspace_.read_config();
  if (file.state != Workspace::ConfigFile::State::good) {
    checkup.add(Severity::problem, "config", workspace_.config_file().string(), file.problem,
                config_fix(workspace_, file));
    return report;
  }
  WorkspaceConfig config = file.config;
  // --nats-url (already in the options) or --bucket may point elsewhere than
  // the workspace's own records. Then a slot folder without a record there may
  // well have one in the workspace's: folders are reported, never removed.
  const bool own_bucket = bucket_override_.empty() || bucket_override_ == config.bucket;
  const bool own_server = connection_.urls.empty() || connection_.urls == kv::split_urls(config.nats_url);
  if (!bucket_override_.empty()) config.bucket = bucket_override_;
  if (connection_.urls.empty()) connection_.urls = kv::split_urls(config.nats_url);
  use_embedded_token(workspace_.nats_dir(), config, connection_);
  if (!own_server || !own_bucket) checkup.forbid_folder_removal(own_server ? "--bucket" : "--nats-url (or $NATS_URL)");
  std::string nats_url;
  for (const auto& url : connection_.urls) nats_url += (nats_url.empty() ? "" : ",") + url;
  nats_url = kv::redact_urls(nats_url);
  report.nats_url = nats_url;

  // The filesystem checks run whatever NATS does.
  const HubLocation hub = config.hub_location();
  checkup.set_hub(hub);
  checkup.check_hub(hub);
  checkup.check_kept_folders();
  checkup.check_embedded_server(config);
  checkup.check_leftovers();

  // NATS trouble, at connect or at any request after it (a cluster electing
  // a new leader, a server going away), is a finding, never an exit 7.
  auto nats_finding = [&](const Error& e) {
    const std::string trouble = own_server ? embedded_trouble(workspace_.nats_dir(), config) : std::string();
    checkup.add(Severity::problem, "nats", nats_url, trouble.empty() ? std::string(e.what()) : e.what() + ("; " + trouble),
                config.embedded && own_server
                    ? "swarm up   (restarts the embedded nats-server)"
                    : "check the NATS server at " + nats_url + ", then run swarm doctor again");
  };
  std::optional<kv::Connection> nats;
  try {
    nats.emplace(connect_nats(connection_));
  } catch (const Error& e) {
    nats_finding(e);
    return report;
  }
  report.nats_reachable = true;

  try {
    std::optional<SessionStore> store;
    try {
      store.emplace(SessionStore::open(*nats, config.bucket));
    } catch (const Error& e) {
      if (e.kind() != Errc::not_bootstrapped) throw;
      checkup.add(Severity::problem, "bucket", config.bucket, e.what(), "swarm up");
      return report;
    }
    checkup.check_bucket(*store, config, *nats);
    auto ttl = store->ttl();
    auto listing = checkup.list_sessions(*store, ttl);
    checkup.check_records(*store, listing, ttl);
    checkup.check_folders(*store, listing.all);
    checkup.check_slot_branches(listing.notable);
    checkup.check_leases(*nats, config, *store, listing.all);
  } catch (const Error& e) {
    if (e.kind() != Errc::unavailable) throw;
    report.nats_reachable = false;
    nats_finding(e);
  }
  return report;
}

}  // namespace swarm
