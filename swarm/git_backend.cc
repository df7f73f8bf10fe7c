#include "swarm/git_backend.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "swarm/error.h"
#include "swarm/log.h"

namespace swarm {

namespace fs = std::filesystem;

namespace {

constexpr const char* kModuleName = "libswarm_git.so";

// Where the module may be, in order: $SWARM_GIT_MODULE (tests, and anyone
// who moved it), next to the program (the build tree), in the private
// library folder relative to the program (an installed prefix, wherever it
// was moved: bin/../lib/<multiarch>/swarm), and where it was installed (a
// program of a library user that lives elsewhere). Nothing names the build
// tree.
std::vector<fs::path> module_candidates() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("SWARM_GIT_MODULE"); env != nullptr && *env != '\0') candidates.push_back(env);
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(self.parent_path() / kModuleName);
    candidates.push_back((self.parent_path() / SWARM_MODULE_FROM_BIN / kModuleName).lexically_normal());
  }
  candidates.push_back(fs::path(SWARM_MODULE_INSTALLED) / kModuleName);
  return candidates;
}

GitBackend* load() {
  const std::vector<fs::path> candidates = module_candidates();
  std::string tried;
  for (const auto& path : candidates) {
    if (!fs::exists(path)) {
      tried += " " + path.string() + " (missing)";
      continue;
    }
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      tried += " " + path.string() + " (" + dlerror() + ")";
      continue;
    }
    auto entry = reinterpret_cast<GitBackend* (*)()>(dlsym(handle, kGitBackendSymbol));
    if (entry == nullptr) {
      tried += " " + path.string() + " (no " + kGitBackendSymbol + ")";
      continue;
    }
    spdlog::debug("loaded the git module {}", path.string());
    return entry();  // the module lives as long as the process
  }
  throw Error(Errc::internal, std::string("cannot load swarm's git module ") + kModuleName + "; tried:" + tried +
                                  " (it is built next to the swarm binary and installed in " + SWARM_MODULE_FROM_BIN +
                                  " relative to it; $SWARM_GIT_MODULE names another)");
}

}  // namespace

std::future<void> prefetch_git_backend() {
  return std::async(std::launch::async, [] {
    try {
      git_backend();
    } catch (...) {
      // Reported when a caller asks for the backend itself.
    }
  });
}

GitBackend& git_backend() {
  static std::once_flag once;
  static GitBackend* backend = nullptr;
  std::call_once(once, [] { backend = load(); });
  return *backend;
}

}  // namespace swarm
