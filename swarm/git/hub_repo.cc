#include "swarm/git/repos.h"

#include "swarm/error.h"

namespace swarm::git {

namespace fs = std::filesystem;

namespace {

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
  return std::make_unique<HubRepo>(std::move(hub));
}

std::unique_ptr<HubRepo> HubRepo::open(const fs::path& path) {
  ensure_initialized();
  git_repository* raw = nullptr;
  if (git_repository_open_ext(&raw, path.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH | GIT_REPOSITORY_OPEN_BARE,
                              nullptr) != 0)
    throw Error(Errc::not_bootstrapped, "the hub " + path.string() + " is missing or not a git repository");
  RepositoryPtr repo(raw);
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

}  // namespace swarm::git
