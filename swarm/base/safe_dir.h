// .swarm/ and the folders swarm keeps in it, reached only through directory
// descriptors: nothing under .swarm/ is ever opened, moved or deleted by a
// path that a planted symbolic link could send elsewhere (adr/0018). A
// folder is used only when it is a real directory owned by this user; a link
// or a stranger's folder in its place is refused (bad input, naming it).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace swarm {

// An owned file descriptor: closed when it dies.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

// What an entry of a folder is, seen without following it.
enum class EntryKind { missing, file, folder, link, other };

class SafeDir {
 public:
  // `path` as a folder swarm keeps. Throws not_found when it is missing,
  // bad_input when it is a link, no folder, or another user's.
  static SafeDir open(const std::filesystem::path& path);
  // The same, nullopt when it is missing; `require_owner` false for a folder
  // that may be shared with other users (a hub on a shared filesystem).
  static std::optional<SafeDir> open_if_exists(const std::filesystem::path& path, bool require_owner = true);
  // Makes the folder when it is missing (its parent need not be swarm's:
  // .swarm/ itself sits in the user's workspace), then opens it.
  static SafeDir make(const std::filesystem::path& path, mode_t mode = 0755);

  SafeDir(SafeDir&&) = default;
  SafeDir& operator=(SafeDir&&) = default;

  const std::filesystem::path& path() const { return path_; }
  int fd() const { return fd_.get(); }
  // The path that reaches this folder through its descriptor: for programs
  // that take paths (copies across filesystems), immune to a swap of any
  // folder above it.
  std::filesystem::path fd_path() const;

  // Children, by name (one component, never a path).
  EntryKind kind(const std::string& name) const;
  // How many names the entry has (its hard links), seen without following
  // it; 0 when it is missing. A plain file with more than one may be a name
  // for a file elsewhere: writing to it writes there.
  unsigned long links_of(const std::string& name) const;
  SafeDir folder(const std::string& name) const;
  std::optional<SafeDir> folder_if_exists(const std::string& name) const;
  SafeDir make_folder(const std::string& name, mode_t mode = 0755) const;
  // Makes `name` and opens it; nullopt when something is there already.
  std::optional<SafeDir> make_new_folder(const std::string& name, mode_t mode = 0755) const;
  // A folder below this one by a relative path ("a/b"), each step checked
  // not to be a link; `require_owner` also checks each is this user's
  // (folders inside a worktree are the agent's data: no owner check there).
  std::optional<SafeDir> folder_below(const std::string& relative, bool require_owner) const;
  // The names in this folder ("." and ".." left out), unsorted.
  std::vector<std::string> list() const;
  // The names of its folders only (links left out), unsorted.
  std::vector<std::string> subfolders() const;
  // Whether the entry `name` is still the folder `other` (same device and inode).
  bool still_is(const std::string& name, const SafeDir& other) const;
  bool is_empty() const;

  // A plain file of at most `max_bytes`, not through a link; nullopt with
  // `why` otherwise (missing, a link, a folder, a FIFO, a file with other
  // hard links, too big).
  std::optional<std::string> read_file(const std::string& name, std::size_t max_bytes, std::string* why) const;
  // Writes `text` to `name` through a temporary file created here (never
  // through a link, with `mode` from its first byte) and a rename, so readers
  // see the old or the new file; a link at `name` is replaced, not followed.
  // `synced`: on disk before it returns (the file and the rename), so a
  // crash of the machine right after leaves the new file.
  void write_file(const std::string& name, const std::string& text, mode_t mode = 0644, bool synced = false) const;
  // Creates `name` with `text` only when nothing is there; false when something is.
  // The file appears whole and synced, or not at all, even across a crash.
  bool create_file(const std::string& name, const std::string& text, mode_t mode = 0644) const;
  // Opens (creating when missing) the plain file `name` for reading and
  // writing, not through a link; throws bad_input when it is a link, not
  // this user's, or has other hard links (a name for a file elsewhere).
  UniqueFd open_file(const std::string& name, mode_t mode = 0644) const;
  // Creates `name` for writing, only when nothing is there (O_EXCL).
  UniqueFd create_exclusive(const std::string& name, mode_t mode = 0644) const;
  // Copies the plain file `name` to `to`/`new_name` (made there, nothing
  // replaced), never through a link at either end. false when `name` is no
  // plain file (a FIFO, a socket, gone): nothing to copy.
  bool copy_file(const std::string& name, const SafeDir& to, const std::string& new_name) const;

  // Removes the file or link `name` (never what a link points to); missing is fine.
  void remove_file(const std::string& name) const;
  // Removes the empty folder `name`; false when it is not empty or missing.
  bool remove_empty_folder(const std::string& name) const;
  // Moves `name` to `to`/`new_name` by one rename (a link moves as a link).
  // false when the two are on different filesystems (nothing moved: copy
  // instead); throws on any other failure.
  bool move(const std::string& name, const SafeDir& to, const std::string& new_name) const;
  // Deletes `name` and everything under it, never following a link: a link
  // is removed, not what it names. Throws naming the first thing it could not delete.
  void remove_tree(const std::string& name) const;

 private:
  SafeDir(UniqueFd fd, std::filesystem::path path) : fd_(std::move(fd)), path_(std::move(path)) {}
  // Opens child `name` as a folder; nullopt when missing.
  std::optional<SafeDir> open_child(const std::string& name, bool require_owner) const;
  // The entries' names for which `keep(name, d_type)` (list, subfolders).
  template <typename Keep>
  std::vector<std::string> names_where(Keep&& keep) const;

  UniqueFd fd_;
  std::filesystem::path path_;
};

// The error a refused or failed filesystem call becomes: it names the path
// and what was being done (`errno_value`: the errno of the call).
[[noreturn]] void throw_filesystem_error(const std::string& doing, const std::filesystem::path& path, int errno_value);

// Whether `name` is one component: not empty, no '/', not "." or "..".
bool is_plain_name(const std::string& name);

}  // namespace swarm
