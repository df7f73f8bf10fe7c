// A new slot's files, written the way `git clone` writes them: one open and
// one write per file, and an index with each file's stat data. libgit2's
// checkout looks up attributes for every path, resolving its folder with
// realpath each time (about 20 failing readlink calls per file): 2.5x the
// time of `git clone` on a 20,000-file repository (adr/0016). Used only when
// no attribute or setting could make a file differ from its blob: anything
// else goes through libgit2's checkout.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <thread>
#include <optional>
#include <string>
#include <vector>

#include "swarm/base/error.h"
#include "swarm/git/repos.h"

namespace swarm::git {

namespace fs = std::filesystem;

namespace {

using BlobPtr = std::unique_ptr<git_blob, Freer<git_blob_free>>;
using ConfigPtr = std::unique_ptr<git_config, Freer<git_config_free>>;

struct Entry {
  std::string path;  // relative to the worktree, '/'-separated
  git_oid id;
  git_filemode_t mode;
};

// Whether any attribute, filter or setting could make a checked-out file
// differ from its blob, or a path be special: then libgit2's checkout does it.
bool needs_libgit2(git_repository* repo) {
  git_config* raw = nullptr;
  if (git_repository_config_snapshot(&raw, repo) != 0) return true;
  ConfigPtr config(raw);
  auto set = [&](const char* name) {
    git_buf value = GIT_BUF_INIT;
    int rc = git_config_get_string_buf(&value, config.get(), name);
    std::string text = rc == 0 ? std::string(value.ptr, value.size) : "";
    git_buf_dispose(&value);
    git_error_clear();
    return rc == 0 ? std::optional<std::string>(text) : std::nullopt;
  };
  if (auto crlf = set("core.autocrlf"); crlf && *crlf != "false") return true;
  if (auto eol = set("core.eol"); eol && *eol != "lf" && *eol != "native") return true;
  int symlinks = 1;
  if (git_config_get_bool(&symlinks, config.get(), "core.symlinks") == 0 && !symlinks) return true;
  git_error_clear();
  if (set("core.attributesfile")) return true;
  std::error_code ec;
  const std::string home = std::getenv("HOME") != nullptr ? std::getenv("HOME") : "";
  const std::string xdg = std::getenv("XDG_CONFIG_HOME") != nullptr ? std::getenv("XDG_CONFIG_HOME") : "";
  std::vector<fs::path> files = {"/etc/gitattributes", fs::path(git_repository_path(repo)) / "info/attributes"};
  if (!xdg.empty()) files.push_back(fs::path(xdg) / "git/attributes");
  else if (!home.empty()) files.push_back(fs::path(home) / ".config/git/attributes");
  for (const auto& file : files)
    if (fs::exists(file, ec)) return true;
  return false;
}

// A name git itself would refuse to check out on this system.
bool unsafe_name(const char* name) {
  if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0 || std::strchr(name, '/') != nullptr) return true;
  return strcasecmp(name, ".git") == 0;
}

struct Walk {
  std::vector<Entry> files;
  bool fallback = false;  // a .gitattributes, an odd mode or name: libgit2 does it
};

int collect(const char* root, const git_tree_entry* entry, void* payload) {
  auto* walk = static_cast<Walk*>(payload);
  const char* name = git_tree_entry_name(entry);
  git_filemode_t mode = git_tree_entry_filemode(entry);
  if (unsafe_name(name) || std::strcmp(name, ".gitattributes") == 0) {
    walk->fallback = true;
    return -1;  // stops the walk
  }
  if (mode == GIT_FILEMODE_TREE) return 0;
  if (mode != GIT_FILEMODE_BLOB && mode != GIT_FILEMODE_BLOB_EXECUTABLE && mode != GIT_FILEMODE_LINK &&
      mode != GIT_FILEMODE_COMMIT) {
    walk->fallback = true;
    return -1;
  }
  walk->files.push_back({std::string(root) + name, *git_tree_entry_id(entry), mode});
  return 0;
}

void write_all(int fd, const char* data, size_t size, const std::string& path) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(Errc::filesystem, "cannot write " + path + ": " + std::strerror(errno));
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// The index entry of a file just written, with its stat data, so that a
// later status compares stat data instead of hashing the file.
git_index_entry index_entry(const Entry& e, const struct stat& st) {
  git_index_entry out{};
  out.ctime.seconds = static_cast<int32_t>(st.st_ctim.tv_sec);
  out.ctime.nanoseconds = static_cast<uint32_t>(st.st_ctim.tv_nsec);
  out.mtime.seconds = static_cast<int32_t>(st.st_mtim.tv_sec);
  out.mtime.nanoseconds = static_cast<uint32_t>(st.st_mtim.tv_nsec);
  out.dev = static_cast<uint32_t>(st.st_dev);
  out.ino = static_cast<uint32_t>(st.st_ino);
  out.mode = e.mode;
  out.uid = st.st_uid;
  out.gid = st.st_gid;
  out.file_size = static_cast<uint32_t>(st.st_size);
  out.id = e.id;
  out.path = e.path.c_str();
  return out;
}

}  // namespace

namespace {

// Makes every folder the files lie in, parents first.
void make_folders(const fs::path& workdir, const std::vector<Entry>& files) {
  std::string made;  // the last file's folder: the walk gives a folder's files in a row
  for (const auto& e : files) {
    const auto slash = e.path.rfind('/');
    const std::string dir = slash == std::string::npos ? "" : e.path.substr(0, slash);
    if (dir.empty() || dir == made) continue;
    for (size_t at = dir.find('/');; at = dir.find('/', at + 1)) {
      const std::string part = (workdir / dir.substr(0, at)).string();
      if (::mkdir(part.c_str(), 0777) != 0 && errno != EEXIST)
        throw Error(Errc::filesystem, "cannot make the folder " + part + ": " + std::strerror(errno));
      if (at == std::string::npos) break;
    }
    made = dir;
  }
}

// Writes one file, symlink or submodule folder, and says how it is on disk.
struct stat write_one(git_repository* repo, const fs::path& workdir, const Entry& e) {
  const std::string full = (workdir / e.path).string();
  struct stat st {};
  if (e.mode == GIT_FILEMODE_COMMIT) {  // a submodule: an empty folder, as git leaves it
    if (::mkdir(full.c_str(), 0777) != 0 && errno != EEXIST)
      throw Error(Errc::filesystem, "cannot make the folder " + full + ": " + std::strerror(errno));
    return st;
  }
  git_blob* blob_raw = nullptr;
  check(git_blob_lookup(&blob_raw, repo, &e.id), "read " + e.path);
  BlobPtr blob(blob_raw);
  const char* data = static_cast<const char*>(git_blob_rawcontent(blob.get()));
  const auto size = static_cast<size_t>(git_blob_rawsize(blob.get()));
  if (e.mode == GIT_FILEMODE_LINK) {
    const std::string target(data, size);
    if (::symlink(target.c_str(), full.c_str()) != 0 || ::lstat(full.c_str(), &st) != 0)
      throw Error(Errc::filesystem, "cannot make the symlink " + full + ": " + std::strerror(errno));
    return st;
  }
  const mode_t mode = e.mode == GIT_FILEMODE_BLOB_EXECUTABLE ? 0777 : 0666;  // the umask applies
  int fd = ::open(full.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) throw Error(Errc::filesystem, "cannot create " + full + ": " + std::strerror(errno));
  try {
    write_all(fd, data, size, full);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::fstat(fd, &st) != 0 || ::close(fd) != 0)
    throw Error(Errc::filesystem, "cannot finish " + full + ": " + std::strerror(errno));
  return st;
}

// Fewer files than this per thread are not worth a thread.
constexpr size_t kFilesPerThread = 2000;
constexpr unsigned kMaxThreads = 4;

}  // namespace

bool write_tree_plainly(git_repository* repo, git_tree* tree) {
  if (needs_libgit2(repo)) return false;
  Walk walk;
  int rc = git_tree_walk(tree, GIT_TREEWALK_PRE, collect, &walk);
  if (walk.fallback) {
    git_error_clear();
    return false;
  }
  check(rc, "read the tree to check out");

  const fs::path workdir = git_repository_workdir(repo);
  const std::string git_dir = git_repository_path(repo);
  make_folders(workdir, walk.files);

  // Reading blobs (inflating, resolving deltas) is most of the work: the
  // files are shared out between threads, each with its own repository
  // handle (libgit2 objects are not shared across threads).
  const size_t count = walk.files.size();
  const unsigned threads = static_cast<unsigned>(
      std::clamp<size_t>(count / kFilesPerThread, 1, std::min(kMaxThreads, std::max(1u, std::thread::hardware_concurrency()))));
  std::vector<struct stat> stats(count);
  std::vector<std::string> errors(threads);
  auto work = [&](unsigned t, git_repository* own) {
    try {
      RepositoryPtr opened;
      if (own == nullptr) {
        git_repository* raw = nullptr;
        check(git_repository_open_bare(&raw, git_dir.c_str()), "open " + git_dir);
        opened.reset(raw);
        own = opened.get();
      }
      for (size_t i = t; i < count; i += threads) stats[i] = write_one(own, workdir, walk.files[i]);
    } catch (const std::exception& e) {
      errors[t] = e.what();
    }
  };
  std::vector<std::thread> workers;
  for (unsigned t = 1; t < threads; ++t) workers.emplace_back(work, t, nullptr);
  work(0, repo);
  for (auto& w : workers) w.join();
  for (const auto& error : errors)
    if (!error.empty()) throw Error(filesystem_refused(error) ? Errc::filesystem : Errc::internal, "check out into " + workdir.string() + ": " + error);

  git_index* index_raw = nullptr;
  check(git_repository_index(&index_raw, repo), "open the index");
  IndexPtr index(index_raw);
  check(git_index_clear(index.get()), "clear the index");
  for (size_t i = 0; i < count; ++i) {
    git_index_entry entry = index_entry(walk.files[i], stats[i]);
    check(git_index_add(index.get(), &entry), "add " + walk.files[i].path + " to the index");
  }
  check(git_index_write(index.get()), "write the index");
  return true;
}

}  // namespace swarm::git
