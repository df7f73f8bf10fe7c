#include "swarm/hub.h"

namespace swarm {

namespace fs = std::filesystem;

Hub Hub::create(const fs::path& path, const fs::path& source) {
  auto repo = git_backend().create_hub(path, source);
  return Hub(std::move(repo), fs::weakly_canonical(path));
}

bool Hub::exists_at(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path / "HEAD", ec) && fs::is_directory(path / "objects", ec);
}

Hub Hub::open(const fs::path& path) {
  auto repo = git_backend().open_hub(path);
  return Hub(std::move(repo), fs::weakly_canonical(path));
}

}  // namespace swarm
