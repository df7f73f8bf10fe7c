#include "swarm/git/handles.h"

#include <mutex>

#include "swarm/base/error.h"

namespace swarm::git {

void ensure_initialized() {
  static std::once_flag once;
  std::call_once(once, [] { git_libgit2_init(); });
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
