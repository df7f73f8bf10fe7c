#include "swarm/base/safe_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>  // renameat2
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <thread>

#include "swarm/base/error.h"
#include "swarm/base/random.h"

namespace swarm {

namespace fs = std::filesystem;

namespace {

constexpr int kFolderFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

std::string user_name(uid_t uid) {
  if (const passwd* pw = ::getpwuid(uid); pw != nullptr && pw->pw_name != nullptr) return pw->pw_name;
  return "uid " + std::to_string(uid);
}

[[noreturn]] void refuse_link(const fs::path& path) {
  throw Error(Errc::bad_input, path.string() + " is a symbolic link where swarm keeps a folder or file of its own; "
                                               "swarm never follows links inside .swarm/ (one may have been "
                                               "planted): look where it points, then remove the link");
}

[[noreturn]] void refuse_stranger(const fs::path& path, uid_t owner) {
  throw Error(Errc::bad_input, path.string() + " belongs to " + user_name(owner) + ", not to " +
                                   user_name(::geteuid()) + " who runs swarm; swarm works only in folders of its "
                                   "own user: run swarm as " + user_name(owner) + ", or move the folder away");
}

// Checks what an open descriptor is: a folder (or a plain file with no
// other hard link: another name for a file elsewhere), ours.
void check_opened(int fd, const fs::path& path, bool folder, bool require_owner) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_filesystem_error("look at", path, errno);
  if (folder ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
    throw Error(Errc::bad_input, path.string() + " is not a " + (folder ? "folder" : "plain file") +
                                     ", where swarm keeps one of its own; move it away");
  if (require_owner && st.st_uid != ::geteuid()) refuse_stranger(path, st.st_uid);
  if (!folder && st.st_nlink > 1)
    throw Error(Errc::bad_input, path.string() + " has other hard links (it is another name for a file "
                                                 "elsewhere); swarm writes only files of its own: remove it");
}

// Why opening `name` under `dirfd` failed, as swarm's error. A link there
// fails with ELOOP (or ENOTDIR, asked for a folder): refused, naming it.
[[noreturn]] void refuse_open(int dirfd, const std::string& name, const fs::path& path, int errno_value, bool folder) {
  if (errno_value == ELOOP || errno_value == ENOTDIR) {
    struct stat st {};
    if (errno_value == ELOOP ||
        (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)))
      refuse_link(path);
    throw Error(Errc::bad_input, path.string() + " is not a " + (folder ? "folder" : "plain file") +
                                     " (or changed while swarm opened it), where swarm keeps one of its own; move "
                                     "it away");
  }
  throw_filesystem_error("open", path, errno_value);
}

std::string temp_name(const std::string& name) {
  return "." + name + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(thread_random()() % 1000000007ULL);
}

void write_all(int fd, std::string_view text, const fs::path& path) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_filesystem_error("write", path, errno);
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

void throw_filesystem_error(const std::string& doing, const fs::path& path, int errno_value) {
  throw Error(Errc::filesystem, "cannot " + doing + " " + path.string() + ": " + std::strerror(errno_value));
}

bool is_plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

std::optional<SafeDir> SafeDir::open_if_exists(const fs::path& path, bool require_owner) {
  int fd = ::open(path.c_str(), kFolderFlags);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) refuse_link(path);
    if (errno == ENOTDIR)
      throw Error(Errc::bad_input, path.string() + " is not a folder, where swarm keeps one of its own; move it away");
    throw_filesystem_error("open", path, errno);
  }
  UniqueFd owned(fd);
  check_opened(fd, path, true, require_owner);
  return SafeDir(std::move(owned), path);
}

SafeDir SafeDir::open(const fs::path& path) {
  auto dir = open_if_exists(path);
  if (!dir) throw Error(Errc::not_found, path.string() + " is missing");
  return std::move(*dir);
}

SafeDir SafeDir::make(const fs::path& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) throw_filesystem_error("make the folder", path, errno);
  return open(path);
}

fs::path SafeDir::fd_path() const { return fs::path("/proc/self/fd") / std::to_string(fd_.get()); }

EntryKind SafeDir::kind(const std::string& name) const {
  struct stat st {};
  if (::fstatat(fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return EntryKind::missing;
  if (S_ISLNK(st.st_mode)) return EntryKind::link;
  if (S_ISDIR(st.st_mode)) return EntryKind::folder;
  if (S_ISREG(st.st_mode)) return EntryKind::file;
  return EntryKind::other;
}

unsigned long SafeDir::links_of(const std::string& name) const {
  struct stat st {};
  if (::fstatat(fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;
  return static_cast<unsigned long>(st.st_nlink);
}

std::optional<SafeDir> SafeDir::open_child(const std::string& name, bool require_owner) const {
  const fs::path path = path_ / name;
  if (!is_plain_name(name)) throw Error(Errc::internal, "not a plain name inside " + path_.string() + ": " + name);
  int fd = ::openat(fd_.get(), name.c_str(), kFolderFlags);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    refuse_open(fd_.get(), name, path, errno, true);
  }
  UniqueFd owned(fd);
  check_opened(fd, path, true, require_owner);
  return SafeDir(std::move(owned), path);
}

std::optional<SafeDir> SafeDir::folder_if_exists(const std::string& name) const { return open_child(name, true); }

SafeDir SafeDir::folder(const std::string& name) const {
  auto dir = open_child(name, true);
  if (!dir) throw Error(Errc::not_found, (path_ / name).string() + " is missing");
  return std::move(*dir);
}

SafeDir SafeDir::make_folder(const std::string& name, mode_t mode) const {
  if (!is_plain_name(name)) throw Error(Errc::internal, "not a plain name inside " + path_.string() + ": " + name);
  if (::mkdirat(fd_.get(), name.c_str(), mode) != 0 && errno != EEXIST)
    throw_filesystem_error("make the folder", path_ / name, errno);
  return folder(name);
}

std::optional<SafeDir> SafeDir::make_new_folder(const std::string& name, mode_t mode) const {
  if (!is_plain_name(name)) throw Error(Errc::internal, "not a plain name inside " + path_.string() + ": " + name);
  if (::mkdirat(fd_.get(), name.c_str(), mode) != 0) {
    if (errno == EEXIST) return std::nullopt;
    throw_filesystem_error("make the folder", path_ / name, errno);
  }
  return folder(name);
}

std::optional<SafeDir> SafeDir::folder_below(const std::string& relative, bool require_owner) const {
  std::optional<SafeDir> at;
  std::size_t start = 0;
  while (start <= relative.size()) {
    std::size_t slash = relative.find('/', start);
    std::string part = relative.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    start = slash == std::string::npos ? relative.size() + 1 : slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") throw Error(Errc::internal, "'..' in a path below " + path_.string() + ": " + relative);
    const SafeDir& from = at ? *at : *this;
    auto next = from.open_child(part, require_owner);
    if (!next) return std::nullopt;
    at = std::move(next);
  }
  if (!at) {
    int fd = ::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) throw_filesystem_error("open", path_, errno);
    return SafeDir(UniqueFd(fd), path_);
  }
  return at;
}

// `keep(name, d_type)` for each entry but "." and "..", in the folder's order.
template <typename Keep>
std::vector<std::string> SafeDir::names_where(Keep&& keep) const {
  int fd = ::openat(fd_.get(), ".", kFolderFlags);
  if (fd < 0) throw_filesystem_error("list", path_, errno);
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    int e = errno;
    ::close(fd);
    throw_filesystem_error("list", path_, e);
  }
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != ".." && keep(name, entry->d_type)) names.push_back(std::move(name));
  }
  ::closedir(dir);
  return names;
}

std::vector<std::string> SafeDir::list() const {
  return names_where([](const std::string&, unsigned char) { return true; });
}

std::vector<std::string> SafeDir::subfolders() const {
  return names_where([&](const std::string& name, unsigned char type) {
    return type == DT_DIR || (type == DT_UNKNOWN && kind(name) == EntryKind::folder);
  });
}

bool SafeDir::still_is(const std::string& name, const SafeDir& other) const {
  struct stat here {}, there {};
  if (::fstatat(fd_.get(), name.c_str(), &here, AT_SYMLINK_NOFOLLOW) != 0) return false;
  if (::fstat(other.fd(), &there) != 0) return false;
  return here.st_dev == there.st_dev && here.st_ino == there.st_ino;
}

bool SafeDir::is_empty() const { return list().empty(); }

std::optional<std::string> SafeDir::read_file(const std::string& name, std::size_t max_bytes, std::string* why) const {
  const fs::path path = path_ / name;
  // O_NONBLOCK: a FIFO planted here must not block the read.
  int fd = ::openat(fd_.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *why = errno == ELOOP ? "it is a symbolic link (swarm never follows one in .swarm/)" : std::strerror(errno);
    return std::nullopt;
  }
  UniqueFd owned(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *why = std::strerror(errno);
    return std::nullopt;
  }
  if (S_ISDIR(st.st_mode)) *why = "it is a folder";
  else if (!S_ISREG(st.st_mode)) *why = "it is not a plain file (a FIFO, socket or device)";
  else if (st.st_nlink > 1) *why = "it has other hard links (another name for a file elsewhere)";
  else if (static_cast<std::uint64_t>(st.st_size) > max_bytes) *why = "it is larger than " + std::to_string(max_bytes) + " bytes";
  if (!why->empty()) return std::nullopt;
  std::string text;
  char buffer[8192];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *why = std::strerror(errno);
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > max_bytes) {
      *why = "it is larger than " + std::to_string(max_bytes) + " bytes";
      return std::nullopt;
    }
  }
  return text;
}

void SafeDir::write_file(const std::string& name, const std::string& text, mode_t mode, bool synced) const {
  const fs::path path = path_ / name;
  const std::string temp = temp_name(name);
  int fd = ::openat(fd_.get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) throw_filesystem_error("write", path_ / temp, errno);
  {
    UniqueFd owned(fd);
    try {
      write_all(fd, text, path);
      if (synced && ::fsync(fd) != 0) throw_filesystem_error("sync", path_ / temp, errno);
    } catch (...) {
      ::unlinkat(fd_.get(), temp.c_str(), 0);
      throw;
    }
  }
  if (::renameat(fd_.get(), temp.c_str(), fd_.get(), name.c_str()) != 0) {
    int e = errno;
    ::unlinkat(fd_.get(), temp.c_str(), 0);
    throw_filesystem_error("replace", path, e);
  }
  if (synced && ::fsync(fd_.get()) != 0) throw_filesystem_error("sync", path_, errno);
}

bool SafeDir::create_file(const std::string& name, const std::string& text, mode_t mode) const {
  // Whole or not there, even across a crash: written and synced under a
  // temporary name, then moved in only if nothing is there (a rename that
  // never replaces: EEXIST when another made it first), then the folder
  // synced. An O_EXCL create then write leaves an empty file when the
  // machine crashes between them. A file system without such a rename
  // (EINVAL) gets the create then write, synced.
  {
    struct stat st {};
    if (::fstatat(fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return false;
  }
  const std::string temp = temp_name(name);
  int fd = ::openat(fd_.get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) throw_filesystem_error("create", path_ / temp, errno);
  {
    UniqueFd owned(fd);
    try {
      write_all(fd, text, path_ / name);
      if (::fsync(fd) != 0) throw_filesystem_error("sync", path_ / temp, errno);
    } catch (...) {
      ::unlinkat(fd_.get(), temp.c_str(), 0);
      throw;
    }
  }
  if (::renameat2(fd_.get(), temp.c_str(), fd_.get(), name.c_str(), RENAME_NOREPLACE) != 0) {
    const int e = errno;
    ::unlinkat(fd_.get(), temp.c_str(), 0);
    if (e == EEXIST) return false;
    if (e != EINVAL && e != ENOSYS) throw_filesystem_error("create", path_ / name, e);
    fd = ::openat(fd_.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) {
      if (errno == EEXIST) return false;
      throw_filesystem_error("create", path_ / name, errno);
    }
    UniqueFd owned(fd);
    write_all(fd, text, path_ / name);
    if (::fsync(fd) != 0) throw_filesystem_error("sync", path_ / name, errno);
  }
  if (::fsync(fd_.get()) != 0) throw_filesystem_error("sync", path_, errno);
  return true;
}

UniqueFd SafeDir::open_file(const std::string& name, mode_t mode) const {
  const fs::path path = path_ / name;
  int fd = ::openat(fd_.get(), name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
  if (fd < 0) refuse_open(fd_.get(), name, path, errno, false);
  UniqueFd owned(fd);
  check_opened(fd, path, false, true);
  return owned;
}

UniqueFd SafeDir::create_exclusive(const std::string& name, mode_t mode) const {
  int fd = ::openat(fd_.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) throw_filesystem_error("create", path_ / name, errno);
  return UniqueFd(fd);
}

bool SafeDir::copy_file(const std::string& name, const SafeDir& to, const std::string& new_name) const {
  int in = ::openat(fd_.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (in < 0) return false;
  UniqueFd source(in);
  struct stat st {};
  if (::fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  UniqueFd target = to.create_exclusive(new_name, st.st_mode & 07777);
  char buffer[65536];
  while (true) {
    ssize_t n = ::read(in, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_filesystem_error("read", path_ / name, errno);
    if (n == 0) break;
    write_all(target.get(), std::string_view(buffer, static_cast<std::size_t>(n)), to.path() / new_name);
  }
  return true;
}

bool SafeDir::move(const std::string& name, const SafeDir& to, const std::string& new_name) const {
  if (::renameat(fd_.get(), name.c_str(), to.fd(), new_name.c_str()) == 0) return true;
  if (errno == EXDEV) return false;
  throw_filesystem_error("move " + (path_ / name).string() + " to", to.path() / new_name, errno);
}

}  // namespace swarm
