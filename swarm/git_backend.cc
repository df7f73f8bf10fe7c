#include "swarm/git_backend.h"

#include <dlfcn.h>

#include <mutex>

#include "swarm/error.h"
#include "swarm/log.h"

namespace swarm {

namespace fs = std::filesystem;

namespace {

constexpr const char* kModuleName = "libswarm_git.so";

GitBackend* load() {
  std::vector<fs::path> candidates;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(self.parent_path() / kModuleName);
#ifdef SWARM_GIT_MODULE_PATH
  candidates.push_back(SWARM_GIT_MODULE_PATH);  // the build tree, for tests and benchmarks
#endif
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
                                  " (it is built next to the swarm binary)");
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
