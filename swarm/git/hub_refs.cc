// Refs of the hub by prefix, listed and deleted (recovery prune): a local hub
// in place, each deletion a compare-and-swap on the ref; a network hub by one
// listing and one push of deletions, each fenced on the id listed. And the
// marks a hub keeps (mark_hub): a ref made once, never moved.
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

namespace {

// A mark is a commit of the empty tree, with no parent, its text its
// message (a push takes commits only). Its text, read back:
std::string mark_text(git_repository* repo, const git_oid& id, const std::string& ref) {
  git_commit* raw = nullptr;
  check(git_commit_lookup(&raw, repo, &id), "read the hub's mark " + ref);
  const char* message = git_commit_message_raw(raw);
  std::string text = message != nullptr ? message : "";
  git_commit_free(raw);
  return text;
}

// Writes a mark holding `content` into `repo`: its commit's id.
git_oid mark_commit(git_repository* repo, const std::string& content, const std::string& ref) {
  git_treebuilder* builder = nullptr;
  check(git_treebuilder_new(&builder, repo, nullptr), "write the hub's mark " + ref);
  git_oid tree_id;
  const int written = git_treebuilder_write(&tree_id, builder);
  git_treebuilder_free(builder);
  check(written, "write the hub's mark " + ref);
  git_tree* tree = nullptr;
  check(git_tree_lookup(&tree, repo, &tree_id), "write the hub's mark " + ref);
  git_signature* who = nullptr;
  const int made = git_signature_now(&who, "swarm", "swarm@localhost");
  git_oid id;
  int rc = made;
  if (made == 0)
    rc = git_commit_create(&id, repo, nullptr, who, who, nullptr, content.c_str(), tree, 0, nullptr);
  git_signature_free(who);
  git_tree_free(tree);
  check(rc, "write the hub's mark " + ref);
  return id;
}

// A network hub's mark `ref` fetched into `scratch` (listed first: nullopt when it has none).
std::optional<std::string> fetched_mark(git_repository* repo, RemoteAccess& access, const std::string& ref) {
  std::optional<git_oid> there;
  {
    RemotePtr lister = access.hub_remote(repo);
    for (const auto& [name, oid] : access.list(lister.get(), "list the hub's refs").refs)
      if (name == ref) there = oid;
  }
  if (!there) return std::nullopt;
  RemotePtr remote = access.hub_remote(repo);
  StringArray specs({"+" + ref + ":" + ref});
  git_fetch_options options = GIT_FETCH_OPTIONS_INIT;
  options.callbacks = access.callbacks();
  options.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
  options.update_fetchhead = 0;
  access.run("fetch the hub's mark " + ref, [&] { return git_remote_fetch(remote.get(), specs.get(), &options, "swarm"); });
  return mark_text(repo, *there, ref);
}

}  // namespace

std::optional<std::string> read_hub_mark(const std::string& hub, const std::string& ref) {
  ensure_initialized();
  const HubLocation where = parse_hub_location(hub, "/");
  if (!where.remote()) {
    RepositoryPtr repo = open_local_hub(where.path(), where.text);
    git_oid id;
    if (git_reference_name_to_id(&id, repo.get(), ref.c_str()) != 0) {
      git_error_clear();
      return std::nullopt;
    }
    return mark_text(repo.get(), id, ref);
  }
  ScratchRepo scratch("mark");
  RemoteAccess access(hub);
  return fetched_mark(scratch.repo.get(), access, ref);
}

std::string mark_hub(const std::string& hub, const std::string& ref, const std::string& content) {
  ensure_initialized();
  const HubLocation where = parse_hub_location(hub, "/");
  auto mark_in = [&](git_repository* repo) { return mark_commit(repo, content, ref); };
  if (!where.remote()) {
    RepositoryPtr repo = open_local_hub(where.path(), where.text);
    const git_oid id = mark_in(repo.get());
    git_reference* raw = nullptr;
    // force 0: a mark that is there already (another host's, first) stays.
    const int rc = git_reference_create(&raw, repo.get(), ref.c_str(), &id, 0, "swarm up: mark");
    if (rc == GIT_EEXISTS) {
      git_error_clear();
      return read_hub_mark(hub, ref).value_or(content);
    }
    check(rc, "make the hub's mark " + ref);
    git_reference_free(raw);
    return content;
  }
  ScratchRepo scratch("mark");
  git_repository* repo = scratch.repo.get();
  RemoteAccess access(hub);
  if (auto there = fetched_mark(repo, access, ref)) return *there;
  const git_oid id = mark_in(repo);
  git_reference* raw = nullptr;
  check(git_reference_create(&raw, repo, ref.c_str(), &id, 1, "swarm up: mark"), "name the mark " + ref);
  git_reference_free(raw);
  RemotePtr remote = access.hub_remote(repo);
  StringArray array({ref + ":" + ref});  // no '+': a mark another host pushed first stays
  git_push_options options = GIT_PUSH_OPTIONS_INIT;
  options.callbacks = access.callbacks();
  access.run("mark the hub (" + ref + ")", [&] { return git_remote_push(remote.get(), array.get(), &options); },
             RemoteAccess::Direction::push);
  if (access.rejected().empty()) return content;
  RemoteAccess again(hub);
  return fetched_mark(repo, again, ref).value_or(content);
}

}  // namespace swarm::git
