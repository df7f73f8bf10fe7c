#include "swarm/base/private_files.h"

#include <cstdlib>

namespace swarm {

namespace fs = std::filesystem;

std::vector<fs::path> private_file_candidates(const char* name, const char* env) {
  std::vector<fs::path> candidates;
  if (const char* given = env != nullptr ? std::getenv(env) : nullptr; given != nullptr && *given != '\0')
    candidates.push_back(given);
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(self.parent_path() / name);
    candidates.push_back((self.parent_path() / SWARM_MODULE_FROM_BIN / name).lexically_normal());
  }
  candidates.push_back(fs::path(SWARM_MODULE_INSTALLED) / name);
  return candidates;
}

const char* private_folder_from_bin() { return SWARM_MODULE_FROM_BIN; }

}  // namespace swarm
