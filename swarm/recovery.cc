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

void copy_one(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  if (fs::is_symlink(fs::symlink_status(from))) fs::copy_symlink(from, to, ec);
  else fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) throw Error(Errc::internal, "cannot salvage " + from.string() + " to " + to.string() + ": " + ec.message());
}

}  // namespace

Salvage salvage_worktree(Worktree& worktree, const std::string& slot, const fs::path& recovery_root,
                         TimePoint now) {
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
    if (fs::is_directory(fs::symlink_status(source))) continue;  // a nested repository: listed only
    copy_one(source, out.folder / change.path);
    ++out.files;
  }
  if (!manifest) throw Error(Errc::internal, "cannot write " + (out.folder / "MANIFEST").string());
  return out;
}

Salvage salvage_everything(const fs::path& folder, const std::string& slot, const fs::path& recovery_root,
                           TimePoint now) {
  Salvage out;
  if (!fs::exists(folder)) return out;
  out.folder = fresh_folder(recovery_root, slot, now);
  fs::create_directories(out.folder);
  std::ofstream manifest(out.folder / "MANIFEST");
  manifest << "# every file of " << folder.string() << " (its repository could not be read)\n";
  for (auto it = fs::recursive_directory_iterator(folder); it != fs::recursive_directory_iterator(); ++it) {
    if (it->path().filename() == ".git") {
      it.disable_recursion_pending();
      continue;
    }
    if (fs::is_directory(it->symlink_status())) continue;
    fs::path relative = it->path().lexically_relative(folder);
    copy_one(it->path(), out.folder / relative);
    manifest << "? " << relative.generic_string() << "\n";
    ++out.files;
  }
  return out;
}

}  // namespace swarm
