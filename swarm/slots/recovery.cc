#include "swarm/slots/recovery.h"

#include <optional>

#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/warnings.h"
#include "swarm/git/worktree.h"
#include "swarm/workspace/workspace.h"

namespace swarm {

namespace fs = std::filesystem;

namespace {

// Our own crumbs in a slot folder, which hold nothing to keep.
bool is_crumb(const std::string& name) {
  return name == kLeafPidName || name == kSessionBaseName || name == kSalvageMarkName;
}

[[noreturn]] void cannot_salvage(const fs::path& from, const fs::path& to, const std::error_code& ec) {
  throw Error(Errc::filesystem, "cannot salvage " + from.string() + " to " + to.string() + ": " + ec.message());
}

// "a/b/c" as its folder "a/b" and its name "c".
std::pair<std::string, std::string> split_last(const std::string& relative) {
  auto slash = relative.rfind('/');
  if (slash == std::string::npos) return {"", relative};
  return {relative.substr(0, slash), relative.substr(slash + 1)};
}

// The files under `path` (a folder reached through a descriptor's path),
// links counted as files and never followed.
int files_under(const fs::path& path) {
  std::error_code ec;
  int files = 0;
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    files += fs::is_directory(it->symlink_status()) ? 0 : 1;
  return files;
}

// The recovery folder of one salvage, made when the first file goes in.
class RecoveryFolder {
 public:
  RecoveryFolder(const SafeDir& root, const std::string& slot, TimePoint now, bool move, Salvage* out)
      : root_(root), name_(recovery_name(slot, now)), now_(now), move_(move), out_(out) {}

  // A header line for the manifest, written when the folder is made.
  void describe(std::string header) { header_ = std::move(header); }

  // Lists `relative` with its code, and keeps what is at `relative` below
  // `from` (unless it is gone) at the same relative path.
  void add(char code, const std::string& relative, const SafeDir& from) { add(code, relative, from, relative); }
  // The same, from `source` below `from`, kept as `relative`.
  void add(char code, const std::string& relative, const SafeDir& from, const std::string& source) {
    open();
    auto [source_dir, source_name] = split_last(source);
    const std::optional<SafeDir>* parent = nullptr;
    bool blocked = false;
    try {
      parent = &source_folder(from, source_dir);
    } catch (const Error& e) {
      // A folder on its way is a link now (swapped in since git listed the
      // path): what lies there is not the worktree's, and stays where it is.
      if (e.kind() != Errc::bad_input) throw;
      blocked = true;
    }
    if (blocked) {
      ++out_->skipped;
      code = 'L';
    } else if (code == 'D' || !*parent || (*parent)->kind(source_name) == EntryKind::missing) {
      ++out_->deleted;
    } else {
      auto [dest_dir, dest_name] = split_last(relative);
      const SafeDir& into = dest_folder(dest_dir);
      out_->files += move_ ? move_one(**parent, source_name, into, dest_name)
                           : copy_one(**parent, source_name, into, dest_name);
    }
    manifest_ += code;
    manifest_ += ' ';
    manifest_ += relative;
    manifest_ += '\n';
    if (manifest_.size() >= kManifestPiece) flush();
  }

  void close() {
    if (!folder_) return;
    flush();
  }

 private:
  static constexpr std::size_t kManifestPiece = 64 * 1024;

  void open() {
    if (folder_) return;
    // A folder of its own, made here (never one someone put there first).
    for (int n = 1; !folder_; ++n) folder_ = root_.make_new_folder(n == 1 ? name_ : name_ + "-" + std::to_string(n), 0700);
    out_->folder = folder_->path();
    manifest_fd_ = folder_->create_exclusive("MANIFEST");
    manifest_ = "# " + header_ + "\n# salvaged " + format_rfc3339(now_) +
                "; codes: ? untracked, ! ignored, A added, M modified, D deleted, R renamed, T type change, F kept "
                "whole, L left in place (a folder on its path had become a link)\n";
  }

  void flush() {
    std::size_t done = 0;
    while (done < manifest_.size()) {
      ssize_t n = ::write(manifest_fd_.get(), manifest_.data() + done, manifest_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw_filesystem_error("write", folder_->path() / "MANIFEST", errno);
      done += static_cast<std::size_t>(n);
    }
    manifest_.clear();
  }

  // The folder `dir` below `from` (nullopt when it is not there), opened
  // once for the run of paths in it: git lists a folder's paths together,
  // so each folder on the way is opened (without following a link) once,
  // not once per file. What was opened is the worktree's folder, wherever
  // it is moved afterwards: nothing is reached through a path again.
  const std::optional<SafeDir>& source_folder(const SafeDir& from, const std::string& dir) {
    if (!source_cached_ || source_from_ != &from || source_dir_ != dir) {
      source_cached_ = false;
      source_ = from.folder_below(dir, false);
      source_from_ = &from;
      source_dir_ = dir;
      source_cached_ = true;
    }
    return source_;
  }
  // The folder `dir` of the recovery folder, made as needed (kept for the
  // next path in it).
  const SafeDir& dest_folder(const std::string& dir) {
    if (!dest_ || dest_dir_ != dir) {
      dest_.reset();
      dest_.emplace(make_below(*folder_, dir));
      dest_dir_ = dir;
    }
    return *dest_;
  }

  // The folder `relative` below `at`, made as needed.
  static SafeDir make_below(const SafeDir& at, const std::string& relative) {
    auto existing = at.folder_below("", false);
    SafeDir dir = std::move(*existing);
    std::size_t start = 0;
    while (start < relative.size()) {
      std::size_t slash = relative.find('/', start);
      std::string part = relative.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
      start = slash == std::string::npos ? relative.size() : slash + 1;
      if (!part.empty()) dir = dir.make_folder(part, 0700);
    }
    return dir;
  }

  // Moves an entry by one rename (a link as a link, a folder whole); copies
  // it when the rename cannot be done (another filesystem), and removes
  // nothing then: the folder it is in goes whole right after. Returns the
  // files kept.
  static int move_one(const SafeDir& from, const std::string& name, const SafeDir& to, const std::string& new_name) {
    const bool folder = from.kind(name) == EntryKind::folder;
    if (!from.move(name, to, new_name)) return copy_one(from, name, to, new_name);
    return folder ? files_under(to.fd_path() / new_name) : 1;
  }

  // Copies an entry: a file, a link (as a link) or a whole folder (a nested
  // repository, a .git). Through the descriptors' paths: no folder above
  // either end can be swapped under it. Returns the files copied.
  static int copy_one(const SafeDir& from, const std::string& name, const SafeDir& to, const std::string& new_name) {
    const fs::path source = from.fd_path() / name;
    const fs::path target = to.fd_path() / new_name;
    std::error_code ec;
    switch (from.kind(name)) {
      case EntryKind::link: fs::copy_symlink(source, target, ec); break;
      case EntryKind::folder:
        fs::copy(source, target, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
        if (ec) cannot_salvage(from.path() / name, to.path() / new_name, ec);
        return files_under(target);
      case EntryKind::file: return from.copy_file(name, to, new_name) ? 1 : 0;  // never through a link
      case EntryKind::other:
      case EntryKind::missing: return 0;  // a FIFO or socket holds no data to keep
    }
    if (ec) cannot_salvage(from.path() / name, to.path() / new_name, ec);
    return 1;
  }

  const SafeDir& root_;
  std::string name_;
  TimePoint now_;
  bool move_;
  Salvage* out_;
  std::string header_ = "salvaged files";
  std::optional<SafeDir> folder_;
  UniqueFd manifest_fd_;
  std::string manifest_;
  // The last source folder opened (source_folder) and destination made.
  bool source_cached_ = false;
  const SafeDir* source_from_ = nullptr;
  std::string source_dir_;
  std::optional<SafeDir> source_;
  std::optional<SafeDir> dest_;
  std::string dest_dir_;
};

// Folders git could not look into (no read or search permission for this
// user) hold files that exist nowhere else: each is kept whole, by one
// rename (which needs no permission inside it). Before a worktree goes.
void keep_unreadable_folders(const SafeDir& dir, const std::string& relative, RecoveryFolder& folder) {
  // A folder that opens but cannot be listed throws: the salvage stops, and
  // the slot's folder is kept.
  for (const auto& name : dir.subfolders()) {
    if (relative.empty() && name == ".git") continue;
    const std::string path = relative.empty() ? name : relative + "/" + name;
    std::optional<SafeDir> sub;
    try {
      sub = dir.folder_below(name, false);
    } catch (const Error& e) {
      if (e.kind() == Errc::bad_input) continue;  // a link: the agent's data, left as it is
      if (e.kind() != Errc::filesystem) throw;
      folder.add('F', path, dir, name);  // cannot even be opened
      continue;
    }
    if (sub) keep_unreadable_folders(*sub, path, folder);
  }
}

// A readable worktree: the history the hub lacks, then the uncommitted files.
void salvage_worktree(Worktree& worktree, const SafeDir& wt, const std::string& slot, TimePoint now,
                      RecoveryFolder& folder, Salvage& out, const SalvageOptions& options) {
  if (options.history)
    if (auto pushed = worktree.preserve_unpushed("refs/recovery/" + recovery_name(slot, now))) {
      out.commits_ref = pushed->prefix;
      out.refs = pushed->refs;
    }
  if (!options.files) return;
  folder.describe("uncommitted changes of slot " + slot + " in " + worktree.path().string());
  const auto changes = worktree.changes();
  log::phase("salvage: listed the worktree's " + std::to_string(changes.size()) + " changes");
  for (const auto& change : changes) {
    std::string path = change.path;
    while (!path.empty() && path.back() == '/') path.pop_back();  // an ignored folder, "dir/"
    folder.add(change.code, path, wt);
  }
  if (options.move) keep_unreadable_folders(wt, "", folder);
}

// A folder whose repository cannot be read: every file, and .git whole (it
// may hold commits no one pushed).
void salvage_every_file(const SafeDir& wt, RecoveryFolder& folder) {
  folder.describe("every file of " + wt.path().string() + ", its .git whole (the repository could not be salvaged "
                  "through git, or holds linked worktrees or submodules)");
  std::error_code ec;
  // Listed through the folder's descriptor; each file is then reached from
  // it again, never through a link.
  const fs::path root = wt.fd_path();
  for (auto it = fs::recursive_directory_iterator(root, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
    fs::path relative = it->path().lexically_relative(root);
    if (relative == ".git") {
      it.disable_recursion_pending();
      folder.add('F', ".git", wt);
      continue;
    }
    if (fs::is_directory(it->symlink_status())) continue;
    folder.add('?', relative.generic_string(), wt);
  }
  if (ec) cannot_salvage(wt.path(), wt.path(), ec);
}

Salvage salvage(const SafeDir& slot_folder, const std::string& slot, const HubLocation& hub,
                const SafeDir& recovery_root, TimePoint now, const SalvageOptions& options) {
  Salvage out;
  RecoveryFolder folder(recovery_root, slot, now, options.move, &out);
  // The worktree is a folder of swarm's: a link in its place is refused
  // before anything is moved (never followed, never emptied).
  const EntryKind wt_kind = slot_folder.kind(kWorktreeName);
  if (wt_kind == EntryKind::link) slot_folder.folder(kWorktreeName);  // throws, naming it
  if (options.files && options.move) {
    // From the first file moved on, the worktree lacks files: the mark says
    // so, so that no join resumes it and doctor --fix finishes the salvage.
    slot_folder.write_file(kSalvageMarkName, "files of this worktree are being moved to " +
                                                 recovery_root.path().string() + " (" + format_rfc3339(now) + ")\n");
  }
  if (wt_kind == EntryKind::folder) {
    SafeDir wt = slot_folder.folder(kWorktreeName);
    std::optional<Worktree> worktree;
    // Linked worktrees and submodules keep history in .git/worktrees and
    // .git/modules, beyond the clone's own refs: such a repository is kept
    // whole, like one that cannot be read.
    auto git = wt.folder_below(".git", false);
    const bool nested = git && (git->kind("worktrees") != EntryKind::missing || git->kind("modules") != EntryKind::missing);
    try {
      if (git && !nested && !options.keep_whole) worktree.emplace(Worktree::open(wt.path(), slot, hub));
      if (worktree) salvage_worktree(*worktree, wt, slot, now, folder, out, options);
    } catch (const Error& e) {
      // The hub, not the worktree (unreachable, refusing this host, gone): try again later.
      if (e.kind() == Errc::unavailable || e.kind() == Errc::bad_input || e.kind() == Errc::not_bootstrapped ||
          e.kind() == Errc::filesystem)
        throw;
      // Its history or status cannot be read (objects gone, a broken ref),
      // or the hub took nothing: keep every file as it is, .git with them.
      warn(log::format("slot {}: keeping every file of the worktree, its .git whole: {}", slot, e.what()));
      worktree.reset();
    }
    if (!worktree) {
      out.unreadable_repository = true;
      if (options.files) salvage_every_file(wt, folder);
    }
  } else if (wt_kind != EntryKind::missing && options.files) {
    // A file where the worktree should be: kept as it is.
    out.unreadable_repository = true;
    folder.describe("the file " + (slot_folder.path() / kWorktreeName).string() + " where a worktree should be");
    folder.add('F', kWorktreeName, slot_folder);
  }
  if (!options.files) return out;
  // Anything else an agent or an operator left in the slot folder.
  for (const auto& name : slot_folder.list()) {
    if (name == kWorktreeName || is_crumb(name)) continue;
    folder.add('F', "beside-wt/" + name, slot_folder, name);
  }
  folder.close();
  return out;
}

}  // namespace

std::string recovery_name(const std::string& slot, TimePoint now) { return slot + "-" + format_compact_utc(now); }

Salvage salvage_slot_folder(const SafeDir& slot_folder, const std::string& slot, const HubLocation& hub,
                            const SafeDir& recovery_root, TimePoint now, const SalvageOptions& options) {
  try {
    return salvage(slot_folder, slot, hub, recovery_root, now, options);
  } catch (const fs::filesystem_error& e) {
    // Permissions, a full disk: swarm's error, and the caller keeps the folder.
    throw Error(Errc::filesystem, "cannot salvage " + slot_folder.path().string() + ": " + e.what());
  }
}

}  // namespace swarm
