// The checkouts land checks run in (.swarm/land/onto-<branch>/): swarm's,
// whatever a check left in them. A check runs as the user, in there: it may
// leave links (in place of HEAD, the index, objects/info/alternates, refs, a
// tracked file or one of its folders), a FIFO where a file goes (a write to
// it would block for ever), hard links to files elsewhere, or a config that
// points the worktree elsewhere, and the next land must write through none
// of them. So before each checkout its .git is made anew (HEAD, config, refs,
// the alternates naming where the merges' objects are), keeping only an
// index that is a plain file of its own (the stat cache that keeps a
// checkout of 20,000 files incremental), and every path the checkout may
// write (the new tree's files and the old index's) is made safe: a link, a
// FIFO or a socket on the way or at its end is removed, and a file there with
// a second hard link too. What lies elsewhere (a build's ignored output, its
// links included) stays. All through directory descriptors that follow no
// link. A checkout that cannot be made safe (a folder of another user's, one
// we may not open) is moved aside whole and made from nothing; a tree libgit2
// will not write even there is refused (conflict).
#include <git2.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "swarm/base/error.h"
#include "swarm/base/safe_dir.h"
#include "swarm/git/repos.h"

namespace swarm::git {

namespace fs = std::filesystem;

namespace {

// Where a checkout's index waits while its .git is made anew: a name no
// checkout folder ("onto-...") can have.
std::string kept_index_name(const std::string& checkout) { return ".index-" + checkout; }

// Every path the checkout of `commit` may write or remove: the tree's files
// and the files of the index it starts from (at `index_path`, when it has one).
std::vector<std::string> paths_to_write(git_repository* repo, const git_oid& commit, const fs::path& index_path) {
  std::set<std::string> paths;
  auto target = lookup_commit(repo, commit, "read the merged commit " + hex(commit));
  git_tree* tree_raw = nullptr;
  check(git_commit_tree(&tree_raw, target.get()), "read the tree of " + hex(commit));
  TreePtr tree(tree_raw);
  check(git_tree_walk(tree.get(), GIT_TREEWALK_PRE,
                      [](const char* root, const git_tree_entry* entry, void* payload) {
                        if (git_tree_entry_type(entry) != GIT_OBJECT_TREE)
                          static_cast<std::set<std::string>*>(payload)->insert(std::string(root) +
                                                                              git_tree_entry_name(entry));
                        return 0;
                      },
                      &paths),
        "list the tree of " + hex(commit));
  git_index* index_raw = nullptr;
  std::error_code ec;
  if (fs::is_regular_file(fs::symlink_status(index_path, ec)) && git_index_open(&index_raw, index_path.c_str()) == 0) {
    IndexPtr index(index_raw);
    for (std::size_t i = 0; i < git_index_entrycount(index.get()); ++i)
      if (const git_index_entry* e = git_index_get_byindex(index.get(), i)) paths.insert(e->path);
  }
  git_error_clear();
  return {paths.begin(), paths.end()};
}

// Makes each of `paths` (sorted) safe to write under `root`: on the way to
// it, anything but a real folder that is no file goes (a link, a FIFO, a
// socket); at its end, a link, a FIFO, a socket or a file with another hard
// link goes. Folders are opened one level at a time, as deep as the path.
void make_paths_safe(const SafeDir& root, const std::vector<std::string>& paths) {
  std::vector<std::pair<std::string, SafeDir>> open;  // the folders of the last path, outermost first
  for (const auto& path : paths) {
    std::vector<std::string> parts;
    for (std::size_t at = 0; at <= path.size();) {
      const auto slash = path.find('/', at);
      parts.push_back(path.substr(at, slash == std::string::npos ? std::string::npos : slash - at));
      if (slash == std::string::npos) break;
      at = slash + 1;
    }
    // Keep the folders this path shares with the last one.
    std::size_t keep = 0;
    while (keep < open.size() && keep + 1 < parts.size() && open[keep].first == parts[keep]) ++keep;
    while (open.size() > keep) open.pop_back();
    bool reachable = true;
    for (std::size_t i = keep; i + 1 < parts.size(); ++i) {
      const SafeDir& here = open.empty() ? root : open.back().second;
      const EntryKind kind = here.kind(parts[i]);
      if (kind == EntryKind::folder) {
        open.emplace_back(parts[i], here.folder(parts[i]));
        continue;
      }
      if (kind == EntryKind::link || kind == EntryKind::other) here.remove_file(parts[i]);
      reachable = false;  // nothing (more) there: the checkout makes it
      break;
    }
    if (!reachable) continue;
    const SafeDir& here = open.empty() ? root : open.back().second;
    const std::string& name = parts.back();
    switch (here.kind(name)) {
      case EntryKind::link:
      case EntryKind::other: here.remove_file(name); break;
      case EntryKind::file:
        if (here.links_of(name) > 1) here.remove_file(name);
        break;
      default: break;
    }
  }
}

// The checkout's .git made anew, its index kept when it is a plain file of
// its own (set aside in `land` meanwhile).
void renew_git_dir(const SafeDir& land, const std::string& name, const fs::path& objects) {
  const std::string kept = kept_index_name(name);
  land.remove_file(kept);  // a land killed half way left it: its checkout starts cold
  SafeDir checkout = land.folder(name);
  switch (checkout.kind(".git")) {
    case EntryKind::missing: break;
    case EntryKind::folder: {
      SafeDir git = checkout.folder(".git");
      if (git.kind("index") == EntryKind::file && git.links_of("index") == 1) git.move("index", land, kept);
      checkout.remove_tree(".git");
      break;
    }
    default: checkout.remove_file(".git");  // a link, or a gitdir file naming another repository
  }
  git_repository* raw = nullptr;
  check(git_repository_init(&raw, checkout.path().c_str(), 0), "make the checkout " + checkout.path().string());
  RepositoryPtr made(raw);
  SafeDir git = checkout.folder(".git");
  git.folder("objects").make_folder("info").write_file("alternates", objects.string() + "\n");
  if (land.kind(kept) == EntryKind::file) land.move(kept, git, "index");
}

RepositoryPtr open_checkout(const fs::path& folder) {
  git_repository* raw = nullptr;
  check(git_repository_open_ext(&raw, folder.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr),
        "open the checkout " + folder.string());
  return RepositoryPtr(raw);
}

void check_out_in(git_repository* repo, const fs::path& folder, const git_oid& oid) {
  auto target = lookup_commit(repo, oid, "read the merged commit " + hex(oid));
  git_checkout_options options = GIT_CHECKOUT_OPTIONS_INIT;
  // What an earlier land left is replaced; ignored files (a build's output)
  // stay, so a check can build incrementally.
  options.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_REMOVE_UNTRACKED;
  check(git_checkout_tree(repo, reinterpret_cast<git_object*>(target.get()), &options),
        "check out " + hex(oid) + " in " + folder.string());
  check(git_repository_set_head_detached(repo, &oid), "point " + folder.string() + " at " + hex(oid));
}

// The checkout made ready and written: its .git anew, every path it writes safe.
void prepare_and_check_out(const SafeDir& land, const std::string& name, const fs::path& objects, const git_oid& commit) {
  land.make_folder(name, 0700);
  renew_git_dir(land, name, objects);
  const fs::path folder = land.path() / name;
  RepositoryPtr repo = open_checkout(folder);
  make_paths_safe(land.folder(name), paths_to_write(repo.get(), commit, folder / ".git/index"));
  check_out_in(repo.get(), folder, commit);
}

// The checkout moved out of the way whole (into .swarm/trash/, beside
// .swarm/land/), when it cannot be made safe in place.
void set_aside(const SafeDir& land, const std::string& name) {
  const SafeDir trash = SafeDir::make(land.path().parent_path() / "trash", 0700);
  const std::string aside = "land-" + name + "-" + std::to_string(::getpid()) + "-" +
                            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  if (!land.move(name, trash, aside)) land.remove_tree(name);
}

}  // namespace

void check_out_land(const fs::path& folder, const fs::path& objects, const git_oid& commit) {
  const SafeDir land = SafeDir::open(folder.parent_path());
  const std::string name = folder.filename().string();
  try {
    prepare_and_check_out(land, name, objects, commit);
    return;
  } catch (const Error&) {
    // Tried again from nothing below: what fails there is said.
  }
  // Whatever the last check left (a folder of another user's, a link turned
  // into a folder over the index's memory of it), a checkout made from
  // nothing takes the tree, or the tree is at fault.
  set_aside(land, name);
  land.remove_file(kept_index_name(name));
  try {
    prepare_and_check_out(land, name, objects, commit);
  } catch (const Error& again) {
    if (again.kind() != Errc::internal) throw;
    throw Error(Errc::conflict, std::string("the merged tree cannot be checked out: ") + again.what());
  }
}

}  // namespace swarm::git
