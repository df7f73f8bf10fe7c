#include "swarm/recovery.h"

#include <fstream>
#include <optional>

#include "swarm/error.h"
#include "swarm/log.h"
#include "swarm/workspace.h"
#include "swarm/worktree.h"

namespace swarm {

namespace fs = std::filesystem;

namespace {

// Our own crumbs in a slot folder, which hold nothing to keep.
bool is_crumb(const fs::path& name) {
  return name == kLeafPidName || name == kSessionBaseName || name == kSalvageMarkName;
}

[[noreturn]] void cannot_salvage(const fs::path& from, const fs::path& to, const std::error_code& ec) {
  throw Error(Errc::internal, "cannot salvage " + from.string() + " to " + to.string() + ": " + ec.message());
}

// The recovery folder of one salvage, made when the first file goes in.
class RecoveryFolder {
 public:
  RecoveryFolder(const fs::path& root, const std::string& slot, TimePoint now, bool move, Salvage* out)
      : root_(root), name_(recovery_name(slot, now)), now_(now), move_(move), out_(out) {}

  // A header line for the manifest, written when the folder is made.
  void describe(std::string header) { header_ = std::move(header); }

  // Lists `relative` with its code; copies `source` there unless it is gone.
  void add(char code, const std::string& relative, const fs::path& source) {
    open();
    manifest_ << code << " " << relative << "\n";
    if (code == 'D' || !fs::exists(fs::symlink_status(source))) {
      ++out_->deleted;
      return;
    }
    out_->files += move_ ? move_one(source, out_->folder / relative) : copy_one(source, out_->folder / relative);
  }

  void close() {
    if (!manifest_.is_open()) return;
    manifest_.flush();
    if (!manifest_) throw Error(Errc::internal, "cannot write " + (out_->folder / "MANIFEST").string());
  }

 private:
  void open() {
    if (manifest_.is_open()) return;
    fs::path folder = root_ / name_;
    for (int n = 2; fs::exists(folder); ++n) folder = root_ / (name_ + "-" + std::to_string(n));
    fs::create_directories(folder);
    out_->folder = folder;
    manifest_.open(folder / "MANIFEST");
    manifest_ << "# " << header_ << "\n# salvaged " << format_rfc3339(now_)
              << "; codes: ? untracked, ! ignored, A added, M modified, D deleted, R renamed, T type change, F kept "
                 "whole\n";
  }

  // Moves a file, symlink or folder by one rename; copies it when the
  // rename cannot be done (another filesystem), and removes nothing then:
  // the folder it is in goes whole right after. Returns the files kept.
  static int move_one(const fs::path& from, const fs::path& to) {
    std::error_code ec;
    fs::create_directories(to.parent_path(), ec);
    const bool folder = fs::is_directory(fs::symlink_status(from, ec));
    fs::rename(from, to, ec);
    if (ec) return copy_one(from, to);
    if (!folder) return 1;
    int files = 0;
    for (auto it = fs::recursive_directory_iterator(to, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      files += fs::is_directory(it->symlink_status()) ? 0 : 1;
    return files;
  }

  // Copies a file, a symlink (as a link) or a whole folder (a nested
  // repository, a .git); returns the number of files copied.
  static int copy_one(const fs::path& from, const fs::path& to) {
    std::error_code ec;
    fs::create_directories(to.parent_path(), ec);
    auto status = fs::symlink_status(from, ec);
    if (fs::is_symlink(status)) {
      fs::copy_symlink(from, to, ec);
    } else if (fs::is_directory(status)) {
      fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
      if (ec) cannot_salvage(from, to, ec);
      int files = 0;
      for (auto it = fs::recursive_directory_iterator(to, ec); !ec && it != fs::recursive_directory_iterator();
           it.increment(ec))
        files += fs::is_directory(it->symlink_status()) ? 0 : 1;
      return files;
    } else if (fs::is_regular_file(status)) {
      fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    } else {
      return 0;  // a FIFO or socket holds no data to keep
    }
    if (ec) cannot_salvage(from, to, ec);
    return 1;
  }

  fs::path root_;
  std::string name_;
  TimePoint now_;
  bool move_;
  Salvage* out_;
  std::string header_ = "salvaged files";
  std::ofstream manifest_;
};

// A readable worktree: the history the hub lacks, then the uncommitted files.
void salvage_worktree(Worktree& worktree, const std::string& slot, TimePoint now, RecoveryFolder& folder,
                      Salvage& out, const SalvageOptions& options) {
  if (options.history)
    if (auto pushed = worktree.preserve_unpushed("refs/recovery/" + recovery_name(slot, now))) {
      out.commits_ref = pushed->prefix;
      out.refs = pushed->refs;
    }
  if (!options.files) return;
  folder.describe("uncommitted changes of slot " + slot + " in " + worktree.path().string());
  for (const auto& change : worktree.changes()) folder.add(change.code, change.path, worktree.path() / change.path);
}

// A folder whose repository cannot be read: every file, and .git whole (it
// may hold commits no one pushed). A file where the worktree should be, too.
void salvage_every_file(const fs::path& wt, RecoveryFolder& folder) {
  folder.describe("every file of " + wt.string() + ", its .git whole (the repository could not be salvaged "
                  "through git, or holds linked worktrees or submodules)");
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(wt, ec))) {
    folder.add('F', wt.filename().string(), wt);
    return;
  }
  for (auto it = fs::recursive_directory_iterator(wt, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
    fs::path relative = it->path().lexically_relative(wt);
    if (relative == ".git") {
      it.disable_recursion_pending();
      folder.add('F', ".git", it->path());
      continue;
    }
    if (fs::is_directory(it->symlink_status())) continue;
    folder.add('?', relative.generic_string(), it->path());
  }
  if (ec) cannot_salvage(wt, wt, ec);
}

Salvage salvage(const fs::path& slot_dir, const std::string& slot, const fs::path& recovery_root, TimePoint now,
                const SalvageOptions& options) {
  Salvage out;
  RecoveryFolder folder(recovery_root, slot, now, options.move, &out);
  if (options.files && options.move) {
    // From the first file moved on, the worktree lacks files: the mark says
    // so, so that no join resumes it and doctor --fix finishes the salvage.
    std::ofstream(slot_dir / kSalvageMarkName) << "files of this worktree are being moved to " << recovery_root.string()
                                          << " (" << format_rfc3339(now) << ")\n";
    if (!fs::exists(slot_dir / kSalvageMarkName))
      throw Error(Errc::internal, "cannot mark " + slot_dir.string() + " as being salvaged");
  }
  const fs::path wt = slot_dir / "wt";
  std::error_code ec;
  if (fs::exists(fs::symlink_status(wt, ec))) {
    std::optional<Worktree> worktree;
    // Linked worktrees and submodules keep history in .git/worktrees and
    // .git/modules, beyond the clone's own refs: such a repository is kept
    // whole, like one that cannot be read.
    const bool nested = fs::exists(wt / ".git" / "worktrees", ec) || fs::exists(wt / ".git" / "modules", ec);
    try {
      if (fs::is_directory(wt / ".git") && !nested && !options.keep_whole) worktree.emplace(Worktree::open(wt, slot));
      if (worktree) salvage_worktree(*worktree, slot, now, folder, out, options);
    } catch (const Error& e) {
      // The hub, not the worktree (unreachable, refusing this host, gone): try again later.
      if (e.kind() == Errc::unavailable || e.kind() == Errc::bad_input || e.kind() == Errc::not_bootstrapped) throw;
      // Its history or status cannot be read (objects gone, a broken ref),
      // or the hub took nothing: keep every file as it is, .git with them.
      spdlog::warn("slot {}: keeping every file of the worktree, its .git whole: {}", slot, e.what());
      worktree.reset();
    }
    if (!worktree) {
      out.unreadable_repository = true;
      if (options.files) salvage_every_file(wt, folder);
    }
  }
  if (!options.files) return out;
  // Anything else an agent or an operator left in the slot folder.
  for (const auto& entry : fs::directory_iterator(slot_dir, ec)) {
    fs::path name = entry.path().filename();
    if (name == "wt" || is_crumb(name)) continue;
    folder.add('F', "beside-wt/" + name.string(), entry.path());
  }
  if (ec) cannot_salvage(slot_dir, recovery_root, ec);
  folder.close();
  return out;
}

}  // namespace

std::string recovery_name(const std::string& slot, TimePoint now) { return slot + "-" + format_compact_utc(now); }

Salvage salvage_slot_folder(const fs::path& slot_dir, const std::string& slot, const fs::path& recovery_root,
                            TimePoint now, const SalvageOptions& options) {
  try {
    return salvage(slot_dir, slot, recovery_root, now, options);
  } catch (const fs::filesystem_error& e) {
    // Permissions, a full disk: swarm's error, and the caller keeps the folder.
    throw Error(Errc::internal, "cannot salvage " + slot_dir.string() + ": " + e.what());
  }
}

}  // namespace swarm
