// Conflicts foreseen between unlanded slot branches, and between each and
// the onto branch (adr/0028): each branch's changed paths since its merge
// base with the onto branch, then an in-memory merge of only those pairs
// whose changed paths meet. Nothing is written to the repository.
#include <algorithm>
#include <map>
#include <set>

#include "swarm/base/error.h"
#include "swarm/git/repos.h"

namespace swarm::git {

namespace {

using ConflictIteratorPtr = std::unique_ptr<git_index_conflict_iterator, Freer<git_index_conflict_iterator_free>>;
using Paths = std::vector<std::string>;  // sorted, unique

Paths meet(const Paths& a, const Paths& b) {
  Paths out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// A path as one tree has it: absent, or a mode and an id.
struct AtPath {
  bool exists = false;
  git_filemode_t mode = GIT_FILEMODE_UNREADABLE;
  git_oid id{};
  bool operator==(const AtPath& o) const {
    return exists == o.exists && (!exists || (mode == o.mode && git_oid_equal(&id, &o.id)));
  }
};

AtPath at(const git_tree* tree, const std::string& path) {
  AtPath out;
  git_tree_entry* raw = nullptr;
  if (tree == nullptr || git_tree_entry_bypath(&raw, tree, path.c_str()) != 0) {
    git_error_clear();
    return out;
  }
  TreeEntryPtr entry(raw);
  out.exists = true;
  out.mode = git_tree_entry_filemode(entry.get());
  out.id = *git_tree_entry_id(entry.get());
  return out;
}

using BlobPtr = std::unique_ptr<git_blob, Freer<git_blob_free>>;
using MergeFileResultPtr = std::unique_ptr<git_merge_file_result, Freer<git_merge_file_result_free>>;

// A file input of git_merge_file: the blob's bytes (none when it is absent).
git_merge_file_input input_of(git_repository* repo, const AtPath& side, const char* name, BlobPtr& keep) {
  git_merge_file_input in = GIT_MERGE_FILE_INPUT_INIT;
  in.path = name;
  if (!side.exists) return in;
  git_blob* raw = nullptr;
  check(git_blob_lookup(&raw, repo, &side.id), "read a file to merge");
  keep.reset(raw);
  in.ptr = static_cast<const char*>(git_blob_rawcontent(raw));
  in.size = static_cast<std::size_t>(git_blob_rawsize(raw));
  in.mode = side.mode;
  return in;
}

// Whether a three-way merge of `path` (as `base`, `ours`, `theirs` have it)
// leaves a conflict: a file both sides changed whose lines do not merge, a
// change on one side and a removal on the other, or a kind both changed.
bool conflicts_on(git_repository* repo, const git_tree* base, const git_tree* ours, const git_tree* theirs,
                  const std::string& path) {
  const AtPath o = at(base, path), a = at(ours, path), b = at(theirs, path);
  if (a == b || a == o || b == o) return false;
  if (!a.exists || !b.exists) return true;  // changed here, removed there
  auto plain = [](const AtPath& s) { return s.mode == GIT_FILEMODE_BLOB || s.mode == GIT_FILEMODE_BLOB_EXECUTABLE; };
  if (!plain(a) || !plain(b)) return true;  // a link or a submodule both changed
  if (a.mode != b.mode && a.mode != o.mode && b.mode != o.mode) return true;
  // A base that was a folder, a link or a submodule there: two new files.
  const AtPath base_file = o.exists && plain(o) ? o : AtPath{};
  BlobPtr ob, ab, bb;
  git_merge_file_input in_o = input_of(repo, base_file, path.c_str(), ob), in_a = input_of(repo, a, path.c_str(), ab),
                       in_b = input_of(repo, b, path.c_str(), bb);
  git_merge_file_result result{};
  check(git_merge_file(&result, &in_o, &in_a, &in_b, nullptr), "merge a file in memory");
  MergeFileResultPtr keep(&result);
  return result.automergeable == 0;
}

// The paths of `shared` that merging commits `ours` and `theirs` leaves in conflict.
Paths merge_conflicts(git_repository* repo, const git_oid& ours, const git_oid& theirs, const Paths& shared) {
  git_oid base_id;
  const bool has_base = git_merge_base(&base_id, repo, &ours, &theirs) == 0;
  git_error_clear();
  TreePtr base = tree_of(repo, has_base ? &base_id : nullptr), a = tree_of(repo, &ours), b = tree_of(repo, &theirs);
  Paths out;
  for (const auto& path : shared)
    if (conflicts_on(repo, base.get(), a.get(), b.get(), path)) out.push_back(path);
  return out;
}

struct Side {
  std::string name;
  git_oid tip{};
  Paths changed;  // since its merge base with the onto branch
  std::vector<Overlap> overlaps;
};

}  // namespace

std::vector<std::string> conflict_paths(git_index* index) {
  std::vector<std::string> out;
  if (!git_index_has_conflicts(index)) return out;
  git_index_conflict_iterator* raw = nullptr;
  check(git_index_conflict_iterator_new(&raw, index), "list the conflicts");
  ConflictIteratorPtr it(raw);
  const git_index_entry *ancestor = nullptr, *ours = nullptr, *theirs = nullptr;
  while (git_index_conflict_next(&ancestor, &ours, &theirs, it.get()) == 0) {
    const git_index_entry* any = ours ? ours : theirs ? theirs : ancestor;
    if (any != nullptr && (out.empty() || out.back() != any->path)) out.emplace_back(any->path);
  }
  git_error_clear();
  return out;
}

std::vector<Foreseen> foresee_conflicts(git_repository* repo, const std::string& onto, const git_oid& onto_tip,
                                        const std::vector<std::pair<std::string, git_oid>>& branches,
                                        const std::string& focus) {
  std::vector<Side> sides;
  std::map<std::string, Paths> onto_changed;  // by merge base: what the onto branch changed since
  for (const auto& [name, tip] : branches) {
    Side side{name, tip, {}, {}};
    git_oid base;
    const bool has_base = git_merge_base(&base, repo, &tip, &onto_tip) == 0;
    git_error_clear();
    side.changed = changed_paths(repo, has_base ? &base : nullptr, tip);
    const std::string key = has_base ? hex(base) : "";
    auto it = onto_changed.find(key);
    if (it == onto_changed.end())
      it = onto_changed.emplace(key, changed_paths(repo, has_base ? &base : nullptr, onto_tip)).first;
    if (focus.empty() || name == focus)
      if (const Paths both = meet(side.changed, it->second); !both.empty())
        if (Paths paths = merge_conflicts(repo, onto_tip, tip, both); !paths.empty())
          side.overlaps.push_back({onto, std::move(paths)});
    sides.push_back(std::move(side));
  }
  for (std::size_t i = 0; i < sides.size(); ++i) {
    for (std::size_t j = i + 1; j < sides.size(); ++j) {
      Side &a = sides[i], &b = sides[j];
      if (!focus.empty() && a.name != focus && b.name != focus) continue;
      const Paths both = meet(a.changed, b.changed);
      if (both.empty()) continue;
      // Only what both changed: a merge of branches forked from different
      // tips of the onto branch may also conflict on the onto branch's own
      // changes, which are the onto branch's conflict, not theirs.
      Paths paths = merge_conflicts(repo, a.tip, b.tip, both);
      if (paths.empty()) continue;
      a.overlaps.push_back({b.name, paths});
      b.overlaps.push_back({a.name, std::move(paths)});
    }
  }
  std::vector<Foreseen> out;
  for (auto& side : sides) {
    if (!focus.empty() && side.name != focus) continue;
    std::sort(side.overlaps.begin(), side.overlaps.end(),
              [](const Overlap& x, const Overlap& y) { return x.with < y.with; });
    out.push_back({side.name, std::move(side.overlaps)});
  }
  return out;
}

}  // namespace swarm::git
