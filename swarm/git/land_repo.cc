// Landing on the hub (GitBackend::open_land): merges made in memory, a
// check's checkout kept between lands, and the onto branch moved only by a
// compare-and-swap the hub itself enforces (adr/0021). A local hub is
// worked on in place: its ref is moved by git_reference_create_matching,
// under the ref's lock file, only from the tip the merge was made on. A
// network hub is fetched into a cache repository in the workspace and moved
// by a push that goes only when the hub still has that tip (checked in the
// push negotiation; receive-pack checks the old value again as it locks).
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string_view>

#include "swarm/base/error.h"
#include "swarm/git/remote_access.h"
#include "swarm/git/repos.h"
#include "swarm/git/worktree.h"

namespace swarm::git {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kSlotPrefix = "refs/heads/swarm/";
// Where the cache names the commit it pushes (a push takes refs, not ids).
constexpr const char* kPushRef = "refs/swarm-land/push";

git_oid oid_of(const std::string& text) {
  git_oid oid;
  if (git_oid_fromstr(&oid, text.c_str()) != 0) throw Error(Errc::internal, "not a commit id: " + text);
  return oid;
}

// An exclusive flock on `path` while it lives (a fetch into the cache: two
// at once would fight over its refs).
class FolderLock {
 public:
  explicit FolderLock(const fs::path& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0)
      throw Error(Errc::filesystem, "cannot lock " + path.string() + ": " + std::strerror(errno));
  }
  ~FolderLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

// Throws bad_input naming the first link found below `root`'s `parts`: a
// cache whose refs or objects lead elsewhere is never fetched into.
void refuse_links(const fs::path& root, std::initializer_list<const char*> parts) {
  std::error_code ec;
  for (const char* part : parts) {
    const fs::path top = root / part;
    if (fs::is_symlink(fs::symlink_status(top, ec)))
      throw Error(Errc::bad_input, top.string() + " is a link: swarm never writes through it; remove " + root.string());
    for (auto it = fs::recursive_directory_iterator(top, fs::directory_options::none, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_symlink(ec))
        throw Error(Errc::bad_input, it->path().string() + " is a link: swarm never writes through it; remove " +
                                         root.string());
  }
}

RepositoryPtr open_or_init(const fs::path& path, bool bare) {
  git_repository* raw = nullptr;
  unsigned flags = GIT_REPOSITORY_OPEN_NO_SEARCH | (bare ? GIT_REPOSITORY_OPEN_BARE : 0);
  if (git_repository_open_ext(&raw, path.c_str(), flags, nullptr) == 0) return RepositoryPtr(raw);
  git_error_clear();
  check(git_repository_init(&raw, path.c_str(), bare ? 1 : 0), "make the repository " + path.string());
  return RepositoryPtr(raw);
}

class LandRepo : public LandBackend {
 public:
  LandRepo(std::string hub, RepositoryPtr repo, fs::path objects, fs::path cache)
      : hub_(std::move(hub)), repo_(std::move(repo)), objects_(std::move(objects)), cache_(std::move(cache)) {}

  bool remote() const { return !cache_.empty(); }

  std::string default_branch() override {
    if (!remote()) {
      git_reference* raw = nullptr;
      if (git_reference_lookup(&raw, repo_.get(), "HEAD") == 0) {
        ReferencePtr head(raw);
        const char* target = git_reference_symbolic_target(head.get());
        if (target != nullptr && std::string_view(target).rfind("refs/heads/", 0) == 0) head_branch_ = target + 11;
      }
      git_error_clear();
    }
    std::vector<std::string> branches;
    for_each_branch("refs/heads/", [&](const std::string& name, const git_oid&) { branches.push_back(name); });
    std::string branch = pick_default_branch(head_branch_, branches);
    if (branch.empty())
      throw Error(Errc::not_bootstrapped, "the hub " + parse_hub_location(hub_, "/").shown() +
                                              " has no default branch; name one with --onto");
    return branch;
  }

  void refresh() override {
    if (!remote()) return;
    FolderLock lock(cache_ / "swarm-fetch.lock");
    refuse_links(cache_, {"objects", "refs"});
    RemoteAccess access(hub_);
    RemotePtr remote = access.hub_remote(repo_.get());
    head_branch_ = access.list(remote.get(), "list the hub's branches").head_branch;
    StringArray specs({"+refs/heads/*:refs/heads/*"});
    git_fetch_options options = GIT_FETCH_OPTIONS_INIT;
    options.callbacks = access.callbacks();
    options.prune = GIT_FETCH_PRUNE;
    options.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
    options.update_fetchhead = 0;
    access.run("fetch the hub's branches", [&] { return git_remote_fetch(remote.get(), specs.get(), &options, "swarm land"); });
  }

  std::optional<std::string> tip(const std::string& branch) override {
    auto oid = tip_oid(branch);
    if (!oid) return std::nullopt;
    return hex(*oid);
  }

  std::vector<BranchInfo> slot_branches(const std::string& onto) override {
    auto base = tip_oid(onto);
    std::vector<BranchInfo> out;
    for_each_branch(std::string(kSlotPrefix), [&](const std::string& slot, const git_oid& head) {
      BranchInfo info;
      info.slot = slot;
      info.head = hex(head);
      if (auto commit = lookup(head)) info.committed_at = git_commit_time(commit.get());
      if (base) {
        size_t ahead = 0, behind = 0;
        if (git_graph_ahead_behind(&ahead, &behind, repo_.get(), &head, &*base) == 0) info.ahead = ahead;
        info.landed = git_oid_equal(&head, &*base) || git_graph_descendant_of(repo_.get(), &*base, &head) == 1;
      }
      git_error_clear();
      out.push_back(std::move(info));
    });
    return out;
  }

  MergePlan plan(const std::string& onto, const std::string& branch, const std::string& message,
                 const CommitAuthor& author) override {
    auto onto_oid = tip_oid(onto);
    if (!onto_oid) throw Error(Errc::not_found, "the hub has no branch " + onto + " to land on");
    return plan_from(*onto_oid, onto, branch, message, author);
  }

  MergePlan plan_on(const std::string& from, const std::string& branch, const std::string& message,
                    const CommitAuthor& author) override {
    return plan_from(oid_of(from), "the batch's candidate", branch, message, author);
  }

  std::vector<Foreseen> foresee(const std::string& onto, const std::vector<std::string>& branches,
                                const std::string& focus) override {
    auto onto_oid = tip_oid(onto);
    if (!onto_oid) throw Error(Errc::not_found, "the hub has no branch " + onto + " to compare the slots with");
    std::vector<std::pair<std::string, git_oid>> tips;
    for (const auto& branch : branches)
      if (auto tip = tip_oid(branch)) tips.emplace_back(branch, *tip);
    return foresee_conflicts(repo_.get(), onto, *onto_oid, tips, focus);
  }

  BranchDiff diff(const std::string& onto, const std::string& branch) override {
    auto tip = tip_oid(branch);
    if (!tip) throw Error(Errc::not_found, "the hub has no branch " + branch);
    auto onto_oid = tip_oid(onto);
    git_oid base;
    const bool has_base = onto_oid && git_merge_base(&base, repo_.get(), &*tip, &*onto_oid) == 0;
    git_error_clear();
    BranchDiff out = diff_of(repo_.get(), has_base ? &base : nullptr, *tip);
    if (has_base) out.base = hex(base);
    return out;
  }

  std::vector<std::string> branch_changes(const std::string& onto, const std::string& branch) override {
    auto tip = tip_oid(branch);
    if (!tip) throw Error(Errc::not_found, "the hub has no branch " + branch);
    auto onto_oid = tip_oid(onto);
    git_oid base;
    const bool has_base = onto_oid && git_merge_base(&base, repo_.get(), &*tip, &*onto_oid) == 0;
    git_error_clear();
    return changed_paths(repo_.get(), has_base ? &base : nullptr, *tip);
  }

  void check_out(const std::string& commit, const fs::path& folder) override {
    check_out_land(folder, objects_, oid_of(commit));
  }

  std::optional<std::string> unusable(const std::string& commit, const std::string& base) override {
    const git_oid id = oid_of(commit);
    if (base.empty()) return commit_tree_problem(repo_.get(), id, nullptr);
    const git_oid base_id = oid_of(base);
    return commit_tree_problem(repo_.get(), id, &base_id);
  }

  bool advance(const std::string& onto, const std::string& from, const std::string& to) override {
    const git_oid from_oid = oid_of(from), to_oid = oid_of(to);
    const std::string ref = "refs/heads/" + onto;
    if (!remote()) {
      git_reference* raw = nullptr;
      int rc = git_reference_create_matching(&raw, repo_.get(), ref.c_str(), &to_oid, 1, &from_oid, "swarm land");
      if (rc == GIT_EMODIFIED || rc == GIT_ELOCKED) {
        git_error_clear();
        return false;
      }
      check(rc, "move " + onto + " in the hub");
      git_reference_free(raw);
      return true;
    }
    git_reference* named = nullptr;
    check(git_reference_create(&named, repo_.get(), kPushRef, &to_oid, 1, "swarm land"), "name the commit to push");
    git_reference_free(named);
    RemoteAccess access(hub_);
    access.expect_remote(ref, from_oid);
    RemotePtr remote = access.hub_remote(repo_.get());
    StringArray specs({std::string(kPushRef) + ":" + ref});
    git_push_options options = GIT_PUSH_OPTIONS_INIT;
    options.callbacks = access.callbacks();
    try {
      access.run("push " + onto + " to the hub", [&] { return git_remote_push(remote.get(), specs.get(), &options); },
                 RemoteAccess::Direction::push);
    } catch (const Error& e) {
      if (access.moved() || e.kind() == Errc::conflict) return false;
      throw;
    }
    if (!access.rejected().empty()) return false;
    git_reference* raw = nullptr;
    if (git_reference_create(&raw, repo_.get(), ref.c_str(), &to_oid, 1, "swarm land: pushed") == 0)
      git_reference_free(raw);
    git_error_clear();
    return true;
  }

 private:
  // How `branch` lands on the commit `onto_oid` (named `onto` in errors).
  MergePlan plan_from(const git_oid& onto_oid, const std::string& onto, const std::string& branch,
                      const std::string& message, const CommitAuthor& author) {
    auto branch_oid = tip_oid(branch);
    if (!branch_oid) throw Error(Errc::not_found, "the hub has no branch " + branch);
    MergePlan plan;
    plan.from = hex(onto_oid);
    plan.head = hex(*branch_oid);
    if (git_oid_equal(&onto_oid, &*branch_oid) ||
        git_graph_descendant_of(repo_.get(), &onto_oid, &*branch_oid) == 1) {
      plan.kind = MergePlan::Kind::landed;
      plan.to = plan.from;
      return plan;
    }
    if (git_graph_descendant_of(repo_.get(), &*branch_oid, &onto_oid) == 1) {
      plan.kind = MergePlan::Kind::fast_forward;
      plan.to = hex(*branch_oid);
      return plan;
    }
    git_error_clear();
    auto ours = lookup_commit(repo_.get(), onto_oid, "read " + onto);
    auto theirs = lookup_commit(repo_.get(), *branch_oid, "read " + branch);
    git_merge_options options = GIT_MERGE_OPTIONS_INIT;
    git_index* index_raw = nullptr;
    check(git_merge_commits(&index_raw, repo_.get(), ours.get(), theirs.get(), &options),
          "merge " + branch + " into " + onto);
    IndexPtr index(index_raw);
    if (git_index_has_conflicts(index.get())) {
      plan.kind = MergePlan::Kind::conflict;
      plan.conflicts = conflict_paths(index.get());
      return plan;
    }
    git_oid tree_id;
    check(git_index_write_tree_to(&tree_id, index.get(), repo_.get()), "write the merged tree");
    git_tree* tree_raw = nullptr;
    check(git_tree_lookup(&tree_raw, repo_.get(), &tree_id), "read the merged tree");
    TreePtr tree(tree_raw);
    git_signature* sig_raw = nullptr;
    check(git_signature_now(&sig_raw, author.name.c_str(), author.email.c_str()), "make a signature");
    SignaturePtr sig(sig_raw);
    const git_commit* parents[] = {ours.get(), theirs.get()};
    git_oid made;
    check(git_commit_create(&made, repo_.get(), nullptr, sig.get(), sig.get(), nullptr, message.c_str(), tree.get(), 2,
                            parents),
          "write the merge commit");
    plan.kind = MergePlan::Kind::merge;
    plan.to = hex(made);
    return plan;
  }

  std::optional<git_oid> tip_oid(const std::string& branch) {
    git_oid oid;
    if (git_reference_name_to_id(&oid, repo_.get(), ("refs/heads/" + branch).c_str()) != 0) {
      git_error_clear();
      return std::nullopt;
    }
    return oid;
  }
  CommitPtr lookup(const git_oid& oid) {
    git_commit* raw = nullptr;
    if (git_commit_lookup(&raw, repo_.get(), &oid) != 0) {
      git_error_clear();
      return nullptr;
    }
    return CommitPtr(raw);
  }
  // `visit(name after prefix, tip)` for each direct ref under `prefix`.
  template <typename Visit>
  void for_each_branch(const std::string& prefix, Visit&& visit) {
    for_each_direct_ref(repo_.get(), prefix, "list the hub's branches",
                        [&](const std::string& name, const git_oid& tip) { visit(name.substr(prefix.size()), tip); });
  }

  std::string hub_;
  RepositoryPtr repo_;  // the hub itself, or the cache of a network hub
  fs::path objects_;    // repo_'s object folder: the checkouts' alternate
  fs::path cache_;      // empty for a local hub
  std::string head_branch_;
};

}  // namespace

std::unique_ptr<LandBackend> open_land(const std::string& hub, const fs::path& cache) {
  ensure_initialized();
  HubLocation where = parse_hub_location(hub, "/");
  if (!where.remote()) {
    RepositoryPtr repo = open_local_hub(where.path(), hub);
    fs::path objects = fs::path(git_repository_path(repo.get())) / "objects";
    return std::make_unique<LandRepo>(hub, std::move(repo), objects, fs::path());
  }
  RepositoryPtr repo = open_or_init(cache, true);
  fs::path objects = fs::path(git_repository_path(repo.get())) / "objects";
  auto land = std::make_unique<LandRepo>(hub, std::move(repo), objects, cache);
  land->refresh();
  return land;
}

}  // namespace swarm::git
