// Doctor's checks of this host: the hub, .swarm/'s own folders, the embedded
// server, interrupted removals; and of what the servers said of the buckets.
#include <algorithm>

#include "swarm/doctor/checks.h"

#include "kv/connection.h"
#include "swarm/base/duration.h"
#include "swarm/base/names.h"
#include "swarm/slots/folder.h"
#include "swarm/workspace/embedded_server.h"

namespace swarm::doctor {

namespace fs = std::filesystem;

Finding make_finding(Severity severity, FindingKind kind, std::string subject, std::string message, std::string fix) {
  return {severity, kind, std::move(subject), std::move(message), std::move(fix)};
}

std::string ago(std::chrono::milliseconds age) {
  return format_duration(std::chrono::duration_cast<std::chrono::seconds>(age)) + " ago";
}

HubProbe probe_hub(const Workspace& ws, const HubLocation& where) {
  HubProbe probe{where};
  try {
    probe.hub.emplace(Hub::open(where));
  } catch (const Error& e) {
    probe.error = e;
    if (!where.remote()) {
      probe.missing = !fs::exists(where.path());
      probe.own = fs::weakly_canonical(ws.hub_dir()) == fs::path(where.text);
    }
  }
  return probe;
}

namespace {

Finding remote_hub_problem(const HubLocation& where, const Error& e) {
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
  return make_finding(Severity::problem, FindingKind::hub, where.shown(),
                      std::string("the hub cannot be used: ") + e.what(), fix);
}

}  // namespace

Findings check_hub(const HostInput& in) {
  const HubProbe& probe = in.hub;
  if (!probe.error) return {};
  const HubLocation& where = probe.where;
  if (where.remote()) return {remote_hub_problem(where, *probe.error)};
  // A hub elsewhere (a shared filesystem) that is missing is more likely
  // unmounted than lost: `swarm up` would make an empty one there.
  const bool missing = probe.missing;
  return {make_finding(Severity::problem, FindingKind::hub, where.text,
                       missing ? "the hub is missing, so no slot can be joined or push its work"
                               : std::string("the hub is broken: ") + probe.error->what(),
                       !missing    ? "move " + where.text + " away (keep it: slot branches live there), then swarm up"
                       : probe.own ? "swarm up"
                                   : "mount or restore " + where.text + " (every host's branches live there); `swarm "
                                     "up` would start an empty hub in its place")};
}

std::optional<SafeDir> kept_folder(const Workspace& ws, const char* name) {
  try {
    return ws.folder_if_exists(name);
  } catch (const Error& e) {
    if (e.kind() != Errc::bad_input) throw;
    return std::nullopt;
  }
}

bool has_folder(const Workspace& ws, const std::string& slot) {
  auto slots = kept_folder(ws, kSlotsFolder);
  return slots && slots->kind(slot) != EntryKind::missing;
}

bool has_worktree(const Workspace& ws, const std::string& slot) {
  auto slots = kept_folder(ws, kSlotsFolder);
  if (!slots || slots->kind(slot) != EntryKind::folder) return false;
  try {
    return slots->folder(slot).kind(kWorktreeName) == EntryKind::folder;
  } catch (const Error&) {
    return false;  // a stranger's folder: reported as unsafe on its own
  }
}

namespace {

// Each slot folder and its worktree: a link or a stranger's folder there.
void find_unsafe_slot_folders(const Workspace& ws, std::vector<UnsafePath>& out) {
  std::optional<SafeDir> slots = kept_folder(ws, kSlotsFolder);
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
      out.push_back({ws.slots_dir() / name, e.what()});
    }
  }
}

}  // namespace

// .swarm/'s own folders, each slot folder and its worktree: a link or a
// stranger's folder in any of those places is reported, and never
// followed, listed, moved or emptied (the checks after this skip it).
std::vector<UnsafePath> find_unsafe_paths(const Workspace& ws) {
  std::vector<UnsafePath> out;
  for (const char* name : {kSlotsFolder, kTrashFolder, kRecoveryFolder, kLocksFolder, kNatsFolder, kServeFolder}) {
    try {
      ws.folder_if_exists(name);
    } catch (const Error& e) {
      if (e.kind() != Errc::bad_input) throw;
      out.push_back({ws.swarm_dir() / name, e.what()});
    }
  }
  // What nats-server opens by path: a link there would have it write elsewhere.
  if (auto nats = kept_folder(ws, kNatsFolder))
    for (const char* name : {"nats.log", "nats.pid", "data", "server.json", "server.conf", "token"})
      if (nats->kind(name) == EntryKind::link)
        out.push_back({ws.nats_dir() / name, (ws.nats_dir() / name).string() +
                                                 " is a symbolic link where the embedded server keeps a file of its "
                                                 "own"});
  // serve's secret is read by path nowhere, but a link there would have it read another's.
  if (auto serve = kept_folder(ws, kServeFolder); serve && serve->kind(kServeTokenName) == EntryKind::link)
    out.push_back({ws.swarm_dir() / kServeFolder / kServeTokenName,
                   (ws.swarm_dir() / kServeFolder / kServeTokenName).string() +
                       " is a symbolic link where swarm serve keeps its secret"});
  find_unsafe_slot_folders(ws, out);
  return out;
}

std::set<fs::path> paths_of(const std::vector<UnsafePath>& unsafe) {
  std::set<fs::path> out;
  for (const auto& u : unsafe) out.insert(u.path);
  return out;
}

Findings check_unsafe_paths(const HostInput& in) {
  Findings out;
  for (const auto& u : in.unsafe)
    out.push_back(make_finding(Severity::problem, FindingKind::unsafe_path, u.path.string(), u.why,
                               "look at " + u.path.string() +
                                   " and move or remove it yourself: swarm never follows, empties or fixes it"));
  return out;
}

namespace {

// A server on the store though config.json names another.
Findings stray_embedded_server(const EmbeddedServer& server, const WorkspaceConfig& config) {
  auto strays = server.all_on_store();
  if (strays.empty()) return {};
  return {make_finding(Severity::problem, FindingKind::embedded_server, server.data_dir().string(),
                       "a nats-server (pid " + std::to_string(strays.front()) + ") runs on this workspace's store, "
                       "though config.json names another server (" + kv::redact_urls(config.nats_url) + ")",
                       "swarm down")};
}

}  // namespace

Findings check_embedded_server(const HostInput& in) {
  const Workspace& ws = in.ws;
  if (paths_of(in.unsafe).count(ws.nats_dir()) > 0) return {};  // reported already: never read through
  EmbeddedServer server(ws.nats_dir());
  if (!in.config.embedded) return stray_embedded_server(server, in.config);
  Findings out;
  const std::string data = server.data_dir().string();
  auto running = server.running();
  auto ours = running ? std::optional<pid_t>(running->pid) : std::nullopt;
  auto on_store = server.all_on_store();
  if (on_store.size() > 1)
    out.push_back(make_finding(Severity::problem, FindingKind::embedded_server, data,
                               std::to_string(on_store.size()) + " nats-servers run on this workspace's store (an "
                               "older `swarm up` raced another); only one may",
                               "swarm down && swarm up"));
  if (running && !running->token_auth)
    out.push_back(make_finding(Severity::problem, FindingKind::embedded_server, data,
                               "the embedded nats-server (pid " + std::to_string(running->pid) + ") lets any local user "
                               "in: it was started before workspaces had a token, so anyone on this host can read and "
                               "change its records",
                               "swarm up   (restarts it with the workspace's token; sessions and leases are kept)"));
  // A full store stops JetStream's writes (and, before 2.10, JetStream):
  // reads may still answer, so doctor looks at the filesystem itself.
  if (ours && store_full(ws.nats_dir()))
    out.push_back(make_finding(Severity::problem, FindingKind::embedded_store_full, data,
                               embedded_trouble(ws.nats_dir(), in.config),
                               "free space on " + data + "'s filesystem, then swarm up"));
  if (ours) return out;
  auto pid = server.recorded_pid();
  out.push_back(make_finding(Severity::problem, FindingKind::embedded_server, server.pid_file().string(),
                             pid ? "the embedded nats-server is not running (the pid file names process " +
                                       std::to_string(*pid) + ", which is gone or is another program now)"
                                 : "the embedded nats-server has no pid file: it was never started here, or its "
                                   "folder was removed",
                             "swarm up"));
  return out;
}

// What interrupted removals left in .swarm/trash/: salvaged already.
// Only entries of the shape swarm gives them; anything else is not ours.
Findings check_leftovers(const HostInput& in) {
  if (!kept_folder(in.ws, kTrashFolder)) return {};
  Findings out;
  for (const auto& name : leftover_removals(in.ws)) {
    const std::string leftover = (in.ws.trash_dir() / name).string();
    out.push_back(make_finding(Severity::problem, FindingKind::unfinished_removal, leftover,
                               leftover + " is what a removal of a slot folder left: it was salvaged (or is a clone "
                               "no one got), and deleting it was interrupted",
                               "swarm doctor --fix"));
  }
  return out;
}

// A replicated workspace on nats-server before 2.10 (README: Which NATS server).
Findings check_server_version(const BucketInput& in) {
  if (in.have.replicas <= 1 || !kv::version_before(in.server_version, 2, 10)) return {};
  return {make_finding(
      Severity::problem, FindingKind::nats_server_version, in.server_url,
      "NATS at " + in.server_url + " runs nats-server " + in.server_version + ", older than 2.10: on this "
      "replicated workspace it loses acknowledged writes and lets fencing tokens go backwards under partitions "
      "(a lease may then have two holders)",
      "upgrade every node to nats-server 2.10 or later (2.15.2 is tested); see the README's Which NATS server")};
}

Findings check_bucket_config(const BucketInput& in) {
  Findings out;
  const std::string& name = in.bucket_name;
  if (in.have.ttl != in.config.ttl)
    out.push_back(make_finding(Severity::problem, FindingKind::bucket_config, name,
                               "bucket " + name + " has TTL " + format_duration(in.have.ttl) +
                                   " but config.json says " + format_duration(in.config.ttl) +
                                   ": sessions expire on the bucket's clock",
                               "swarm up --ttl " + format_duration(in.have.ttl) +
                                   "   (or recreate the bucket with the config's TTL when no session is live)"));
  if (in.have.replicas != in.config.replicas)
    out.push_back(make_finding(Severity::problem, FindingKind::bucket_config, name,
                               "bucket " + name + " has " + std::to_string(in.have.replicas) +
                                   " replica(s) but config.json says " + std::to_string(in.config.replicas),
                               "swarm up --replicas " + std::to_string(in.have.replicas)));
  return out;
}

Findings check_lease_bucket(const BucketInput& in) {
  if (in.lease_bucket_exists) {
    Findings out;
    for (const auto& name : in.unannounced)
      out.push_back(make_finding(Severity::notice, FindingKind::bucket_config, name,
                                 "bucket " + name + " does not have the server announce expiry (an older swarm made "
                                 "it): ends by TTL are judged by each host's clock, and none is journaled",
                                 "swarm up"));
    return out;
  }
  const std::string& name = in.config.lease_bucket;
  return {make_finding(Severity::problem, FindingKind::lease_bucket, name,
                       "the lease bucket " + name + " does not exist", "swarm up")};
}

Findings check_journal(const BucketInput& in) {
  if (in.lease_bucket_unreadable) return {};  // NATS trouble, reported as such
  const WorkspaceNames names = in.config.names();
  const std::string& name = names.events;
  if (!in.journal)
    return {make_finding(Severity::problem, FindingKind::journal, name,
                         "the journal (stream " + name + ") does not exist: acts are not recorded", "swarm up")};
  const std::string subjects = names.event_subjects();
  if (std::find(in.journal->config.subjects.begin(), in.journal->config.subjects.end(), subjects) ==
      in.journal->config.subjects.end())
    return {make_finding(Severity::problem, FindingKind::journal, name,
                         "the journal (stream " + name + ") does not take " + subjects + ": acts are not recorded",
                         "swarm up")};
  if (in.journal->sealed)
    return {make_finding(Severity::problem, FindingKind::journal, name,
                         "the journal (stream " + name + ") is sealed: it takes no new event, so acts are not recorded",
                         "nats stream rm " + name + " && swarm up")};
  if (in.journal->config.replicas != in.have.replicas)
    return {make_finding(Severity::notice, FindingKind::journal, name,
                         "the journal (stream " + name + ") has " + std::to_string(in.journal->config.replicas) +
                             " replica(s) but the buckets have " + std::to_string(in.have.replicas),
                         "nats stream edit " + name + " --replicas " + std::to_string(in.have.replicas))};
  return {};
}

}  // namespace swarm::doctor
