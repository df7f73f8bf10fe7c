// The checkouts land checks run in (.swarm/land/onto-<branch>/): swarm's,
// whatever a check left in them. A check runs as the user, in there: it may
// leave links (in place of HEAD, the index, objects/info/alternates, refs or
// a tracked file), hard links to files elsewhere, or a config that points
// the worktree elsewhere, and the next land must write through none of them.
// So before each checkout its .git is made anew (HEAD, config, refs, the
// alternates naming where the merges' objects are), keeping only an index
// that is a plain file of its own (the stat cache that keeps a checkout of
// 20,000 files incremental), and every link and every file with another name
// in its worktree goes (the checkout writes the tracked ones again), all
// through directory descriptors that follow no link. A tree libgit2 will not
// write there (a link that became a folder, a path it refuses) is tried once
// more in a checkout made from nothing; if that fails too, the land is refused.
#include <git2.h>

#include "swarm/error.h"
#include "swarm/git/repos.h"
#include "swarm/safe_dir.h"

namespace swarm::git {

namespace fs = std::filesystem;

namespace {

// Removes every link, and every plain file with another hard link, below
// `dir` (its .git left out at the top): never following one.
void scrub(const SafeDir& dir, bool top) {
  for (const auto& name : dir.list()) {
    if (top && name == ".git") continue;
    switch (dir.kind(name)) {
      case EntryKind::link: dir.remove_file(name); break;
      case EntryKind::file:
        if (dir.links_of(name) > 1) dir.remove_file(name);
        break;
      case EntryKind::folder: scrub(dir.folder(name), false); break;
      default: break;  // a FIFO or a socket: no one writes through it
    }
  }
}

// The checkout's .git made anew, its index kept when it is a plain file of
// its own (set aside in `land` as <name>.index meanwhile).
void renew_git_dir(const SafeDir& land, const std::string& name, const fs::path& objects) {
  const std::string kept = name + ".index";
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

void check_out_in(const fs::path& folder, const git_oid& oid) {
  git_repository* raw = nullptr;
  check(git_repository_open_ext(&raw, folder.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr),
        "open the checkout " + folder.string());
  RepositoryPtr repo(raw);
  auto target = lookup_commit(repo.get(), oid, "read the merged commit " + hex(oid));
  git_checkout_options options = GIT_CHECKOUT_OPTIONS_INIT;
  // What an earlier land left is replaced; ignored files (a build's output)
  // stay, so a check can build incrementally.
  options.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_REMOVE_UNTRACKED;
  check(git_checkout_tree(repo.get(), reinterpret_cast<git_object*>(target.get()), &options),
        "check out " + hex(oid) + " in " + folder.string());
  check(git_repository_set_head_detached(repo.get(), &oid), "point " + folder.string() + " at " + hex(oid));
}

}  // namespace

void check_out_land(const fs::path& folder, const fs::path& objects, const git_oid& commit) {
  const SafeDir land = SafeDir::open(folder.parent_path());
  const std::string name = folder.filename().string();
  land.make_folder(name, 0700);
  scrub(land.folder(name), true);
  renew_git_dir(land, name, objects);
  try {
    check_out_in(folder, commit);
    return;
  } catch (const Error& e) {
    if (e.kind() != Errc::internal) throw;  // a full disk is exit 9, not the tree's fault
    // Whatever state the last checkout left (a link that became a folder),
    // a checkout made from nothing takes the tree, or the tree is at fault.
    land.remove_tree(name);
    land.make_folder(name, 0700);
    renew_git_dir(land, name, objects);
    try {
      check_out_in(folder, commit);
    } catch (const Error& again) {
      if (again.kind() != Errc::internal) throw;
      throw Error(Errc::conflict, std::string("the merged tree cannot be checked out: ") + again.what());
    }
  }
}

}  // namespace swarm::git
