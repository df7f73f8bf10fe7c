// Removing what a SafeDir holds: a file, an empty folder, or a whole tree,
// each opened without following links, so that a link planted inside never
// takes the removal outside the folder.
#include "swarm/base/safe_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <thread>

#include "swarm/base/error.h"

namespace swarm {

namespace fs = std::filesystem;

namespace {

constexpr int kFolderFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

void remove_tree_at(int dirfd, const std::string& name, const fs::path& path) {
  if (::unlinkat(dirfd, name.c_str(), 0) == 0 || errno == ENOENT) return;  // a file, a link, or gone
  if (errno != EISDIR && errno != EPERM) throw_filesystem_error("delete", path, errno);
  int fd = ::openat(dirfd, name.c_str(), kFolderFlags);
  if (fd < 0) {
    if (errno == ENOENT) return;  // someone else finished it
    throw_filesystem_error("open", path, errno);
  }
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    int e = errno;
    ::close(fd);
    throw_filesystem_error("list", path, e);
  }
  std::vector<std::string> children;
  while (const dirent* entry = ::readdir(dir)) {
    std::string child = entry->d_name;
    if (child != "." && child != "..") children.push_back(std::move(child));
  }
  try {
    for (const auto& child : children) remove_tree_at(::dirfd(dir), child, path / child);
  } catch (...) {
    ::closedir(dir);
    throw;
  }
  ::closedir(dir);
  if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) throw_filesystem_error("delete", path, errno);
}

// A big tree goes faster on two processors than on one: the folders a few
// levels down are split between this thread and one more, each removing
// its share whole (remove_tree_at, never following a link: every folder is
// opened below its parent's descriptor with O_NOFOLLOW), then this thread
// removes what is left. A tree with few folders is removed by this thread
// alone.
constexpr std::size_t kSplitAt = 8;     // folders in the frontier worth a second thread
constexpr int kSplitDepth = 3;          // levels looked into for them

struct Subtree {
  int parent;  // an open descriptor of its folder (owned by `opened` below)
  std::string name;
  fs::path path;
};

void remove_tree_split(int dirfd, const std::string& name, const fs::path& path) {
  std::vector<UniqueFd> opened;
  std::vector<Subtree> frontier = {{dirfd, name, path}};
  for (int depth = 0; depth < kSplitDepth && frontier.size() < kSplitAt; ++depth) {
    std::vector<Subtree> next;
    for (const auto& at : frontier) {
      const int fd = ::openat(at.parent, at.name.c_str(), kFolderFlags);
      if (fd < 0) continue;  // a file, a link or gone: the last pass below deals with it
      opened.emplace_back(fd);
      const int listed = ::dup(fd);
      DIR* dir = listed < 0 ? nullptr : ::fdopendir(listed);
      if (dir == nullptr) {
        if (listed >= 0) ::close(listed);
        continue;
      }
      while (const dirent* entry = ::readdir(dir)) {
        const std::string child = entry->d_name;
        if (child != "." && child != ".." && entry->d_type == DT_DIR) next.push_back({fd, child, at.path / child});
      }
      ::closedir(dir);
    }
    if (next.empty()) break;
    frontier = std::move(next);
  }
  if (frontier.size() >= kSplitAt) {
    std::exception_ptr failed;
    std::thread helper([&] {
      try {
        for (std::size_t i = 1; i < frontier.size(); i += 2)
          remove_tree_at(frontier[i].parent, frontier[i].name, frontier[i].path);
      } catch (...) {
        failed = std::current_exception();
      }
    });
    try {
      for (std::size_t i = 0; i < frontier.size(); i += 2)
        remove_tree_at(frontier[i].parent, frontier[i].name, frontier[i].path);
    } catch (...) {
      helper.join();
      throw;
    }
    helper.join();
    if (failed) std::rethrow_exception(failed);
  }
  remove_tree_at(dirfd, name, path);
}

}  // namespace

void SafeDir::remove_file(const std::string& name) const {
  if (::unlinkat(fd_.get(), name.c_str(), 0) != 0 && errno != ENOENT)
    throw_filesystem_error("delete", path_ / name, errno);
}

bool SafeDir::remove_empty_folder(const std::string& name) const {
  return ::unlinkat(fd_.get(), name.c_str(), AT_REMOVEDIR) == 0;
}

void SafeDir::remove_tree(const std::string& name) const {
  if (!is_plain_name(name)) throw Error(Errc::internal, "not a plain name inside " + path_.string() + ": " + name);
  remove_tree_split(fd_.get(), name, path_ / name);
}

}  // namespace swarm
