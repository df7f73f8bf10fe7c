// A slot's commit in its clone: the named paths (or every change) staged
// over the branch's tip, refused off the slot's branch, and committed only
// when the tree changed.
#include "swarm/git/repos.h"

#include <optional>
#include <string_view>

#include "swarm/base/error.h"
#include "swarm/git/worktree.h"

namespace swarm::git {

namespace fs = std::filesystem;

namespace {

// Keeps, of every changed path, the named ones and what lies under a named
// folder (payload: the names). Names match literally: "a*" is the file a*,
// never ab, and "dir[1]" is that folder.
int only_named(const char* path, const char* /*matched_pathspec*/, void* payload) {
  std::string_view p(path);
  for (const auto& name : *static_cast<const std::vector<std::string>*>(payload)) {
    if (p == name) return 0;
    if (p.size() > name.size() && p.compare(0, name.size(), name) == 0 && p[name.size()] == '/') return 0;
  }
  return 1;  // skip
}

}  // namespace

void WorktreeRepo::require_on_branch() const {
  git_reference* raw = nullptr;
  std::string head = "(detached)";
  if (git_repository_head(&raw, repo_.get()) == 0) {
    ReferencePtr ref(raw);
    if (git_reference_is_branch(ref.get())) head = git_reference_shorthand(ref.get());
  }
  if (head != branch_name())
    throw Error(Errc::bad_input, "the worktree of slot " + slot_ + " is on " + head + ", not " + branch_name() +
                                     "; check out " + branch_name() + " in " + path_.string() + " first");
}

void WorktreeRepo::require_paths_exist(git_index* index, git_tree* tip, const std::vector<std::string>& paths) const {
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::exists(fs::symlink_status(path_ / p, ec))) continue;  // on disk
    if (git_index_get_bypath(index, p.c_str(), 0) != nullptr) continue;  // staged
    size_t at = 0;
    if (git_index_find_prefix(&at, index, (p + "/").c_str()) == 0) continue;  // a staged folder
    git_tree_entry* entry = nullptr;
    int in_tip = git_tree_entry_bypath(&entry, tip, p.c_str());
    TreeEntryPtr owned(entry);
    if (in_tip == 0) continue;  // committed, and removed since (rm, or git rm)
    throw Error(Errc::bad_input, "path " + p + " matches no file in the worktree of slot " + slot_);
  }
}

void WorktreeRepo::stage(git_index* index, const std::vector<std::string>& paths) const {
  // add_all takes new and modified files (not ignored ones); update_all takes deletions.
  if (paths.empty()) {
    StringArray all({"*"});
    check(git_index_add_all(index, all.get(), GIT_INDEX_ADD_DEFAULT, nullptr, nullptr),
          "stage changes in " + path_.string());
    check(git_index_update_all(index, all.get(), nullptr, nullptr), "stage deletions in " + path_.string());
    return;
  }
  // No pathspec (libgit2's are patterns, and trim trailing spaces): every
  // changed path is offered to only_named, which keeps the named ones.
  auto* payload = const_cast<std::vector<std::string>*>(&paths);
  check(git_index_add_all(index, nullptr, GIT_INDEX_ADD_DEFAULT, only_named, payload),
        "stage changes in " + path_.string());
  check(git_index_update_all(index, nullptr, only_named, payload), "stage deletions in " + path_.string());
}

std::optional<std::string> WorktreeRepo::commit(const std::string& message, const std::vector<std::string>& paths,
                                                const CommitAuthor& author, const CommitGuard& guard) {
  require_on_branch();
  // A merge in progress (swarm sync's, or git pull's) is finished with both parents.
  if (merging()) return commit_merge(message, paths, author);
  git_index* index_raw = nullptr;
  check(git_repository_index(&index_raw, repo_.get()), "open the index of " + path_.string());
  IndexPtr index(index_raw);

  bool everything = paths.empty();
  for (const auto& p : paths) everything = everything || p == ".";
  const std::vector<std::string> named = everything ? std::vector<std::string>{} : paths;

  git_oid parent_id;
  check(git_reference_name_to_id(&parent_id, repo_.get(), ("refs/heads/" + branch_name()).c_str()),
        "read the tip of " + branch_name());
  auto parent = lookup_commit(repo_.get(), parent_id, "read the tip of " + branch_name());
  git_tree* parent_tree_raw = nullptr;
  check(git_commit_tree(&parent_tree_raw, parent.get()), "read the tree of " + branch_name());
  TreePtr parent_tree(parent_tree_raw);
  require_paths_exist(index.get(), parent_tree.get(), named);

  // With paths, like `git commit PATH...`: the commit is the branch tip plus
  // those paths, whatever else is staged. The index is reset to the tip in
  // memory only; what the user staged is read back from disk afterwards,
  // also when anything below fails.
  if (!everything) check(git_index_read_tree(index.get(), parent_tree.get()), "reset the index in memory");
  try {
    return commit_index(index.get(), parent.get(), parent_tree.get(), message, named, author, guard);
  } catch (...) {
    if (!everything) git_index_read(index.get(), true);
    throw;
  }
}

std::optional<std::string> WorktreeRepo::commit_index(git_index* index, git_commit* parent, git_tree* parent_tree,
                                                      const std::string& message, const std::vector<std::string>& named,
                                                      const CommitAuthor& author, const CommitGuard& guard) {
  const bool everything = named.empty();
  stage(index, named);
  git_oid tree_id;
  check(git_index_write_tree(&tree_id, index), "write the tree of the commit");

  std::optional<std::string> made;
  if (!git_oid_equal(&tree_id, git_tree_id(parent_tree))) {
    git_tree* tree_raw = nullptr;
    check(git_tree_lookup(&tree_raw, repo_.get(), &tree_id), "read the tree of the commit");
    TreePtr tree(tree_raw);
    // Asked before anything is written: the index on disk is still the user's.
    if (guard) guard(changed_paths(repo_.get(), parent_tree, tree.get()));
    made = write_commit(tree.get(), {parent}, message, author);
  }
  if (!everything) {
    // Back to what the user staged, with the named paths as committed.
    check(git_index_read(index, true), "read the index of " + path_.string());
    if (made) stage(index, named);
  }
  check(git_index_write(index), "write the index");
  return made;
}

}  // namespace swarm::git
