#include "swarm/hub.h"

#include "swarm/error.h"

namespace swarm {

namespace fs = std::filesystem;

Hub Hub::create(const fs::path& path, const fs::path& source) {
  auto repo = git_backend().create_hub(path, source);
  return Hub(std::move(repo), parse_hub_location(fs::absolute(path).string(), "/"));
}

bool Hub::exists_at(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path / "HEAD", ec) && fs::is_directory(path / "objects", ec);
}

Hub Hub::open(const HubLocation& where) {
  auto repo = git_backend().open_hub(where.text);
  return Hub(std::move(repo), where);
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
      git_backend().seed_hub(where.text, source, scratch);
      *created = true;
      return open(where);
    }
    std::error_code ec;
    if (fs::exists(where.path(), ec) && !fs::is_empty(where.path(), ec))
      throw Error(Errc::bad_input, "the hub " + where.text + " is a folder with files in it but no git repository; "
                                   "name an empty or missing folder, or a bare repository");
    *created = true;
    return create(where.path(), source);
  }
  Hub hub = open(where);
  if (!hub.repo_->empty()) {
    hub.default_branch();  // a hub whose HEAD names no branch is refused here, named
    return hub;
  }
  git_backend().seed_hub(where.text, source, scratch);
  *created = true;
  return open(where);
}

}  // namespace swarm
