// Refs of the hub by prefix, listed and deleted (recovery prune): a local hub
// in place, each deletion a compare-and-swap on the ref; a network hub by one
// listing and one push of deletions, each fenced on the id listed.
#include "swarm/base/error.h"
#include "swarm/git/remote_access.h"
#include "swarm/git/repos.h"

namespace swarm::git {

std::vector<std::pair<std::string, std::string>> list_refs(const std::string& hub, const std::string& prefix) {
  ensure_initialized();
  const HubLocation where = parse_hub_location(hub, "/");
  std::vector<std::pair<std::string, std::string>> out;
  if (!where.remote()) {
    RepositoryPtr repo = open_local_hub(where.path(), where.text);
    for_each_direct_ref(repo.get(), prefix, "list the hub's refs",
                        [&](const std::string& name, const git_oid& id) { out.emplace_back(name, hex(id)); });
    return out;
  }
  RemoteAccess access(hub);
  git_remote* remote_raw = nullptr;
  check(git_remote_create_detached(&remote_raw, access.git_url().c_str()), "name the hub " + access.hub().shown());
  RemotePtr remote(remote_raw);
  for (const auto& [name, oid] : access.list(remote.get(), "list the hub's refs").refs)
    if (name.rfind(prefix, 0) == 0) out.emplace_back(name, hex(oid));
  return out;
}

std::vector<std::string> delete_refs(const std::string& hub, const std::vector<std::pair<std::string, std::string>>& refs) {
  ensure_initialized();
  const HubLocation where = parse_hub_location(hub, "/");
  std::vector<std::string> deleted;
  if (refs.empty()) return deleted;
  if (!where.remote()) {
    RepositoryPtr repo = open_local_hub(where.path(), where.text);
    for (const auto& [name, id] : refs) {
      git_oid expected;
      if (git_oid_fromstr(&expected, id.c_str()) != 0) continue;
      git_reference* raw = nullptr;
      if (git_reference_lookup(&raw, repo.get(), name.c_str()) != 0) {
        git_error_clear();
        continue;
      }
      ReferencePtr ref(raw);
      const git_oid* now = git_reference_target(ref.get());
      if (now == nullptr || !git_oid_equal(now, &expected)) continue;  // written again since it was listed
      // Deleted under the ref's lock, and only while it still points there.
      if (git_reference_delete(ref.get()) == 0) deleted.push_back(name);
      git_error_clear();
    }
    return deleted;
  }
  // A network hub: a scratch repository pushes the deletions (":ref").
  ScratchRepo scratch("prune");
  git_repository* repo = scratch.repo.get();
  RemoteAccess access(hub);
  // Only what still points where it was listed: listed again right before.
  std::vector<std::string> specs;
  std::vector<std::string> names;
  {
    RemotePtr lister = access.hub_remote(repo);
    const auto now = access.list(lister.get(), "list the hub's refs").refs;
    for (const auto& [name, id] : refs)
      for (const auto& [current, oid] : now)
        if (current == name && hex(oid) == id) {
          specs.push_back(":" + name);
          names.push_back(name);
        }
  }
  if (specs.empty()) return deleted;
  RemotePtr remote = access.hub_remote(repo);
  StringArray array(specs);
  git_push_options options = GIT_PUSH_OPTIONS_INIT;
  options.callbacks = access.callbacks();
  access.run("delete recovery refs from the hub", [&] { return git_remote_push(remote.get(), array.get(), &options); },
             RemoteAccess::Direction::push);
  for (const auto& name : names) {
    bool rejected = false;
    for (const auto& r : access.rejected()) rejected = rejected || r.rfind(name + ":", 0) == 0;
    if (!rejected) deleted.push_back(name);
  }
  return deleted;
}

}  // namespace swarm::git
