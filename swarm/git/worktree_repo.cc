#include "swarm/git/repos.h"

#include <optional>
#include <string_view>

#include "swarm/base/error.h"
#include "swarm/git/remote_access.h"
#include "swarm/git/worktree.h"

namespace swarm::git {

namespace fs = std::filesystem;

namespace {

// The commit `base` names in a fresh clone of the hub: a branch of the hub,
// else a tag or a commit id. not_found naming it otherwise.
git_oid resolve_base(git_repository* repo, const std::string& base, const std::string& hub) {
  for (const std::string& spec : {"refs/remotes/origin/" + base, "refs/tags/" + base, base}) {
    git_object* raw = nullptr;
    if (git_revparse_single(&raw, repo, spec.c_str()) != 0) continue;
    ObjectPtr object(raw);
    git_object* peeled = nullptr;
    if (git_object_peel(&peeled, object.get(), GIT_OBJECT_COMMIT) != 0) continue;
    git_oid oid = *git_object_id(peeled);
    git_object_free(peeled);
    git_error_clear();
    return oid;
  }
  git_error_clear();
  throw Error(Errc::not_found, "--base " + base + " names no branch, tag or commit of the hub " + hub);
}

// Pushes `spec` (one refspec) from `repo` to the hub; a rejection is a conflict naming `what`.
void push_spec(git_repository* repo, RemoteAccess& access, std::string spec, const std::string& what) {
  RemotePtr remote = access.hub_remote(repo);
  StringArray specs({std::move(spec)});
  git_push_options options = GIT_PUSH_OPTIONS_INIT;
  options.callbacks = access.callbacks();
  access.run(what, [&] { return git_remote_push(remote.get(), specs.get(), &options); }, RemoteAccess::Direction::push);
  if (!access.rejected().empty())
    throw Error(Errc::conflict, what + ": the hub rejected " + access.rejected().front());
}

// The hub's `branch` (as cloned) kept under `prefix`/heads/<branch>: returns that ref.
std::string keep_branch(git_repository* repo, RemoteAccess& access, const std::string& branch, const std::string& prefix) {
  const std::string kept = prefix + "/heads/" + branch;
  push_spec(repo, access, "refs/remotes/origin/" + branch + ":" + kept, "keep " + branch + " under " + kept);
  return kept;
}

// Moves the hub's `branch` from `from` to `to` (any commit), only if it is still at `from`.
void move_hub_branch(git_repository* repo, RemoteAccess& access, const std::string& branch, const git_oid& from,
                     const git_oid& to) {
  const std::string temp = "refs/swarm-base/" + branch;
  git_reference* raw = nullptr;
  check(git_reference_create(&raw, repo, temp.c_str(), &to, 1, "swarm join --base"), "name the base");
  git_reference_free(raw);
  access.expect_remote("refs/heads/" + branch, from);
  try {
    push_spec(repo, access, "+" + temp + ":refs/heads/" + branch, "move " + branch + " to the base");
  } catch (const Error& e) {
    if (!access.moved()) throw;
    throw Error(Errc::conflict, branch + " moved on the hub while it was being based anew; nothing was lost, join again");
  }
  access.expect_remote("", from);
  check(git_reference_create(&raw, repo, ("refs/remotes/origin/" + branch).c_str(), &to, 1, "swarm: based"),
        "remember the base");
  git_reference_free(raw);
}

// Sets the hub's `branch` to `to` (a commit of the clone): from `from`
// when the hub has it (a compare-and-swap), else made anew.
void set_hub_branch(git_repository* repo, RemoteAccess& access, const std::string& branch,
                    const std::optional<git_oid>& from, const git_oid& to) {
  if (from) {
    if (!git_oid_equal(&*from, &to)) move_hub_branch(repo, access, branch, *from, to);
    return;
  }
  const std::string temp = "refs/swarm-base/" + branch;
  git_reference* raw = nullptr;
  check(git_reference_create(&raw, repo, temp.c_str(), &to, 1, "swarm join"), "name the start");
  git_reference_free(raw);
  push_spec(repo, access, temp + ":refs/heads/" + branch, "make " + branch + " on the hub");
  check(git_reference_create(&raw, repo, ("refs/remotes/origin/" + branch).c_str(), &to, 1, "swarm: started"),
        "remember the start");
  git_reference_free(raw);
}

// Another task's start (WorktreeStart::other_task): the slot's unlanded
// branch kept (parked when it is that task's closed head), then the hub's
// branch moved to where this task's work starts. Returns that commit.
git_oid start_other_task(git_repository* repo, RemoteAccess& access, const std::string& branch,
                         const std::optional<git_oid>& own, bool landed, const std::optional<git_oid>& onto,
                         const WorktreeStart& from, WorktreeStarted& out) {
  std::optional<git_oid> resume;
  if (!from.resume.empty()) {
    git_oid id;
    if (git_reference_name_to_id(&id, repo, ("refs/remotes/origin/" + from.resume).c_str()) == 0) resume = id;
    git_error_clear();
  }
  if (!resume && !onto)
    throw Error(Errc::not_bootstrapped, "the hub " + access.hub().shown() + " has no default branch to start " +
                                            branch + " from: its HEAD names none of its branches");
  if (own && !landed) {
    if (!from.park_as.empty() && hex(*own) == from.park_if_at) {
      push_spec(repo, access, "+refs/remotes/origin/" + branch + ":refs/heads/" + from.park_as,
                "park " + branch + " at " + from.park_as);
      out.parked = from.park_as;
    } else {
      out.kept_ref = keep_branch(repo, access, branch, from.recovery_prefix);
    }
  }
  const git_oid start = resume ? *resume : *onto;
  set_hub_branch(repo, access, branch, own, start);
  out.from = resume ? "parked" : "onto";
  if (resume) out.resumed_id = hex(*resume);
  return start;
}

}  // namespace

WorktreeRepo::WorktreeRepo(RepositoryPtr repo, fs::path path, std::string slot, std::string hub)
    : repo_(std::move(repo)), path_(std::move(path)), slot_(std::move(slot)), hub_(std::move(hub)) {}

namespace {

// The clone's origin, made from the hub's URL alone: no insteadOf of any
// git config rewrites where the clone fetches from.
int create_origin(git_remote** out, git_repository* repo, const char* name, const char* url, void* /*payload*/) {
  git_remote_create_options options = GIT_REMOTE_CREATE_OPTIONS_INIT;
  options.repository = repo;
  options.name = name;
  options.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF;
  return git_remote_create_with_opts(out, url, &options);
}

// What a start that cannot be checked out is called in the refusal.
std::string unusable_of(const std::string& started_from, const std::string& branch, const WorktreeStart& from,
                        const git_oid& start) {
  const std::string what = started_from == "branch"   ? branch
                           : started_from == "base"   ? from.base
                           : started_from == "parked" ? from.resume
                                                      : "the hub's default branch";
  return "the tree of " + what + " (" + hex(start).substr(0, 12) + ") cannot be checked out: ";
}

// Checks out the start of the slot's branch in its fresh clone. A tree that
// cannot be checked out (one agent's bad tree landed before lands refused
// them) is named, not failed on half way (exit 3).
void check_out_start(git_repository* repo, git_commit* commit, const std::string& branch, const std::string& slot,
                     const std::string& unusable) {
  git_tree* tree_raw = nullptr;
  check(git_commit_tree(&tree_raw, commit), "read the tree of " + branch);
  TreePtr tree(tree_raw);
  try {
    if (!write_tree_plainly(repo, tree.get())) {
      if (auto problem = tree_problem(repo, tree.get(), nullptr))
        throw Error(Errc::conflict, unusable + *problem + "; nothing of slot " + slot + " was made");
      // FORCE: the folder is the clone's own, made just now, with nothing but .git in it.
      git_checkout_options checkout = GIT_CHECKOUT_OPTIONS_INIT;
      checkout.checkout_strategy = GIT_CHECKOUT_FORCE;
      check(git_checkout_head(repo, &checkout), "check out " + branch);
    }
  } catch (const Error& e) {
    if (e.kind() == Errc::conflict) throw;
    auto problem = tree_problem(repo, tree.get(), nullptr);
    if (!problem) throw;
    throw Error(Errc::conflict, unusable + *problem +
                                    "; nothing of slot " + slot + " was made (fix that branch on the hub, or "
                                    "start from another commit with --base REF)");
  }
}

}  // namespace

std::unique_ptr<WorktreeRepo> WorktreeRepo::create(const std::string& hub, const fs::path& path, const std::string& slot,
                                                   const WorktreeStart& from, WorktreeStarted* started) {
  ensure_initialized();
  RemoteAccess access(hub);
  // No checkout by the clone: the slot's branch is checked out once, below.
  // (Checking out the default branch and then the slot's made libgit2 hash
  // every file again: written within the index's second, they are "racily
  // clean", and each hash looked up attributes, resolving the path anew.)
  git_clone_options options = GIT_CLONE_OPTIONS_INIT;
  options.checkout_opts.checkout_strategy = GIT_CHECKOUT_NONE;
  options.fetch_opts.callbacks = access.callbacks();
  options.remote_cb = create_origin;
  git_repository* raw = nullptr;
  // Without the password: libgit2 writes the URL into the clone's config
  // and reflogs; the password goes only into the credential the hub asks for.
  const std::string url = access.git_url();
  access.run("clone the hub into " + path.string(), [&] { return git_clone(&raw, url.c_str(), path.c_str(), &options); });
  RepositoryPtr repo(raw);

  const std::string branch = "swarm/" + slot;
  WorktreeStarted out;
  git_oid own;
  const bool has_own = git_reference_name_to_id(&own, repo.get(), ("refs/remotes/origin/" + branch).c_str()) == 0;
  git_error_clear();
  const auto onto = default_start(repo.get());
  // Landed: the default branch has it all (or it never moved off it).
  const bool landed = has_own && onto &&
                      (git_oid_equal(&own, &*onto) || git_graph_descendant_of(repo.get(), &*onto, &own) == 1);
  git_error_clear();
  git_oid start;
  if (from.base.empty() && from.other_task) {
    start = start_other_task(repo.get(), access, branch, has_own ? std::optional(own) : std::nullopt, landed, onto,
                             from, out);
  } else if (!from.base.empty()) {
    start = resolve_base(repo.get(), from.base, access.hub().shown());
    out.from = "base";
    if (has_own && !git_oid_equal(&own, &start)) {
      if (!landed) out.kept_ref = keep_branch(repo.get(), access, branch, from.recovery_prefix);
      move_hub_branch(repo.get(), access, branch, own, start);
    }
  } else if (has_own && !landed) {
    start = own;
    out.from = "branch";
  } else {
    if (!onto)
      throw Error(Errc::not_bootstrapped, "the hub " + access.hub().shown() + " has no default branch to start slot " +
                                              slot + " from: its HEAD names none of its branches");
    start = *onto;
    out.from = "onto";
  }
  // The hub has the branch now (or had it): the clone's tracks it.
  const bool resumed = has_own || (from.base.empty() && from.other_task);
  if (started != nullptr) *started = out;
  auto commit = lookup_commit(repo.get(), start, "read the start of " + branch);

  git_reference* ref_raw = nullptr;
  check(git_branch_create(&ref_raw, repo.get(), branch.c_str(), commit.get(), 0), "create branch " + branch);
  ReferencePtr ref(ref_raw);
  if (resumed)
    check(git_branch_set_upstream(ref.get(), ("origin/" + branch).c_str()), "track origin/" + branch);

  check(git_repository_set_head(repo.get(), ("refs/heads/" + branch).c_str()), "switch to " + branch);
  check_out_start(repo.get(), commit.get(), branch, slot, unusable_of(out.from, branch, from, start));
  return std::make_unique<WorktreeRepo>(std::move(repo), fs::weakly_canonical(path), slot, hub);
}

std::unique_ptr<WorktreeRepo> WorktreeRepo::open(const fs::path& path, const std::string& slot, const std::string& hub) {
  ensure_initialized();
  git_repository* raw = nullptr;
  if (git_repository_open_ext(&raw, path.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr) != 0)
    throw Error(Errc::not_found, "no worktree for slot " + slot + " at " + path.string());
  return std::make_unique<WorktreeRepo>(RepositoryPtr(raw), fs::weakly_canonical(path), slot, hub);
}

void WorktreeRepo::remember_pushed(const std::string& branch) const {
  git_oid tip;
  if (git_reference_name_to_id(&tip, repo_.get(), ("refs/heads/" + branch).c_str()) != 0) return;
  git_reference* raw = nullptr;
  if (git_reference_create(&raw, repo_.get(), ("refs/remotes/origin/" + branch).c_str(), &tip, 1,
                           "swarm: pushed to the hub") == 0)
    git_reference_free(raw);
  git_error_clear();
}

void WorktreeRepo::push_branch_to(const std::string& target_ref) {
  RemoteAccess access(hub_);
  RemotePtr remote = access.hub_remote(repo_.get());
  StringArray specs({"refs/heads/" + branch_name() + ":" + target_ref});
  git_push_options options = GIT_PUSH_OPTIONS_INIT;
  options.callbacks = access.callbacks();
  access.run("push " + branch_name() + " to the hub", [&] { return git_remote_push(remote.get(), specs.get(), &options); },
             RemoteAccess::Direction::push);
  if (!access.rejected().empty())
    throw Error(Errc::conflict, "the hub rejected the push of " + access.rejected().front());
  if (target_ref == "refs/heads/" + branch_name()) remember_pushed(branch_name());
}

void WorktreeRepo::push() {
  try {
    push_branch_to("refs/heads/" + branch_name());
  } catch (const Error& e) {
    if (e.kind() != Errc::conflict) throw;
    // Fast-forward only: the hub's branch has commits this one lacks (pushed
    // from elsewhere). Nothing moved on either side; both heads named.
    std::string theirs = "unknown";
    try {
      RemoteAccess access(hub_);
      RemotePtr remote = access.hub_remote(repo_.get());
      for (const auto& [name, oid] : access.list(remote.get(), "list the hub's branches").refs)
        if (name == "refs/heads/" + branch_name()) theirs = hex(oid);
    } catch (const Error&) {
      // The head stays unnamed; the refusal is what matters.
    }
    throw Error(Errc::conflict, branch_name() + " has diverged from the hub's: the worktree's head is " +
                                    branch_tip().value_or("none") + ", the hub's is " + theirs +
                                    "; nothing was pushed and nothing is lost: merge the hub's branch into the "
                                    "worktree (git -C " + path_.string() + " pull --no-rebase origin " +
                                    branch_name() + "), then commit again");
  }
}

std::vector<Change> WorktreeRepo::changes() const {
  git_status_options options = GIT_STATUS_OPTIONS_INIT;
  options.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
  // Ignored files are work too (a .env, a results file): salvage keeps them.
  // An ignored folder comes as one entry, kept whole.
  options.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
                  GIT_STATUS_OPT_INCLUDE_IGNORED | GIT_STATUS_OPT_RENAMES_HEAD_TO_INDEX |
                  GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
  git_status_list* raw = nullptr;
  check(git_status_list_new(&raw, repo_.get(), &options), "read the status of " + path_.string());
  StatusListPtr list(raw);
  std::vector<Change> out;
  for (size_t i = 0, n = git_status_list_entrycount(list.get()); i < n; ++i) {
    const git_status_entry* e = git_status_byindex(list.get(), i);
    const git_diff_delta* delta = e->index_to_workdir ? e->index_to_workdir : e->head_to_index;
    if (delta == nullptr) continue;
    Change change;
    change.path = delta->new_file.path ? delta->new_file.path : delta->old_file.path;
    unsigned s = e->status;
    if (s & GIT_STATUS_IGNORED) change.code = '!';
    else if (s & GIT_STATUS_WT_NEW) change.code = '?';
    else if (s & (GIT_STATUS_WT_DELETED | GIT_STATUS_INDEX_DELETED)) change.code = 'D';
    else if (s & GIT_STATUS_INDEX_NEW) change.code = 'A';
    else if (s & (GIT_STATUS_WT_RENAMED | GIT_STATUS_INDEX_RENAMED)) change.code = 'R';
    else if (s & (GIT_STATUS_WT_TYPECHANGE | GIT_STATUS_INDEX_TYPECHANGE)) change.code = 'T';
    else if (s & (GIT_STATUS_WT_MODIFIED | GIT_STATUS_INDEX_MODIFIED)) change.code = 'M';
    else continue;  // ignored, unreadable or conflicted entries carry nothing to salvage
    out.push_back(change);
  }
  return out;
}

std::optional<std::string> WorktreeRepo::branch_tip() const {
  git_oid tip;
  if (git_reference_name_to_id(&tip, repo_.get(), ("refs/heads/" + branch_name()).c_str()) != 0) return std::nullopt;
  return hex(tip);
}

bool WorktreeRepo::hub_lacks_branch() {
  git_oid tip;
  if (git_reference_name_to_id(&tip, repo_.get(), ("refs/heads/" + branch_name()).c_str()) != 0) {
    git_error_clear();
    return false;
  }
  // What the hub has now (one listing), not what this clone last pushed:
  // the hub's branch may have been deleted or moved back since.
  RemoteAccess access(hub_);
  RemotePtr remote = access.hub_remote(repo_.get());
  for (const auto& [name, oid] : access.list(remote.get(), "list the hub's branches").refs) {
    if (name != "refs/heads/" + branch_name()) continue;
    if (git_oid_equal(&oid, &tip)) return false;
    // The hub ahead of this clone (its tip known here and descending from ours): nothing of ours is missing.
    if (git_graph_descendant_of(repo_.get(), &oid, &tip) == 1) return false;
    git_error_clear();
    return true;
  }
  return has_commits_beyond_default();  // not on the hub: only commits of its own are worth it
}

bool WorktreeRepo::has_commits_beyond_default() const {
  git_oid tip, base;
  if (git_reference_name_to_id(&tip, repo_.get(), ("refs/heads/" + branch_name()).c_str()) != 0) return false;
  auto start = default_start(repo_.get());
  if (!start) return true;
  base = *start;
  size_t ahead = 0, behind = 0;
  check(git_graph_ahead_behind(&ahead, &behind, repo_.get(), &tip, &base), "compare " + branch_name());
  return ahead > 0;
}

}  // namespace swarm::git
