#include "swarm/recovery.h"

#include <fstream>

#include "swarm/error.h"

namespace swarm {

namespace fs = std::filesystem;

namespace {

// A folder name that no earlier salvage of the same slot used.
fs::path fresh_folder(const fs::path& root, const std::string& slot, TimePoint now) {
  fs::path base = root / (slot + "-" + format_compact_utc(now));
  fs::path folder = base;
  for (int n = 2; fs::exists(folder); ++n) folder = base.string() + "-" + std::to_string(n);
  return folder;
}

[[noreturn]] void cannot_salvage(const fs::path& from, const fs::path& to, const std::error_code& ec) {
  throw Error(Errc::internal, "cannot salvage " + from.string() + " to " + to.string() + ": " + ec.message());
}

// Copies a file, a symlink (as a link) or a whole folder (an untracked nested
// repository, its .git included); returns the number of files copied.
int copy_one(const fs::path& from, const fs::path& to) {
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
  } else {
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  }
  if (ec) cannot_salvage(from, to, ec);
  return 1;
}

// A filesystem failure (permissions, a full disk) as swarm's error: the
// callers keep the worktree when salvage fails.
template <typename Salvaging>
Salvage reporting_fs_errors(const fs::path& folder, Salvaging salvaging) {
  try {
    return salvaging();
  } catch (const fs::filesystem_error& e) {
    throw Error(Errc::internal, "cannot salvage " + folder.string() + ": " + e.what());
  }
}

Salvage copy_changes(Worktree& worktree, const std::string& slot, const fs::path& recovery_root, TimePoint now) {
  Salvage out;
  auto pushed = worktree.preserve_unpushed("refs/recovery/" + slot + "-" + format_compact_utc(now));
  if (pushed) out.commits_ref = *pushed;
  auto changes = worktree.changes();
  if (changes.empty()) return out;
  out.folder = fresh_folder(recovery_root, slot, now);
  fs::create_directories(out.folder);
  std::ofstream manifest(out.folder / "MANIFEST");
  manifest << "# uncommitted changes of slot " << slot << " in " << worktree.path().string() << "\n"
           << "# salvaged " << format_rfc3339(now) << "; codes: ? untracked, A added, M modified, D deleted, "
           << "R renamed, T type change\n";
  for (const auto& change : changes) {
    manifest << change.code << " " << change.path << "\n";
    fs::path source = worktree.path() / change.path;
    if (change.code == 'D' || !fs::exists(fs::symlink_status(source))) {
      ++out.deleted;
      continue;
    }
    out.files += copy_one(source, out.folder / change.path);
  }
  if (!manifest) throw Error(Errc::internal, "cannot write " + (out.folder / "MANIFEST").string());
  return out;
}

Salvage copy_every_file(const fs::path& folder, const std::string& slot, const fs::path& recovery_root,
                        TimePoint now) {
  Salvage out;
  std::error_code ec;
  auto status = fs::symlink_status(folder, ec);
  if (!fs::exists(status)) return out;
  out.folder = fresh_folder(recovery_root, slot, now);
  fs::create_directories(out.folder);
  std::ofstream manifest(out.folder / "MANIFEST");
  manifest << "# every file of " << folder.string() << " (its repository could not be read)\n";
  if (!fs::is_directory(status)) {  // a file where the worktree should be
    out.files += copy_one(folder, out.folder / folder.filename());
    manifest << "? " << folder.filename().generic_string() << "\n";
    return out;
  }
  for (auto it = fs::recursive_directory_iterator(folder, ec); it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->path() == folder / ".git") {
      // The unreadable repository itself, whole: it may hold commits no one pushed.
      it.disable_recursion_pending();
      out.files += copy_one(it->path(), out.folder / ".git");
      manifest << "? .git/ (the repository that could not be read, copied whole)\n";
      continue;
    }
    if (fs::is_directory(it->symlink_status())) continue;
    fs::path relative = it->path().lexically_relative(folder);
    out.files += copy_one(it->path(), out.folder / relative);
    manifest << "? " << relative.generic_string() << "\n";
  }
  if (ec) cannot_salvage(folder, out.folder, ec);
  return out;
}

}  // namespace

Salvage salvage_worktree(Worktree& worktree, const std::string& slot, const fs::path& recovery_root,
                         TimePoint now) {
  return reporting_fs_errors(worktree.path(), [&] { return copy_changes(worktree, slot, recovery_root, now); });
}

Salvage salvage_everything(const fs::path& folder, const std::string& slot, const fs::path& recovery_root,
                           TimePoint now) {
  return reporting_fs_errors(folder, [&] { return copy_every_file(folder, slot, recovery_root, now); });
}

}  // namespace swarm
