// The paths two trees (or two commits' trees) differ in: what a commit
// changes, what a branch changed since its merge base. Subtrees with the same
// id are never read, so the work grows with what changed, not with the tree.
#include <algorithm>

#include "swarm/base/error.h"
#include "swarm/git/repos.h"

namespace swarm::git {

using Paths = std::vector<std::string>;

// The tree of commit `oid`; null for a null oid (the empty tree).
TreePtr tree_of(git_repository* repo, const git_oid* oid) {
  if (oid == nullptr) return nullptr;
  auto commit = lookup_commit(repo, *oid, "read a commit");
  git_tree* raw = nullptr;
  check(git_commit_tree(&raw, commit.get()), "read a commit's tree");
  return TreePtr(raw);
}

namespace {

void changed_below(const git_tree* from, const git_tree* to, const std::string& prefix, Paths& out, git_repository* repo);

// Every path below `entry` (a tree) of `repo`, or the entry's own path.
void all_below(git_repository* repo, const git_tree_entry* entry, const std::string& path, Paths& out) {
  if (git_tree_entry_type(entry) != GIT_OBJECT_TREE) {
    out.push_back(path);
    return;
  }
  git_tree* raw = nullptr;
  check(git_tree_lookup(&raw, repo, git_tree_entry_id(entry)), "read a tree");
  TreePtr tree(raw);
  changed_below(nullptr, tree.get(), path + "/", out, repo);
}

// The paths that differ between `from` and `to` (either may be null: no
// tree), below `prefix`. Subtrees with the same id are never read, so the
// work grows with what changed, not with the tree's size.
void changed_below(const git_tree* from, const git_tree* to, const std::string& prefix, Paths& out,
                   git_repository* repo) {
  auto each = [&](const git_tree* mine, const git_tree* other, bool first) {
    for (std::size_t i = 0, n = mine ? git_tree_entrycount(mine) : 0; i < n; ++i) {
      const git_tree_entry* e = git_tree_entry_byindex(mine, i);
      const char* name = git_tree_entry_name(e);
      const git_tree_entry* o = other ? git_tree_entry_byname(other, name) : nullptr;
      const std::string path = prefix + name;
      if (o == nullptr) {
        all_below(repo, e, path, out);
        continue;
      }
      if (!first) continue;  // met from the first side already
      if (git_oid_equal(git_tree_entry_id(e), git_tree_entry_id(o)) &&
          git_tree_entry_filemode(e) == git_tree_entry_filemode(o))
        continue;
      const bool e_tree = git_tree_entry_type(e) == GIT_OBJECT_TREE, o_tree = git_tree_entry_type(o) == GIT_OBJECT_TREE;
      if (e_tree && o_tree) {
        git_tree *a = nullptr, *b = nullptr;
        check(git_tree_lookup(&a, repo, git_tree_entry_id(e)), "read a tree");
        TreePtr ta(a);
        check(git_tree_lookup(&b, repo, git_tree_entry_id(o)), "read a tree");
        TreePtr tb(b);
        changed_below(ta.get(), tb.get(), path + "/", out, repo);
        continue;
      }
      all_below(repo, e, path, out);
      if (e_tree != o_tree) all_below(repo, o, path, out);
    }
  };
  each(from, to, true);
  each(to, from, false);
}

// Every path added, changed or removed from commit `from` (null: nothing) to `to`.
}  // namespace

Paths changed_paths(git_repository* repo, const git_tree* from, const git_tree* to) {
  Paths out;
  changed_below(from, to, "", out, repo);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Paths changed_paths(git_repository* repo, const git_oid* from, const git_oid& to) {
  TreePtr old_tree = tree_of(repo, from), new_tree = tree_of(repo, &to);
  return changed_paths(repo, old_tree.get(), new_tree.get());
}


namespace {

int on_line(const git_diff_delta*, const git_diff_hunk*, const git_diff_line* line, void* payload) {
  auto* patch = static_cast<std::string*>(payload);
  if (line->origin == GIT_DIFF_LINE_CONTEXT || line->origin == GIT_DIFF_LINE_ADDITION ||
      line->origin == GIT_DIFF_LINE_DELETION)
    patch->push_back(line->origin);
  patch->append(line->content, line->content_len);
  return 0;
}

}  // namespace

BranchDiff diff_of(git_repository* repo, const git_oid* from, const git_oid& to) {
  TreePtr old_tree = tree_of(repo, from), new_tree = tree_of(repo, &to);
  git_diff* raw = nullptr;
  git_diff_options options = GIT_DIFF_OPTIONS_INIT;
  check(git_diff_tree_to_tree(&raw, repo, old_tree.get(), new_tree.get(), &options), "diff a branch");
  std::unique_ptr<git_diff, void (*)(git_diff*)> diff(raw, git_diff_free);
  BranchDiff out;
  for (std::size_t i = 0, n = git_diff_num_deltas(diff.get()); i < n; ++i) {
    git_patch* patch_raw = nullptr;
    check(git_patch_from_diff(&patch_raw, diff.get(), i), "diff a branch");
    std::unique_ptr<git_patch, void (*)(git_patch*)> patch(patch_raw, git_patch_free);
    const git_diff_delta* delta = git_diff_get_delta(diff.get(), i);
    BranchDiff::File file;
    file.path = delta->new_file.path != nullptr ? delta->new_file.path : delta->old_file.path;
    file.binary = (delta->flags & GIT_DIFF_FLAG_BINARY) != 0;
    std::size_t context = 0;
    if (patch) check(git_patch_line_stats(&context, &file.added, &file.removed, patch.get()), "diff a branch");
    out.files.push_back(std::move(file));
  }
  check(git_diff_print(diff.get(), GIT_DIFF_FORMAT_PATCH, on_line, &out.patch), "print a branch's diff");
  return out;
}

}  // namespace swarm::git
