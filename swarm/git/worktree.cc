#include "swarm/git/worktree.h"

#include "swarm/base/error.h"
#include "swarm/git/hub.h"

namespace swarm {

namespace fs = std::filesystem;

Worktree Worktree::create(const HubLocation& hub, const fs::path& path, const std::string& slot,
                          const WorktreeStart& start, WorktreeStarted* started) {
  WorktreeStarted ignored;
  auto repo = git_backend().create_worktree(hub.text, path, slot, start, started ? started : &ignored);
  return Worktree(std::move(repo), fs::weakly_canonical(path), slot);
}

Worktree Worktree::create(const Hub& hub, const fs::path& path, const std::string& slot) {
  return create(hub.location(), path, slot);
}

Worktree Worktree::open(const fs::path& path, const std::string& slot, const HubLocation& hub) {
  auto repo = git_backend().open_worktree(path, slot, hub.text);
  return Worktree(std::move(repo), fs::weakly_canonical(path), slot);
}

std::string path_inside(const fs::path& worktree, const fs::path& cwd, const std::string& user_path) {
  if (user_path.empty()) throw Error(Errc::bad_input, "an empty path names no file");
  const fs::path root = fs::weakly_canonical(worktree);
  fs::path full = (fs::path(user_path).is_absolute() ? fs::path(user_path) : cwd / user_path).lexically_normal();
  if (full.filename().empty()) full = full.parent_path();  // "dir/" names dir
  // Resolve the folders the path goes through (so "..", and links to folders
  // elsewhere, end up outside the root), but keep the last name as given: git
  // commits a symlink as a link.
  fs::path candidate = full.filename() == ".." || full.filename() == "."
                           ? fs::weakly_canonical(full)
                           : fs::weakly_canonical(full.parent_path()) / full.filename();
  auto inside = [&](const fs::path& p) {
    fs::path rel = p.lexically_relative(root);
    return !rel.empty() && *rel.begin() != "..";
  };
  if (!inside(candidate))
    throw Error(Errc::bad_input, "path " + user_path + " is outside the worktree " + root.string());
  if (fs::is_symlink(fs::symlink_status(candidate)) && !inside(fs::weakly_canonical(candidate)))
    throw Error(Errc::bad_input, "path " + user_path + " is a symlink that leads out of the worktree " +
                                     root.string());
  // git keeps files, folders and symlinks; a pipe, socket or device named
  // here would otherwise be "nothing to commit" without a word.
  if (auto status = fs::symlink_status(candidate); fs::is_fifo(status) || fs::is_socket(status) ||
                                                    fs::is_block_file(status) || fs::is_character_file(status))
    throw Error(Errc::bad_input, "path " + user_path + " is a " +
                                     (fs::is_fifo(status) ? "FIFO (named pipe)" : fs::is_socket(status) ? "socket" : "device") +
                                     ": git commits only files, folders and symlinks");
  fs::path relative = candidate.lexically_relative(root);
  if (*relative.begin() == ".git")
    throw Error(Errc::bad_input, "path " + user_path + " is inside the worktree's .git folder");
  return relative.generic_string();  // "." for the worktree itself
}

}  // namespace swarm
