// Owning handles for libgit2 objects and the translation of libgit2 failures
// into swarm::Error. Every libgit2 object is owned by a Freer handle (kv::CFree)
// declared here, or next to the one file that uses it. Part of the git
// module (libswarm_git.so); nothing outside swarm/git/ includes git2.h.
#pragma once

#include <git2.h>

#include "kv/c_handle.h"

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace swarm::git {

// libgit2 needs one global init per process; every git entry point calls this.
void ensure_initialized();

template <auto Free>
using Freer = kv::CFree<Free>;

using RepositoryPtr = std::unique_ptr<git_repository, Freer<git_repository_free>>;
using ReferencePtr = std::unique_ptr<git_reference, Freer<git_reference_free>>;
using CommitPtr = std::unique_ptr<git_commit, Freer<git_commit_free>>;
using TreePtr = std::unique_ptr<git_tree, Freer<git_tree_free>>;
using TreeEntryPtr = std::unique_ptr<git_tree_entry, Freer<git_tree_entry_free>>;
using TreeBuilderPtr = std::unique_ptr<git_treebuilder, Freer<git_treebuilder_free>>;
using IndexPtr = std::unique_ptr<git_index, Freer<git_index_free>>;
using RemotePtr = std::unique_ptr<git_remote, Freer<git_remote_free>>;
using SignaturePtr = std::unique_ptr<git_signature, Freer<git_signature_free>>;
using StatusListPtr = std::unique_ptr<git_status_list, Freer<git_status_list_free>>;
using RevwalkPtr = std::unique_ptr<git_revwalk, Freer<git_revwalk_free>>;
using PackBuilderPtr = std::unique_ptr<git_packbuilder, Freer<git_packbuilder_free>>;
using ObjectPtr = std::unique_ptr<git_object, Freer<git_object_free>>;

// A scratch folder of this process, removed with all it holds when this goes.
struct RemovedOnExit {
  std::filesystem::path path;
  explicit RemovedOnExit(std::filesystem::path p) : path(std::move(p)) {}
  RemovedOnExit(const RemovedOnExit&) = delete;
  RemovedOnExit& operator=(const RemovedOnExit&) = delete;
  ~RemovedOnExit() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// A bare repository of this process's own in $TMPDIR (a network hub's refs
// fetched or pushed through it), removed with all it holds when this goes.
// `purpose` names its folder ("swarm-<purpose>-XXXXXX").
struct ScratchRepo {
  explicit ScratchRepo(std::string_view purpose);
  RemovedOnExit folder;
  RepositoryPtr repo;
};

// The local bare hub at `path`, never searched upward; a missing one or one
// that is not a repository is not_bootstrapped (exit 6) naming `shown`.
RepositoryPtr open_local_hub(const std::filesystem::path& path, const std::string& shown);

// Throws swarm::Error with `what` and libgit2's last message unless rc >= 0:
// filesystem (exit 9) when the local filesystem refused (full, read-only,
// denied), internal otherwise.
void check(int rc, std::string_view what);
// Whether libgit2's message says the local filesystem refused a write.
bool filesystem_refused(std::string_view message);

// `visit(full name, target)` for each direct ref of `repo` under `prefix`
// ("refs/heads/swarm/"); symbolic refs are left out. `what` names the
// listing in an error.
template <typename Visit>
void for_each_direct_ref(git_repository* repo, const std::string& prefix, std::string_view what, Visit&& visit) {
  git_reference_iterator* raw = nullptr;
  check(git_reference_iterator_glob_new(&raw, repo, (prefix + "*").c_str()), what);
  std::unique_ptr<git_reference_iterator, Freer<git_reference_iterator_free>> it(raw);
  git_reference* ref_raw = nullptr;
  while (git_reference_next(&ref_raw, it.get()) == 0) {
    ReferencePtr ref(ref_raw);
    if (git_reference_type(ref.get()) == GIT_REFERENCE_DIRECT)
      visit(std::string(git_reference_name(ref.get())), *git_reference_target(ref.get()));
  }
  git_error_clear();
}

// A commit of `repo` by its id; `what` names it in an error.
CommitPtr lookup_commit(git_repository* repo, const git_oid& oid, std::string_view what);

// Strings (refspecs, pathspecs) as the git_strarray libgit2 takes; it owns
// its copies, so the array lives as long as it does.
class StringArray {
 public:
  explicit StringArray(std::vector<std::string> strings) : strings_(std::move(strings)) {
    for (auto& s : strings_) pointers_.push_back(s.data());
    array_.strings = pointers_.data();
    array_.count = pointers_.size();
  }
  StringArray(const StringArray&) = delete;
  StringArray& operator=(const StringArray&) = delete;
  git_strarray* get() { return &array_; }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> pointers_;
  git_strarray array_{};
};

// An oid as 40 hex digits, and its first 12.
std::string hex(const git_oid& oid);
std::string short_hex(const git_oid& oid);

}  // namespace swarm::git
