#include "swarm/git/backend.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/private_files.h"
#include "swarm/base/process_secrets.h"

namespace swarm {

namespace fs = std::filesystem;

namespace {

constexpr const char* kModuleName = "libswarm_git.so";

GitBackend* load() {
  const std::vector<fs::path> candidates = private_file_candidates(kModuleName, "SWARM_GIT_MODULE");
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
    auto entry = reinterpret_cast<GitBackend* (*)(EnvironmentLookup)>(dlsym(handle, kGitBackendSymbol));
    if (entry == nullptr) {
      tried += " " + path.string() + " (no " + kGitBackendSymbol + ")";
      continue;
    }
    swarm::log::phase("loaded the git module " + path.string());
    return entry(&environment_value);  // the module lives as long as the process
  }
  throw Error(Errc::internal, std::string("cannot load swarm's git module ") + kModuleName + "; tried:" + tried +
                                  " (it is built next to the swarm binary and installed in " + private_folder_from_bin() +
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
