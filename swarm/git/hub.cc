#include "swarm/git/hub.h"

#include "swarm/base/error.h"
#include "swarm/git/hub_packs.h"

namespace swarm {

namespace fs = std::filesystem;

Hub Hub::create(const fs::path& path, const fs::path& source) {
  auto repo = git_backend().create_hub(path, source);
  return Hub(std::move(repo), parse_hub_location(fs::absolute(path).string(), "/"));
}

int Hub::pack_count(const fs::path& path) { return static_cast<int>(repackable_packs(path).size()); }

bool Hub::exists_at(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path / "HEAD", ec) && fs::is_directory(path / "objects", ec);
}

void Hub::require_can_be_at(const fs::path& path) {
  std::error_code ec;
  const std::string named = "the hub " + path.string();
  if (!fs::exists(fs::symlink_status(path, ec))) {
    for (fs::path up = path.parent_path(); !up.empty(); up = up.parent_path()) {
      if (!fs::exists(up, ec)) {
        if (up == up.root_path()) break;
        continue;
      }
      if (!fs::is_directory(up, ec))
        throw Error(Errc::bad_input, named + " cannot be made: " + up.string() + " is a file, not a folder");
      break;
    }
    return;
  }
  if (!fs::is_directory(path, ec)) throw Error(Errc::bad_input, named + " is a file, not a folder");
  if (exists_at(path)) return;
  if (fs::exists(path / ".git", ec))
    throw Error(Errc::bad_input, named + " is a repository with a worktree; a hub is a bare repository (make one "
                                 "with `git clone --bare " + path.string() + " " + path.string() + ".git`)");
  if (!fs::is_empty(path, ec))
    throw Error(Errc::bad_input, named + " is a folder with files in it but no bare git repository; name an empty "
                                 "or missing folder, or a bare repository");
}

namespace {

constexpr const char* kWorkspaceMark = "refs/swarm/workspace";

// A mark's text: "<name>\n<id>\n". Anything else reads as no name.
Hub::WorkspaceMark mark_of(const std::string& text) {
  Hub::WorkspaceMark mark;
  const auto nl = text.find('\n');
  if (nl == std::string::npos || text.size() > 256) return mark;
  const auto end = text.find('\n', nl + 1);
  if (end == std::string::npos || end + 1 != text.size()) return mark;
  mark.name = text.substr(0, nl);
  mark.id = text.substr(nl + 1, end - nl - 1);
  if (mark.id.empty()) mark.name.clear();
  return mark;
}

}  // namespace

std::optional<Hub::WorkspaceMark> Hub::workspace_mark(const HubLocation& where) {
  auto text = git_backend().read_hub_mark(where.text, kWorkspaceMark);
  if (!text) return std::nullopt;
  return mark_of(*text);
}

Hub::WorkspaceMark Hub::mark_workspace(const HubLocation& where, const WorkspaceMark& mark) {
  return mark_of(git_backend().mark_hub(where.text, kWorkspaceMark, mark.name + "\n" + mark.id + "\n"));
}

bool Hub::has_branches(const HubLocation& where) {
  return !git_backend().list_refs(where.text, "refs/heads/").empty();
}

bool Hub::has_slot_branches(const HubLocation& where) {
  return !git_backend().list_refs(where.text, "refs/heads/swarm/").empty();
}

Hub Hub::open(const HubLocation& where) {
  auto repo = git_backend().open_hub(where.text);
  return Hub(std::move(repo), where);
}

bool Hub::add_remote_to(const fs::path& root, const HubLocation& where) {
  const std::string url = where.remote() ? where.without_password() : fs::absolute(where.path()).lexically_normal().string();
  return git_backend().add_remote(root, "swarm", url);
}

Hub Hub::ensure(const HubLocation& where, const fs::path& source, const fs::path& scratch, bool* created) {
  *created = false;
  if (!where.remote()) {
    if (exists_at(where.path())) {
      std::error_code ec;
      // A bare repository nobody pushed to yet (git init --bare on a shared
      // filesystem) is seeded; any other broken hub is reported, not papered over.
      bool no_refs = fs::is_empty(where.path() / "refs" / "heads", ec) && !ec &&
                     !fs::exists(where.path() / "packed-refs", ec);
      if (!no_refs) return open(where);
      return Hub(git_backend().prepare_hub(where.text, source, scratch, created), where);
    }
    require_can_be_at(where.path());
    *created = true;
    return create(where.path(), source);
  }
  Hub hub(git_backend().prepare_hub(where.text, source, scratch, created), where);
  hub.default_branch();  // a hub whose HEAD names no branch is refused here, named
  return hub;
}

}  // namespace swarm
