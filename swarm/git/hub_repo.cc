#include "swarm/git/repos.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "swarm/base/error.h"
#include "swarm/git/remote_access.h"

namespace swarm::git {

namespace fs = std::filesystem;

namespace {

// Every file and folder of a hub this process just made, synced: libgit2
// writes HEAD and the config at init without syncing them, and a crash
// would leave a hub with an empty HEAD (adr/0052). Folders last, deepest first.
void sync_new_hub(const fs::path& hub) {
  std::vector<fs::path> folders = {hub};
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(hub, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const auto status = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_directory(status)) {
      folders.push_back(it->path());
      continue;
    }
    if (!fs::is_regular_file(status)) continue;
    const int fd = ::open(it->path().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
  }
  for (auto f = folders.rbegin(); f != folders.rend(); ++f) {
    const int fd = ::open(f->c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
  }
  if (const int fd = ::open(hub.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

constexpr const char* kFallbackBranch = "main";

// The source repository when it has a commit at HEAD; null otherwise.
RepositoryPtr open_source(const fs::path& source) {
  git_repository* raw = nullptr;
  if (git_repository_open_ext(&raw, source.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr) != 0) return nullptr;
  RepositoryPtr repo(raw);
  if (git_repository_head_unborn(repo.get()) != 0 || git_repository_is_bare(repo.get())) return nullptr;
  return repo;
}

std::string branch_name_of_head(git_repository* repo) {
  git_reference* raw = nullptr;
  if (git_repository_head(&raw, repo) != 0) return kFallbackBranch;
  ReferencePtr head(raw);
  if (!git_reference_is_branch(head.get())) return kFallbackBranch;  // detached HEAD
  const char* name = nullptr;
  if (git_branch_name(&name, head.get()) != 0 || name == nullptr) return kFallbackBranch;
  return name;
}

// Copies every commit reachable from the source's HEAD into the hub as one pack.
git_oid copy_history(git_repository* source, const fs::path& hub_path) {
  git_oid head;
  check(git_reference_name_to_id(&head, source, "HEAD"), "read the workspace's HEAD");
  git_revwalk* walk_raw = nullptr;
  check(git_revwalk_new(&walk_raw, source), "walk the workspace's history");
  RevwalkPtr walk(walk_raw);
  check(git_revwalk_push(walk.get(), &head), "walk the workspace's history");
  git_packbuilder* pb_raw = nullptr;
  check(git_packbuilder_new(&pb_raw, source), "pack the workspace's history");
  PackBuilderPtr pb(pb_raw);
  check(git_packbuilder_insert_walk(pb.get(), walk.get()), "pack the workspace's history");
  check(git_packbuilder_write(pb.get(), (hub_path / "objects" / "pack").c_str(), 0, nullptr, nullptr),
        "write the workspace's history into the hub");
  return head;
}

git_oid empty_initial_commit(git_repository* hub) {
  git_treebuilder* tb_raw = nullptr;
  check(git_treebuilder_new(&tb_raw, hub, nullptr), "build an empty tree");
  TreeBuilderPtr tb(tb_raw);
  git_oid tree_id;
  check(git_treebuilder_write(&tree_id, tb.get()), "write an empty tree");
  git_tree* tree_raw = nullptr;
  check(git_tree_lookup(&tree_raw, hub, &tree_id), "read the empty tree");
  TreePtr tree(tree_raw);
  git_signature* sig_raw = nullptr;
  check(git_signature_now(&sig_raw, "swarm", "swarm@localhost"), "make a signature");
  SignaturePtr sig(sig_raw);
  git_oid commit;
  check(git_commit_create(&commit, hub, nullptr, sig.get(), sig.get(), nullptr, "swarm: initial commit",
                          tree.get(), 0, nullptr),
        "write the hub's initial commit");
  return commit;
}

}  // namespace

HubRepo::HubRepo(RepositoryPtr repo) : repo_(std::move(repo)) {}

std::unique_ptr<HubRepo> HubRepo::create(const fs::path& path, const fs::path& source) {
  ensure_initialized();
  auto src = open_source(source);
  std::string branch = src ? branch_name_of_head(src.get()) : kFallbackBranch;

  git_repository_init_options options = GIT_REPOSITORY_INIT_OPTIONS_INIT;
  options.flags = GIT_REPOSITORY_INIT_BARE | GIT_REPOSITORY_INIT_MKPATH;
  std::string head_ref = "refs/heads/" + branch;
  options.initial_head = branch.c_str();
  git_repository* raw = nullptr;
  check(git_repository_init_ext(&raw, path.c_str(), &options), "create the hub at " + path.string());
  RepositoryPtr hub(raw);

  git_oid tip = src ? copy_history(src.get(), path) : empty_initial_commit(hub.get());
  git_reference* ref_raw = nullptr;
  check(git_reference_create(&ref_raw, hub.get(), head_ref.c_str(), &tip, 0, "swarm up: seed the hub"),
        "create branch " + branch + " in the hub");
  ReferencePtr ref(ref_raw);
  check(git_repository_set_head(hub.get(), head_ref.c_str()), "point the hub's HEAD at " + branch);
  sync_new_hub(path);
  return std::make_unique<HubRepo>(std::move(hub));
}

std::unique_ptr<HubRepo> HubRepo::open(const fs::path& path) {
  ensure_initialized();
  RepositoryPtr repo = open_local_hub(path, path.string());
  if (git_repository_head_unborn(repo.get()) != 0)
    throw Error(Errc::not_bootstrapped, "the hub " + path.string() + " has no commit on its default branch");
  return std::make_unique<HubRepo>(std::move(repo));
}

std::string HubRepo::default_branch() const { return branch_name_of_head(repo_.get()); }

std::optional<std::string> HubRepo::branch_tip(const std::string& branch) const {
  git_oid oid;
  if (git_reference_name_to_id(&oid, repo_.get(), ("refs/heads/" + branch).c_str()) != 0) return std::nullopt;
  return hex(oid);
}

bool HubRepo::has_commits_beyond_default(const std::string& branch) const {
  git_oid tip, base;
  if (git_reference_name_to_id(&tip, repo_.get(), ("refs/heads/" + branch).c_str()) != 0) return false;
  if (git_reference_name_to_id(&base, repo_.get(), "HEAD") != 0) return true;
  size_t ahead = 0, behind = 0;
  check(git_graph_ahead_behind(&ahead, &behind, repo_.get(), &tip, &base), "compare " + branch + " in the hub");
  return ahead > 0;
}

std::string pick_default_branch(const std::string& head, const std::vector<std::string>& branches) {
  auto has = [&](const std::string& name) { return std::find(branches.begin(), branches.end(), name) != branches.end(); };
  if (!head.empty() && has(head)) return head;
  for (const char* name : {"main", "master"})
    if (has(name)) return name;
  std::vector<std::string> own;
  for (const auto& b : branches)
    if (b.rfind("swarm/", 0) != 0) own.push_back(b);
  return own.size() == 1 ? own.front() : "";
}

std::optional<git_oid> default_start(git_repository* clone) {
  git_oid oid;
  const std::string prefix = "refs/remotes/origin/";
  std::string head;
  git_reference* raw = nullptr;
  if (git_reference_lookup(&raw, clone, (prefix + "HEAD").c_str()) == 0) {
    ReferencePtr ref(raw);
    if (const char* target = git_reference_symbolic_target(ref.get()); target != nullptr)
      head = std::string(target).substr(std::string(target).rfind(prefix, 0) == 0 ? prefix.size() : 0);
  }
  std::vector<std::string> branches;
  git_reference_iterator* it_raw = nullptr;
  if (git_reference_iterator_glob_new(&it_raw, clone, (prefix + "*").c_str()) == 0) {
    std::unique_ptr<git_reference_iterator, Freer<git_reference_iterator_free>> it(it_raw);
    const char* name = nullptr;
    while (git_reference_next_name(&name, it.get()) == 0)
      if (std::string_view(name) != prefix + "HEAD") branches.emplace_back(name + prefix.size());
  }
  git_error_clear();
  std::string branch = pick_default_branch(head, branches);
  if (branch.empty() || git_reference_name_to_id(&oid, clone, (prefix + branch).c_str()) != 0) {
    git_error_clear();
    return std::nullopt;
  }
  return oid;
}

RemoteHubRepo::RemoteHubRepo(std::string url, Refs refs, std::string head_branch)
    : url_(std::move(url)), refs_(std::move(refs)), head_branch_(std::move(head_branch)) {}

std::unique_ptr<RemoteHubRepo> RemoteHubRepo::open(const std::string& url) {
  ensure_initialized();
  RemoteAccess access(url);
  git_remote* raw = nullptr;
  check(git_remote_create_detached(&raw, access.git_url().c_str()), "name the hub " + access.hub().shown());
  RemotePtr remote(raw);
  RemoteRefs listed = access.list(remote.get(), "list the hub's branches");
  return std::make_unique<RemoteHubRepo>(url, std::move(listed.refs), std::move(listed.head_branch));
}

std::optional<git_oid> RemoteHubRepo::tip(const std::string& branch) const {
  const std::string name = "refs/heads/" + branch;
  for (const auto& [ref, oid] : refs_)
    if (ref == name) return oid;
  return std::nullopt;
}

std::string RemoteHubRepo::default_branch() const {
  std::vector<std::string> branches;
  for (const auto& [ref, oid] : refs_)
    if (ref.rfind("refs/heads/", 0) == 0) branches.push_back(ref.substr(11));
  if (std::string branch = pick_default_branch(head_branch_, branches); !branch.empty()) return branch;
  throw Error(Errc::not_bootstrapped,
              "the hub " + parse_hub_location(url_, ".").shown() +
                  (refs_.empty() ? " has no branch yet; `swarm up --hub URL` seeds an empty hub"
                                 : " has no default branch: its HEAD names none of its branches; set it on the hub "
                                   "with `git symbolic-ref HEAD refs/heads/BRANCH`"));
}

std::optional<std::string> RemoteHubRepo::branch_tip(const std::string& branch) const {
  auto oid = tip(branch);
  if (!oid) return std::nullopt;
  return hex(*oid);
}

bool RemoteHubRepo::has_commits_beyond_default(const std::string& branch) const {
  auto tip_oid = tip(branch);
  if (!tip_oid) return false;
  const std::string base_branch = default_branch();
  auto base_oid = tip(base_branch);
  if (git_oid_equal(&*tip_oid, &*base_oid)) return false;
  // Both histories are needed to compare them: fetched into a scratch
  // repository that goes right after.
  ScratchRepo scratch("hub");
  git_repository* repo = scratch.repo.get();
  RemoteAccess access(url_);
  RemotePtr remote = access.hub_remote(repo);
  StringArray specs({"+refs/heads/" + branch + ":refs/compare/tip", "+refs/heads/" + base_branch + ":refs/compare/base"});
  git_fetch_options options = GIT_FETCH_OPTIONS_INIT;
  options.callbacks = access.callbacks();
  access.run("fetch " + branch + " from the hub",
             [&] { return git_remote_fetch(remote.get(), specs.get(), &options, nullptr); });
  size_t ahead = 0, behind = 0;
  check(git_graph_ahead_behind(&ahead, &behind, repo, &*tip_oid, &*base_oid), "compare " + branch);
  return ahead > 0;
}

std::unique_ptr<HubBackend> open_any_hub(const std::string& hub) {
  HubLocation where = parse_hub_location(hub, "/");
  if (!where.remote()) return HubRepo::open(where.path());
  return RemoteHubRepo::open(hub);
}

namespace {

// The hub at `hub` as `listed` says it is: a remote one from that listing
// (no second connection), a local one opened.
std::unique_ptr<HubBackend> hub_as_listed(const RemoteAccess& access, const std::string& hub, RemoteRefs listed) {
  if (!access.hub().remote()) return HubRepo::open(access.hub().path());
  return std::make_unique<RemoteHubRepo>(hub, std::move(listed.refs), std::move(listed.head_branch));
}

}  // namespace

std::unique_ptr<HubBackend> prepare_hub(const std::string& hub, const std::filesystem::path& source,
                                        const std::filesystem::path& scratch, bool* seeded) {
  ensure_initialized();
  *seeded = false;
  RemoteAccess access(hub);
  git_remote* detached_raw = nullptr;
  check(git_remote_create_detached(&detached_raw, access.git_url().c_str()), "name the hub " + access.hub().shown());
  RemotePtr detached(detached_raw);
  if (RemoteRefs listed = access.list(detached.get(), "list the hub's branches"); !listed.refs.empty()) {
    access.require_push_access(detached.get());
    return hub_as_listed(access, hub, std::move(listed));
  }
  RemovedOnExit remove{scratch};
  auto seed = HubRepo::create(scratch, source);
  const std::string branch = seed->default_branch();
  git_repository* repo_raw = nullptr;
  check(git_repository_open_bare(&repo_raw, scratch.c_str()), "open the seed of the hub");
  RepositoryPtr repo(repo_raw);
  RemotePtr remote = access.hub_remote(repo.get());
  StringArray specs({"refs/heads/" + branch + ":refs/heads/" + branch});
  git_push_options options = GIT_PUSH_OPTIONS_INIT;
  options.callbacks = access.callbacks();
  access.run("seed the hub with " + branch, [&] { return git_remote_push(remote.get(), specs.get(), &options); },
             RemoteAccess::Direction::push);
  *seeded = access.rejected().empty();
  if (!*seeded) {
    // Another host's `up` seeded it first: its branch is as good as ours.
    if (RemoteRefs listed = access.list(detached.get(), "list the hub's branches"); !listed.refs.empty())
      return hub_as_listed(access, hub, std::move(listed));
    throw Error(Errc::conflict, "the hub " + access.hub().shown() + " refused its first branch: " +
                                    access.rejected().front());
  }
  if (access.hub().remote())  // its HEAD is the server's to set
    return hub_as_listed(access, hub, access.list(detached.get(), "list the hub's branches"));
  // A local bare repository made with another initial branch: HEAD names the seed.
  RepositoryPtr target = open_local_hub(access.hub().path(), hub);
  if (git_repository_head_unborn(target.get()) == 1)
    check(git_repository_set_head(target.get(), ("refs/heads/" + branch).c_str()), "point the hub's HEAD at " + branch);
  return HubRepo::open(access.hub().path());
}

}  // namespace swarm::git
