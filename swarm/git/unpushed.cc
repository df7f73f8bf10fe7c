// What a slot's clone holds that the hub lacks, pushed to the hub under
// refs/recovery/<slot>-<time>/ before the clone is removed: any local branch,
// tag or other ref, the stash and its older entries, a detached HEAD, and the
// commits HEAD's reflog remembers (an amended or abandoned commit).
#include <set>
#include <string_view>

#include "swarm/base/error.h"
#include "swarm/git/remote_access.h"
#include "swarm/git/repos.h"

namespace swarm::git {

namespace {

// Pushing to a prefix the hub has already is retried under the next free
// one at most this often (another salvage of the same slot got there first).
constexpr int kMaxPrefixAttempts = 5;
// Where the tips are named locally for the push (the clone goes right after).
constexpr std::string_view kTempNamespace = "refs/swarm-salvage/";

using RevwalkPtr = std::unique_ptr<git_revwalk, Freer<git_revwalk_free>>;
using ReflogPtr = std::unique_ptr<git_reflog, Freer<git_reflog_free>>;
using RefIteratorPtr = std::unique_ptr<git_reference_iterator, Freer<git_reference_iterator_free>>;
using OdbPtr = std::unique_ptr<git_odb, Freer<git_odb_free>>;

struct OidLess {
  bool operator()(const git_oid& a, const git_oid& b) const { return git_oid_cmp(&a, &b) < 0; }
};
using OidSet = std::set<git_oid, OidLess>;

// A tip to keep: its name under the prefix ("heads/feature", "stash-1").
struct Tip {
  std::string name;
  git_oid oid;
  bool from_reflog = false;
};

// The commit an object peels to, when it peels to one.
std::optional<git_oid> commit_of(git_repository* repo, const git_oid& oid) {
  git_object* raw = nullptr;
  if (git_object_lookup(&raw, repo, &oid, GIT_OBJECT_ANY) != 0) return std::nullopt;
  ObjectPtr object(raw);
  git_object* peeled_raw = nullptr;
  if (git_object_peel(&peeled_raw, object.get(), GIT_OBJECT_COMMIT) != 0) return std::nullopt;
  ObjectPtr peeled(peeled_raw);
  return *git_object_id(peeled.get());
}

// The reflog of `log` as tips "<base><i>" (entry 0 is the newest).
void add_reflog(git_repository* repo, const std::string& log, const std::string& base, std::vector<Tip>& tips) {
  git_reflog* reflog_raw = nullptr;
  if (git_reflog_read(&reflog_raw, repo, log.c_str()) != 0) return;
  ReflogPtr reflog(reflog_raw);
  for (size_t i = 0, n = git_reflog_entrycount(reflog.get()); i < n; ++i) {
    const git_reflog_entry* entry = git_reflog_entry_byindex(reflog.get(), i);
    const git_oid* id = git_reflog_entry_id_new(entry);
    if (id == nullptr || git_oid_is_zero(id)) continue;
    tips.push_back({base + std::to_string(i), *id, true});
  }
}

// Every local tip worth keeping, named for the recovery prefix: each ref, and
// what its reflog and HEAD's remember (older stashes, amended and abandoned
// commits, a branch moved back).
std::vector<Tip> local_tips(git_repository* repo) {
  std::vector<Tip> tips;
  std::vector<std::string> logs;
  git_reference_iterator* it_raw = nullptr;
  check(git_reference_iterator_new(&it_raw, repo), "list the clone's refs");
  RefIteratorPtr it(it_raw);
  git_reference* ref_raw = nullptr;
  while (git_reference_next(&ref_raw, it.get()) == 0) {
    ReferencePtr ref(ref_raw);
    std::string_view name = git_reference_name(ref.get());
    if (git_reference_type(ref.get()) != GIT_REFERENCE_DIRECT) continue;
    if (name.rfind("refs/remotes/", 0) == 0 || name.rfind(kTempNamespace, 0) == 0) continue;
    if (name.rfind("refs/", 0) != 0) continue;
    tips.push_back({std::string(name.substr(5)), *git_reference_target(ref.get())});
    logs.emplace_back(name);
  }
  for (const auto& log : logs) {
    // "refs/stash" -> "stash-<i>", "refs/heads/tmp" -> "heads/tmp-reflog-<i>".
    std::string base = log == "refs/stash" ? "stash-" : log.substr(5) + "-reflog-";
    add_reflog(repo, log, base, tips);
  }
  add_reflog(repo, "HEAD", "HEAD-reflog-", tips);
  if (git_repository_head_detached(repo) == 1) {
    git_oid head;
    if (git_reference_name_to_id(&head, repo, "HEAD") == 0) tips.push_back({"detached-HEAD", head});
  }
  return tips;
}

// Commits reachable from `from` but from none of `hidden`.
OidSet reachable(git_repository* repo, const std::vector<git_oid>& from, const std::vector<git_oid>& hidden) {
  OidSet out;
  if (from.empty()) return out;
  git_revwalk* raw = nullptr;
  check(git_revwalk_new(&raw, repo), "walk the clone's history");
  RevwalkPtr walk(raw);
  for (const auto& oid : from) check(git_revwalk_push(walk.get(), &oid), "walk the clone's history");
  for (const auto& oid : hidden) check(git_revwalk_hide(walk.get(), &oid), "walk the clone's history");
  git_oid next;
  while (git_revwalk_next(&next, walk.get()) == 0) out.insert(next);
  return out;
}

// The tips whose history the hub lacks: every named one (its name helps
// whoever recovers it), then a reflog entry only for commits that no tip
// kept before it carries.
std::vector<Tip> tips_the_hub_lacks(git_repository* repo, const std::vector<Tip>& tips,
                                    const std::vector<std::pair<std::string, git_oid>>& hub) {
  git_odb* odb_raw = nullptr;
  check(git_repository_odb(&odb_raw, repo), "open the clone's objects");
  OdbPtr odb(odb_raw);
  OidSet hub_objects;
  std::vector<git_oid> hidden;  // the hub's commits that this clone knows
  for (const auto& [name, oid] : hub) {
    hub_objects.insert(oid);
    if (!git_odb_exists(odb.get(), &oid)) continue;
    if (auto commit = commit_of(repo, oid)) hidden.push_back(*commit);
  }
  std::vector<Tip> keep;
  OidSet covered;  // commits that the tips kept so far carry to the hub
  for (bool reflog_pass : {false, true}) {
    for (const auto& tip : tips) {
      if (tip.from_reflog != reflog_pass) continue;
      git_object_t type = GIT_OBJECT_INVALID;
      size_t size = 0;
      git_odb_read_header(&size, &type, odb.get(), &tip.oid);
      auto commit = commit_of(repo, tip.oid);
      // A tag object (its message, its signature) is kept unless the hub has
      // that very object, even when the hub has the commit it names.
      if (type != GIT_OBJECT_COMMIT && hub_objects.count(tip.oid) == 0) {
        keep.push_back(tip);
        if (commit) {
          auto lacking = reachable(repo, {*commit}, hidden);
          covered.insert(lacking.begin(), lacking.end());
        }
        continue;
      }
      if (!commit) continue;
      if (reflog_pass && covered.count(*commit) != 0) continue;
      auto lacking = reachable(repo, {*commit}, hidden);
      if (lacking.empty()) continue;  // the hub has all of it
      keep.push_back(tip);
      covered.insert(lacking.begin(), lacking.end());
    }
  }
  return keep;
}

// `prefix`, or the first of prefix-2, prefix-3... that no hub ref uses.
std::string free_prefix(const std::string& prefix, const std::vector<std::pair<std::string, git_oid>>& hub) {
  for (int n = 1;; ++n) {
    std::string candidate = n == 1 ? prefix : prefix + "-" + std::to_string(n);
    bool taken = false;
    for (const auto& [name, oid] : hub)
      taken = taken || name == candidate || name.rfind(candidate + "/", 0) == 0;
    if (!taken) return candidate;
  }
}

}  // namespace

std::optional<PreservedHistory> WorktreeRepo::preserve_unpushed(const std::string& prefix) {
  RemoteAccess access(hub_);
  RemotePtr remote = access.hub_remote(repo_.get());
  auto hub = access.list(remote.get(), "list the hub's refs from " + path_.string()).refs;
  auto keep = tips_the_hub_lacks(repo_.get(), local_tips(repo_.get()), hub);
  if (keep.empty()) return std::nullopt;

  // Named locally first: a push takes refs, not bare object ids.
  for (const auto& tip : keep) {
    git_reference* ref = nullptr;
    check(git_reference_create(&ref, repo_.get(), (std::string(kTempNamespace) + tip.name).c_str(), &tip.oid, 1,
                               "swarm: salvage"),
          "name " + tip.name + " for the salvage push");
    git_reference_free(ref);
  }
  for (int attempt = 1; attempt <= kMaxPrefixAttempts; ++attempt) {
    PreservedHistory out{free_prefix(prefix, hub), {}};
    std::vector<std::string> specs;
    for (const auto& tip : keep) {
      out.refs.push_back(out.prefix + "/" + tip.name);
      specs.push_back(std::string(kTempNamespace) + tip.name + ":" + out.refs.back());
    }
    StringArray array(specs);
    git_push_options options = GIT_PUSH_OPTIONS_INIT;
    options.callbacks = access.callbacks();
    access.run("push the unpushed history of " + path_.string() + " to the hub",
               [&] { return git_remote_push(remote.get(), array.get(), &options); }, RemoteAccess::Direction::push);
    if (access.rejected().empty()) return out;
    // Someone made refs under that prefix meanwhile: look for a free one again.
    hub = access.list(remote.get(), "list the hub's refs from " + path_.string()).refs;
  }
  throw Error(Errc::conflict, "the hub refused every recovery prefix tried for " + path_.string());
}

}  // namespace swarm::git
