// Bringing the onto branch home into a slot's worktree (`swarm sync`), and
// the merge it may leave for the agent to finish (`swarm commit` completes
// it with both parents; `close --result success` waits for it). A refused
// land is fixed this way: sync, resolve, commit, close, land.
#include <git2.h>

#include <fstream>

#include "swarm/base/error.h"
#include "swarm/base/text.h"
#include "swarm/git/remote_access.h"
#include "swarm/git/repos.h"
#include "swarm/git/worktree.h"

namespace swarm::git {

namespace fs = std::filesystem;

namespace {

using AnnotatedPtr = std::unique_ptr<git_annotated_commit, Freer<git_annotated_commit_free>>;

// Whether the file at `path` still holds the markers git leaves in a conflict.
bool has_conflict_markers(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  bool ours = false, theirs = false;
  while (std::getline(in, line)) {
    ours = ours || line.rfind("<<<<<<< ", 0) == 0 || line == "<<<<<<<";
    theirs = theirs || line.rfind(">>>>>>> ", 0) == 0 || line == ">>>>>>>";
    if (ours && theirs) return true;
  }
  return false;
}

// The paths of `index` in conflict.
std::vector<std::string> conflicted(git_index* index) {
  std::vector<std::string> out;
  if (!git_index_has_conflicts(index)) return out;
  git_index_conflict_iterator* raw = nullptr;
  check(git_index_conflict_iterator_new(&raw, index), "read the conflicts of the index");
  std::unique_ptr<git_index_conflict_iterator, Freer<git_index_conflict_iterator_free>> it(raw);
  const git_index_entry *ancestor = nullptr, *ours = nullptr, *theirs = nullptr;
  while (git_index_conflict_next(&ancestor, &ours, &theirs, it.get()) == 0) {
    const git_index_entry* any = ours != nullptr ? ours : theirs != nullptr ? theirs : ancestor;
    if (any != nullptr) out.emplace_back(any->path);
  }
  git_error_clear();
  return out;
}

// A checkout of sync's: refused (conflict) when it would overwrite what the
// worktree has that is not committed.
void checked_out(int rc, const std::string& onto) {
  if (rc == GIT_ECONFLICT) {
    const std::string why = git_error_last() != nullptr ? git_error_last()->message : "";
    git_error_clear();
    throw Error(Errc::conflict, "bringing " + onto + " in would overwrite files of the worktree that are not "
                                "committed (" + why + "): move them away or commit them, then sync again");
  }
  check(rc, "bring " + onto + " into the worktree");
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

bool WorktreeRepo::merging() const { return git_repository_state(repo_.get()) == GIT_REPOSITORY_STATE_MERGE; }

namespace {

// Whether the blob `id` holds binary data (a conflict in it carries no markers).
bool binary_blob(git_repository* repo, const git_oid& id) {
  git_blob* raw = nullptr;
  if (git_blob_lookup(&raw, repo, &id) != 0) {
    git_error_clear();
    return true;  // unreadable: no markers to look for either
  }
  std::unique_ptr<git_blob, Freer<git_blob_free>> blob(raw);
  return git_blob_is_binary(blob.get()) != 0;
}

}  // namespace

Unresolved WorktreeRepo::unresolved(git_index* index) const {
  Unresolved out;
  if (!git_index_has_conflicts(index)) return out;
  git_index_conflict_iterator* raw = nullptr;
  check(git_index_conflict_iterator_new(&raw, index), "read the conflicts of the index");
  std::unique_ptr<git_index_conflict_iterator, Freer<git_index_conflict_iterator_free>> it(raw);
  const git_index_entry *ancestor = nullptr, *ours = nullptr, *theirs = nullptr;
  while (git_index_conflict_next(&ancestor, &ours, &theirs, it.get()) == 0) {
    const git_index_entry* any = ours != nullptr ? ours : theirs != nullptr ? theirs : ancestor;
    if (any == nullptr) continue;
    const std::string path = any->path;
    std::error_code ec;
    const auto at = path_ / path;
    const auto status = fs::symlink_status(at, ec);
    if (!fs::exists(status)) continue;  // deleted in the worktree: the agent chose so
    // A conflict that carries no markers (a side deleted it, the sides'
    // modes differ, a link, a binary file) waits for the agent to say
    // which side (git add / git rm): else a side's change would be dropped
    // unseen.
    const bool text_both = ours != nullptr && theirs != nullptr && ours->mode == theirs->mode &&
                           (ours->mode == GIT_FILEMODE_BLOB || ours->mode == GIT_FILEMODE_BLOB_EXECUTABLE) &&
                           !binary_blob(repo_.get(), ours->id) && !binary_blob(repo_.get(), theirs->id);
    if (!text_both || !fs::is_regular_file(status)) {
      out.without_markers.push_back(path);
      continue;
    }
    // A text conflict is resolved once no marker line is left, whichever
    // content the agent kept (one side's whole included).
    if (has_conflict_markers(at)) out.with_markers.push_back(path);
  }
  git_error_clear();
  return out;
}

std::optional<std::string> WorktreeRepo::commit_merge(const std::string& message, const std::vector<std::string>& paths,
                                                      const CommitAuthor& author, bool restage) {
  if (!paths.empty())
    throw Error(Errc::bad_input, "a merge is in progress in the worktree of slot " + slot_ +
                                     ": it is committed whole; run swarm commit without paths");
  git_index* index_raw = nullptr;
  check(git_repository_index(&index_raw, repo_.get()), "open the index of " + path_.string());
  IndexPtr index(index_raw);
  if (auto left = unresolved(index.get()); !left.with_markers.empty() || !left.without_markers.empty()) {
    std::string what;
    if (!left.with_markers.empty()) what += joined(left.with_markers) + " still hold conflict markers: edit them";
    if (!left.without_markers.empty())
      what += std::string(what.empty() ? "" : "; ") + joined(left.without_markers) +
              " carry a conflict no marker can show (binary, a mode, or deleted on one side): say which side with "
              "git add PATH or git rm PATH";
    throw Error(Errc::conflict, "the merge in slot " + slot_ + "'s worktree is not resolved: " + what +
                                    "; then swarm commit again (or abort the merge: git -C " +
                                    shell_word(path_.string()) + " merge --abort)");
  }
  const std::vector<git_oid> heads = merge_heads();
  // Finishing the agent's merge takes its edits; a clean merge of sync's
  // takes the merge alone (an untracked scratch file stays out of it).
  if (restage) stage(index.get(), {});
  git_oid tree_id;
  check(git_index_write_tree(&tree_id, index.get()), "write the tree of the merge");
  git_tree* tree_raw = nullptr;
  check(git_tree_lookup(&tree_raw, repo_.get(), &tree_id), "read the tree of the merge");
  TreePtr tree(tree_raw);
  git_oid tip_id;
  check(git_reference_name_to_id(&tip_id, repo_.get(), ("refs/heads/" + branch_name()).c_str()),
        "read the tip of " + branch_name());
  std::vector<CommitPtr> owned;
  owned.push_back(lookup_commit(repo_.get(), tip_id, "read the tip of " + branch_name()));
  for (const auto& h : heads) owned.push_back(lookup_commit(repo_.get(), h, "read a commit of MERGE_HEAD"));
  std::vector<const git_commit*> parents;
  for (const auto& c : owned) parents.push_back(c.get());
  const std::string made = write_commit(tree.get(), parents, message, author);
  check(git_index_write(index.get()), "write the index");
  check(git_repository_state_cleanup(repo_.get()), "end the merge in " + path_.string());
  return made;
}

std::vector<git_oid> WorktreeRepo::merge_heads() const {
  const std::string file = (fs::path(git_repository_path(repo_.get())) / "MERGE_HEAD").string();
  auto refused = [&](const std::string& why) {
    return Error(Errc::conflict, "the merge in slot " + slot_ + "'s worktree cannot be finished: " + file + " " + why +
                                     "; it is no merge git left: remove it (git -C " + shell_word(path_.string()) +
                                     " merge --abort), then commit again");
  };
  std::vector<git_oid> heads;
  if (git_repository_mergehead_foreach(
          repo_.get(),
          [](const git_oid* oid, void* payload) {
            static_cast<std::vector<git_oid>*>(payload)->push_back(*oid);
            return 0;
          },
          &heads) != 0) {
    const std::string why = git_error_last() != nullptr ? git_error_last()->message : "";
    git_error_clear();
    throw refused("cannot be read (" + printable(why) + ")");
  }
  for (const auto& h : heads) {
    git_object* raw = nullptr;
    if (git_object_lookup(&raw, repo_.get(), &h, GIT_OBJECT_ANY) != 0) {
      git_error_clear();
      throw refused("names " + hex(h) + ", which this clone does not have");
    }
    ObjectPtr object(raw);
    if (git_object_type(object.get()) != GIT_OBJECT_COMMIT)
      throw refused("names " + hex(h) + ", a " + git_object_type2string(git_object_type(object.get())) +
                    ", not a commit");
  }
  return heads;
}

std::string WorktreeRepo::write_commit(git_tree* tree, const std::vector<const git_commit*>& parents,
                                       const std::string& message, const CommitAuthor& author) {
  git_signature* sig_raw = nullptr;
  if (git_signature_default(&sig_raw, repo_.get()) != 0)
    check(git_signature_now(&sig_raw, author.name.c_str(), author.email.c_str()), "make a signature");
  SignaturePtr sig(sig_raw);
  git_oid commit_id;
  const std::string text = message.back() == '\n' ? message : message + "\n";
  // The branch ref (not HEAD) is updated with its tip as the first parent:
  // libgit2 refuses if the branch moved meanwhile, so no commit is lost.
  check(git_commit_create(&commit_id, repo_.get(), ("refs/heads/" + branch_name()).c_str(), sig.get(), sig.get(),
                          nullptr, text.c_str(), tree, parents.size(), const_cast<const git_commit**>(parents.data())),
        "commit on " + branch_name());
  return hex(commit_id);
}

git_oid WorktreeRepo::fetch_onto(const std::string& onto) {
  RemoteAccess access(hub_);
  RemotePtr remote = access.hub_remote(repo_.get());
  const std::string tracking = "refs/remotes/origin/" + onto;
  StringArray specs({"+refs/heads/" + onto + ":" + tracking});
  git_fetch_options options = GIT_FETCH_OPTIONS_INIT;
  options.callbacks = access.callbacks();
  options.update_fetchhead = 0;
  options.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
  access.run("fetch " + onto + " from the hub",
             [&] { return git_remote_fetch(remote.get(), specs.get(), &options, "swarm sync"); });
  git_oid tip;
  if (git_reference_name_to_id(&tip, repo_.get(), tracking.c_str()) != 0) {
    git_error_clear();
    throw Error(Errc::not_found, "the hub has no branch " + onto + " to bring into slot " + slot_ + "'s worktree");
  }
  return tip;
}

SyncResult WorktreeRepo::sync(const std::string& onto, const std::string& message, const CommitAuthor& author) {
  require_on_branch();
  if (merging())
    throw Error(Errc::conflict, "a merge is in progress in slot " + slot_ + "'s worktree: resolve it and swarm "
                                "commit, or abort it (git -C " + shell_word(path_.string()) +
                                    " merge --abort), then sync again");
  for (const auto& change : changes())
    if (change.code != '?' && change.code != '!')
      throw Error(Errc::conflict, "slot " + slot_ + "'s worktree has uncommitted changes (" + change.path +
                                      ", ...): swarm commit them first, then sync");
  const git_oid their_id = fetch_onto(onto);
  SyncResult result;
  result.from = branch_tip().value_or("");
  git_annotated_commit* their_raw = nullptr;
  check(git_annotated_commit_lookup(&their_raw, repo_.get(), &their_id), "read the tip of " + onto);
  AnnotatedPtr their(their_raw);
  const git_annotated_commit* heads[] = {their.get()};
  git_merge_analysis_t analysis;
  git_merge_preference_t preference;
  check(git_merge_analysis(&analysis, &preference, repo_.get(), heads, 1), "compare " + onto + " with " + branch_name());
  git_checkout_options checkout = GIT_CHECKOUT_OPTIONS_INIT;
  checkout.checkout_strategy = GIT_CHECKOUT_SAFE;
  if (analysis & GIT_MERGE_ANALYSIS_UP_TO_DATE) {
    result.how = "up-to-date";
  } else if (analysis & GIT_MERGE_ANALYSIS_FASTFORWARD) {
    auto target = lookup_commit(repo_.get(), their_id, "read the tip of " + onto);
    checked_out(git_checkout_tree(repo_.get(), reinterpret_cast<const git_object*>(target.get()), &checkout), onto);
    // Only from the tip it was judged from: a commit made meanwhile is never lost.
    git_oid from_id;
    check(git_oid_fromstr(&from_id, result.from.c_str()), "read the tip of " + branch_name());
    git_reference* raw = nullptr;
    const int moved = git_reference_create_matching(&raw, repo_.get(), ("refs/heads/" + branch_name()).c_str(),
                                                     &their_id, 1, &from_id, "swarm sync: fast-forward");
    git_reference_free(raw);
    if (moved == GIT_EMODIFIED || moved == GIT_ELOCKED) {
      git_error_clear();
      throw Error(Errc::conflict, branch_name() + " moved while it was synced (a commit made meanwhile); sync again");
    }
    check(moved, "move " + branch_name());
    result.how = "fast-forward";
  } else {
    git_merge_options merge = GIT_MERGE_OPTIONS_INIT;
    checkout.checkout_strategy = GIT_CHECKOUT_SAFE | GIT_CHECKOUT_ALLOW_CONFLICTS;
    // Markers named as people know the sides: the slot's branch and the onto branch.
    const std::string ours = branch_name();
    checkout.our_label = ours.c_str();
    checkout.their_label = onto.c_str();
    checked_out(git_merge(repo_.get(), heads, 1, &merge, &checkout), onto);
    git_index* index_raw = nullptr;
    check(git_repository_index(&index_raw, repo_.get()), "open the index of " + path_.string());
    IndexPtr index(index_raw);
    result.conflicts = conflicted(index.get());
    if (!result.conflicts.empty()) {
      // Left as git leaves it: MERGE_HEAD, markers in the files, the index's conflicts.
      result.how = "conflict";
      result.to = result.from;
      return result;
    }
    commit_merge(message, {}, author, false);
    result.how = "merge";
  }
  result.to = branch_tip().value_or("");
  return result;
}

}  // namespace swarm::git
