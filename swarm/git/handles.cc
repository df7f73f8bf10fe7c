#include "swarm/git/handles.h"

#include <stdlib.h>

#include <mutex>

#include "swarm/base/error.h"

namespace swarm::git {

void ensure_initialized() {
  static std::once_flag once;
  std::call_once(once, [] {
    git_libgit2_init();
    // What the hub (and a worktree's git folder) says it has is on disk
    // before the push or commit is answered: a crash of the machine leaves
    // no empty object or ref behind (adr/0052).
    git_libgit2_opts(GIT_OPT_ENABLE_FSYNC_GITDIR, 1);
  });
}

bool filesystem_refused(std::string_view message) {
  for (std::string_view refusal : {"No space left on device", "Read-only file system", "Disk quota exceeded",
                                   "Permission denied", "Too many open files"})
    if (message.find(refusal) != std::string_view::npos) return true;
  return false;
}

void check(int rc, std::string_view what) {
  if (rc >= 0) return;
  const git_error* e = git_error_last();
  std::string message(what);
  message += ": ";
  message += (e != nullptr && e->message != nullptr) ? e->message : "libgit2 error " + std::to_string(rc);
  throw Error(filesystem_refused(message) ? Errc::filesystem : Errc::internal, message);
}

namespace {

std::filesystem::path make_scratch_folder(std::string_view purpose) {
  std::string path = (std::filesystem::temp_directory_path() / ("swarm-" + std::string(purpose) + "-XXXXXX")).string();
  if (::mkdtemp(path.data()) == nullptr)
    throw Error(Errc::filesystem, "cannot make a scratch folder in " + std::filesystem::temp_directory_path().string());
  return path;
}

RepositoryPtr init_bare(const std::filesystem::path& path) {
  git_repository* raw = nullptr;
  check(git_repository_init(&raw, path.c_str(), 1), "make a scratch repository");
  return RepositoryPtr(raw);
}

}  // namespace

ScratchRepo::ScratchRepo(std::string_view purpose) : folder(make_scratch_folder(purpose)), repo(init_bare(folder.path)) {}

RepositoryPtr open_local_hub(const std::filesystem::path& path, const std::string& shown) {
  ensure_initialized();
  git_repository* raw = nullptr;
  if (git_repository_open_ext(&raw, path.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH | GIT_REPOSITORY_OPEN_BARE, nullptr) !=
      0) {
    // The filesystem refusing (permission, too many open files) is exit 9
    // with libgit2's words; anything else means there is no hub there.
    const git_error* e = git_error_last();
    const std::string said = e != nullptr && e->message != nullptr ? e->message : "";
    git_error_clear();
    if (filesystem_refused(said)) throw Error(Errc::filesystem, "open the hub " + shown + ": " + said);
    throw Error(Errc::not_bootstrapped, "the hub " + shown + " is missing or not a git repository");
  }
  return RepositoryPtr(raw);
}

CommitPtr lookup_commit(git_repository* repo, const git_oid& oid, std::string_view what) {
  git_commit* raw = nullptr;
  check(git_commit_lookup(&raw, repo, &oid), what);
  return CommitPtr(raw);
}

std::string hex(const git_oid& oid) {
  char buffer[GIT_OID_HEXSZ + 1] = {0};
  git_oid_tostr(buffer, sizeof buffer, &oid);
  return buffer;
}

std::string short_hex(const git_oid& oid) { return hex(oid).substr(0, 12); }

}  // namespace swarm::git
