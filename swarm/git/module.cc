// The entry point of libswarm_git.so: the libgit2 GitBackend.
#include "swarm/git/handles.h"
#include "swarm/git/remote_access.h"
#include "swarm/git/repos.h"

namespace swarm::git {
namespace {

class Libgit2Backend : public GitBackend {
 public:
  std::unique_ptr<HubBackend> create_hub(const std::filesystem::path& path,
                                         const std::filesystem::path& source) override {
    return HubRepo::create(path, source);
  }
  std::unique_ptr<HubBackend> open_hub(const std::string& hub) override { return open_any_hub(hub); }
  std::unique_ptr<HubBackend> prepare_hub(const std::string& hub, const std::filesystem::path& source,
                                          const std::filesystem::path& scratch, bool* seeded) override {
    return git::prepare_hub(hub, source, scratch, seeded);
  }
  RepackResult repack_hub(const std::filesystem::path& path, int pack_limit) override {
    return git::repack_hub(path, pack_limit);
  }
  std::unique_ptr<WorktreeBackend> create_worktree(const std::string& hub, const std::filesystem::path& path,
                                                   const std::string& slot, const WorktreeStart& start,
                                                   WorktreeStarted* started) override {
    return WorktreeRepo::create(hub, path, slot, start, started);
  }
  std::unique_ptr<WorktreeBackend> open_worktree(const std::filesystem::path& path, const std::string& slot,
                                                 const std::string& hub) override {
    return WorktreeRepo::open(path, slot, hub);
  }
  bool add_remote(const std::filesystem::path& checkout, const std::string& name, const std::string& url) override {
    git_repository* raw = nullptr;
    // The folder itself, never a repository further up.
    if (git_repository_open_ext(&raw, checkout.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr) != 0) return false;
    RepositoryPtr repo(raw);
    if (git_repository_is_bare(repo.get())) return false;
    git_remote* found = nullptr;
    if (git_remote_lookup(&found, repo.get(), name.c_str()) == 0) {
      RemotePtr keep(found);
      return false;
    }
    git_remote* made = nullptr;
    check(git_remote_create(&made, repo.get(), name.c_str(), url.c_str()),
          "add remote " + name + " to " + checkout.string());
    RemotePtr own(made);
    return true;
  }
  std::vector<std::pair<std::string, std::string>> list_refs(const std::string& hub, const std::string& prefix) override {
    return git::list_refs(hub, prefix);
  }
  std::optional<std::string> read_hub_mark(const std::string& hub, const std::string& ref) override {
    return git::read_hub_mark(hub, ref);
  }
  std::string mark_hub(const std::string& hub, const std::string& ref, const std::string& content) override {
    return git::mark_hub(hub, ref, content);
  }
  std::vector<std::string> delete_refs(const std::string& hub,
                                       const std::vector<std::pair<std::string, std::string>>& refs) override {
    return git::delete_refs(hub, refs);
  }
  std::unique_ptr<LandBackend> open_land(const std::string& hub, const std::filesystem::path& cache) override {
    return git::open_land(hub, cache);
  }
};

}  // namespace
}  // namespace swarm::git

// Loading the module initializes libgit2, so that a prefetch on another
// thread (swarm::prefetch_git_backend) takes libgit2's slow global init with it.
extern "C" __attribute__((visibility("default"))) swarm::GitBackend* swarm_git_backend_v10(
    swarm::EnvironmentLookup lookup) {
  swarm::git::read_environment_with(lookup);
  swarm::git::ensure_initialized();
  static swarm::git::Libgit2Backend backend;
  return &backend;
}
