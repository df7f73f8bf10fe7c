// Whether a tree can be checked out at all: what git refuses to write (a
// '.git' entry, a name with '/'), two entries of one name in one folder (a
// link and a folder at one path), an unknown mode, an object the repository
// cannot read. A land refuses such a tree before the onto branch moves, and
// a join names the path instead of failing half way through its checkout.
#include <cstring>
#include <optional>
#include <set>
#include <string>

#include "swarm/base/text.h"
#include "swarm/git/repos.h"

namespace swarm::git {

namespace {

using OdbPtr = std::unique_ptr<git_odb, Freer<git_odb_free>>;

bool refused_name(const char* name) {
  return name[0] == '\0' || std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0 ||
         std::strchr(name, '/') != nullptr || strcasecmp(name, ".git") == 0;
}

bool known_mode(git_filemode_t mode) {
  return mode == GIT_FILEMODE_BLOB || mode == GIT_FILEMODE_BLOB_EXECUTABLE || mode == GIT_FILEMODE_LINK ||
         mode == GIT_FILEMODE_TREE || mode == GIT_FILEMODE_COMMIT;
}

class TreeWalk {
 public:
  TreeWalk(git_repository* repo, git_odb* odb) : repo_(repo), odb_(odb) {}

  std::optional<std::string> walk(const git_tree* tree, const git_tree* base, const std::string& prefix) {
    std::set<std::string> names;
    const std::size_t count = git_tree_entrycount(tree);
    for (std::size_t i = 0; i < count; ++i) {
      const git_tree_entry* entry = git_tree_entry_byindex(tree, i);
      const char* name = git_tree_entry_name(entry);
      const std::string path = prefix + name;
      const git_filemode_t mode = git_tree_entry_filemode(entry);
      if (refused_name(name)) return "'" + printable(path) + "' is a name git never writes";
      if (!names.insert(name).second)
        return "'" + printable(path) + "' is in its folder twice (say, a link and a folder at one path)";
      if (!known_mode(mode)) return "'" + printable(path) + "' has the unknown mode " + std::to_string(mode);
      if (mode == GIT_FILEMODE_COMMIT) continue;  // a submodule: an empty folder, nothing to read
      const git_oid* id = git_tree_entry_id(entry);
      const git_tree_entry* before = base != nullptr ? git_tree_entry_byname(base, name) : nullptr;
      // What the base has already, unchanged, was checked (or is the onto branch's as it is).
      if (before != nullptr && git_oid_equal(git_tree_entry_id(before), id) &&
          git_tree_entry_filemode(before) == mode)
        continue;
      if (mode != GIT_FILEMODE_TREE) {
        if (!git_odb_exists(odb_, id)) return "'" + printable(path) + "' names an object the hub does not have";
        continue;
      }
      git_tree* sub_raw = nullptr;
      if (git_tree_lookup(&sub_raw, repo_, id) != 0) {
        git_error_clear();
        return "the folder '" + printable(path) + "' is an object the hub cannot read";
      }
      TreePtr sub(sub_raw);
      TreePtr sub_base;
      if (before != nullptr && git_tree_entry_filemode(before) == GIT_FILEMODE_TREE) {
        git_tree* base_raw = nullptr;
        if (git_tree_lookup(&base_raw, repo_, git_tree_entry_id(before)) == 0) sub_base.reset(base_raw);
        git_error_clear();
      }
      if (auto problem = walk(sub.get(), sub_base.get(), path + "/")) return problem;
    }
    return std::nullopt;
  }

 private:
  git_repository* repo_;
  git_odb* odb_;
};

}  // namespace

std::optional<std::string> tree_problem(git_repository* repo, const git_tree* tree, const git_tree* base) {
  git_odb* raw = nullptr;
  check(git_repository_odb(&raw, repo), "open the object database");
  OdbPtr odb(raw);
  return TreeWalk(repo, odb.get()).walk(tree, base, "");
}

std::optional<std::string> commit_tree_problem(git_repository* repo, const git_oid& commit, const git_oid* base) {
  auto tree_of = [&](const git_oid& id) -> TreePtr {
    git_commit* c = nullptr;
    if (git_commit_lookup(&c, repo, &id) != 0) {
      git_error_clear();
      return nullptr;
    }
    CommitPtr owned(c);
    git_tree* t = nullptr;
    if (git_commit_tree(&t, owned.get()) != 0) {
      git_error_clear();
      return nullptr;
    }
    return TreePtr(t);
  };
  TreePtr tree = tree_of(commit);
  if (!tree) return "its commit or tree cannot be read";
  TreePtr before = base != nullptr ? tree_of(*base) : nullptr;
  return tree_problem(repo, tree.get(), before.get());
}

}  // namespace swarm::git
