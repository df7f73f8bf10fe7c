// Keeps a local hub compact: every push adds a pack, and a hub of a
// thousand packs makes every later push and clone look in a thousand
// indexes. Like `git gc --auto` (gc.autoPackLimit 50), but keeping every
// object: the new pack holds everything the old ones did, reachable or not,
// so nothing a concurrent push wrote, and nothing a ref will name later, is
// ever lost (adr/0016).
#include <sys/file.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "swarm/base/error.h"
#include "swarm/base/safe_dir.h"
#include "swarm/git/hub_packs.h"
#include "swarm/git/repos.h"

namespace swarm::git {

namespace fs = std::filesystem;

namespace {

using OdbPtr = std::unique_ptr<git_odb, Freer<git_odb_free>>;

int insert_object(const git_oid* id, void* payload) {
  return git_packbuilder_insert(static_cast<git_packbuilder*>(payload), id, nullptr);
}

}  // namespace

RepackResult repack_hub(const fs::path& hub, int pack_limit) {
  ensure_initialized();
  RepackResult result;
  // Reached through descriptors, never through a link planted in the hub
  // (the hub may be shared with other users: no owner check).
  auto hub_dir = SafeDir::open_if_exists(hub, false);
  if (!hub_dir) throw Error(Errc::not_bootstrapped, "the hub " + hub.string() + " is missing");
  auto packs = hub_dir->folder_below("objects/pack", false);
  if (!packs) throw Error(Errc::not_bootstrapped, hub.string() + " has no objects/pack folder: not a hub");
  const fs::path pack_dir = packs->fd_path();
  // One repack of a hub at a time; another one already at it is enough.
  int lock_fd = ::openat(hub_dir->fd(), "swarm-repack.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (lock_fd < 0) throw Error(Errc::bad_input, "cannot open the lock file " + (hub / "swarm-repack.lock").string() +
                                                    " without following a link");
  UniqueFd lock(lock_fd);
  struct stat st {};
  if (::fstat(lock_fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink > 1)
    throw Error(Errc::bad_input, (hub / "swarm-repack.lock").string() + " is no plain file of its own");
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    result.busy = true;
    return result;
  }
  const std::vector<std::string> before = repackable_packs_in(pack_dir);
  result.packs_before = static_cast<int>(before.size());
  if (result.packs_before <= pack_limit) {
    result.packs_after = result.packs_before;
    return result;
  }

  git_repository* raw = nullptr;
  check(git_repository_open_bare(&raw, hub.c_str()), "open the hub " + hub.string());
  RepositoryPtr repo(raw);
  git_odb* odb_raw = nullptr;
  check(git_repository_odb(&odb_raw, repo.get()), "open the hub's objects");
  OdbPtr odb(odb_raw);
  git_packbuilder* pb_raw = nullptr;
  check(git_packbuilder_new(&pb_raw, repo.get()), "start a pack");
  PackBuilderPtr pb(pb_raw);
  // Every object the hub has now: the listed packs are all in it (packs never change).
  check(git_odb_foreach(odb.get(), insert_object, pb.get()), "list the hub's objects");
  // On disk for good before any old pack goes: a crash must not leave the
  // deletions durable and the new pack not (this process does nothing else).
  // (every write of the hub is synced: ensure_initialized)
  check(git_packbuilder_write(pb.get(), pack_dir.c_str(), 0, nullptr, nullptr), "write the hub's new pack");
  ::fsync(packs->fd());
  const std::string made = std::string("pack-") + git_packbuilder_name(pb.get());
  result.objects = static_cast<long>(git_packbuilder_object_count(pb.get()));

  // Only now may the old packs go: everything in them is in the new one.
  for (const auto& name : before) {
    if (name == made) continue;
    for (const char* ext : {".idx", ".pack", ".rev", ".bitmap"}) ::unlinkat(packs->fd(), (name + ext).c_str(), 0);
  }
  result.packs_after = static_cast<int>(repackable_packs_in(pack_dir).size());
  return result;
}

}  // namespace swarm::git
