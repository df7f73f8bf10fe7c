#include "swarm/git/remote_access.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "swarm/error.h"

namespace swarm::git {

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// Where SSH keys come from, in the order offered: the one $SWARM_SSH_KEY
// names (alone), else ssh-agent and then ~/.ssh/id_ed25519, id_ecdsa, id_rsa.
// "agent" stands for ssh-agent.
std::vector<std::string> ssh_key_sources() {
  if (std::string key = env("SWARM_SSH_KEY"); !key.empty()) return {key};
  std::vector<std::string> out;
  if (!env("SSH_AUTH_SOCK").empty()) out.push_back("agent");
  std::string home = env("HOME");
  if (home.empty())
    if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr) home = pw->pw_dir;
  for (const char* name : {"id_ed25519", "id_ecdsa", "id_rsa"}) {
    fs::path key = fs::path(home) / ".ssh" / name;
    std::error_code ec;
    if (!home.empty() && fs::is_regular_file(key, ec)) out.push_back(key.string());
  }
  return out;
}

std::string local_user() {
  if (std::string user = env("USER"); !user.empty()) return user;
  if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_name != nullptr) return pw->pw_name;
  return "git";
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

RemoteAccess::RemoteAccess(const std::string& url) : hub_(parse_hub_location(url, "/")) {
  require_reachable(hub_, kHubConnectTimeout);
}

git_remote_callbacks RemoteAccess::callbacks() {
  git_remote_callbacks callbacks = GIT_REMOTE_CALLBACKS_INIT;
  callbacks.credentials = &RemoteAccess::credentials;
  callbacks.push_update_reference = &RemoteAccess::on_push_update;
  callbacks.payload = this;
  return callbacks;
}

int RemoteAccess::credentials(git_credential** out, const char* /*url*/, const char* username_from_url,
                              unsigned int allowed_types, void* payload) {
  return static_cast<RemoteAccess*>(payload)->next_credential(out, username_from_url, allowed_types);
}

int RemoteAccess::on_push_update(const char* refname, const char* status, void* payload) {
  if (status != nullptr) static_cast<RemoteAccess*>(payload)->rejected_.push_back(std::string(refname) + ": " + status);
  return 0;
}

// libgit2 calls this again after each refusal: every source is offered once,
// then the operation fails with GIT_EAUTH.
int RemoteAccess::next_credential(git_credential** out, const char* username_from_url, unsigned int allowed_types) {
  const std::string user = username_from_url != nullptr && *username_from_url != '\0' ? username_from_url : local_user();
  if (allowed_types & GIT_CREDENTIAL_USERNAME) return git_credential_username_new(out, user.c_str());
  if (allowed_types & GIT_CREDENTIAL_SSH_KEY) {
    if (!listed_ssh_) ssh_sources_ = ssh_key_sources();
    listed_ssh_ = true;
    if (next_ssh_ < ssh_sources_.size()) {
      const std::string& source = ssh_sources_[next_ssh_++];
      tried_.push_back(source == "agent" ? "ssh-agent as " + user : "key " + source + " as " + user);
      if (source == "agent") return git_credential_ssh_key_from_agent(out, user.c_str());
      std::string pub = source + ".pub";
      std::error_code ec;
      return git_credential_ssh_key_new(out, user.c_str(), fs::exists(pub, ec) ? pub.c_str() : nullptr,
                                        source.c_str(), nullptr);
    }
  }
  if ((allowed_types & GIT_CREDENTIAL_USERPASS_PLAINTEXT) && !offered_userpass_) {
    offered_userpass_ = true;
    std::string name = env("SWARM_HUB_USERNAME");
    std::string password = env("SWARM_HUB_PASSWORD");
    if (!password.empty()) {
      if (name.empty()) name = user;
      tried_.push_back("$SWARM_HUB_PASSWORD as " + name);
      return git_credential_userpass_plaintext_new(out, name.c_str(), password.c_str());
    }
  }
  out_of_credentials_ = true;
  if (tried_.empty()) tried_.push_back("none: no ssh-agent, no key in ~/.ssh, no $SWARM_SSH_KEY or $SWARM_HUB_PASSWORD");
  git_error_set_str(GIT_ERROR_NET, "the hub refused every credential offered");
  return GIT_EAUTH;
}

RemoteRefs RemoteAccess::list(git_remote* remote, std::string_view what) {
  git_remote_callbacks cbs = callbacks();
  check(git_remote_connect(remote, GIT_DIRECTION_FETCH, &cbs, nullptr, nullptr), what);
  const git_remote_head** heads = nullptr;
  size_t count = 0;
  RemoteRefs out;
  int rc = git_remote_ls(&heads, &count, remote);
  for (size_t i = 0; rc == 0 && i < count; ++i)
    if (std::string_view(heads[i]->name) != "HEAD") out.refs.emplace_back(heads[i]->name, heads[i]->oid);
  git_buf head = GIT_BUF_INIT;
  if (rc == 0) {
    if (git_remote_default_branch(&head, remote) == 0) {
      std::string_view name(head.ptr, head.size);
      if (name.substr(0, 11) == "refs/heads/") out.head_branch = std::string(name.substr(11));
    } else {
      git_error_clear();  // HEAD names no branch the hub has: the caller decides
    }
  }
  git_buf_dispose(&head);
  git_remote_disconnect(remote);
  check(rc, what);
  return out;
}

void RemoteAccess::check(int rc, std::string_view what) const {
  if (rc >= 0) return;
  const git_error* e = git_error_last();
  std::string detail = e != nullptr && e->message != nullptr ? e->message : "libgit2 error " + std::to_string(rc);
  while (!detail.empty() && (detail.back() == '\n' || detail.back() == ' ')) detail.pop_back();
  const int klass = e != nullptr ? e->klass : GIT_ERROR_NONE;
  const std::string message = std::string(what) + " (" + hub_.shown() + "): " + detail;
  if (rc == GIT_EAUTH || out_of_credentials_)
    throw Error(Errc::bad_input,
                message + "; credentials tried: " + join(tried_) +
                    (hub_.transport == HubLocation::Transport::ssh
                         ? ". Load a key the hub accepts into ssh-agent, put it in ~/.ssh, or name it in $SWARM_SSH_KEY"
                         : ". Put the user and password in the URL, or set $SWARM_HUB_USERNAME and $SWARM_HUB_PASSWORD"));
  if (rc == GIT_ECERTIFICATE) {
    std::string hint = hub_.transport == HubLocation::Transport::ssh
                           ? "; if this is the right host, add its key: ssh-keyscan -p " + std::to_string(hub_.port) +
                                 " " + hub_.host + " >> ~/.ssh/known_hosts"
                           : "; the server's certificate is not trusted by this machine's CA bundle";
    throw Error(Errc::bad_input, message + hint);
  }
  // The server answered, but has no repository there (ssh, git daemon, http).
  for (const char* gone : {"does not appear to be a git repository", "not exported", "repository not found",
                           "status code: 404"})
    if (hub_.remote() && detail.find(gone) != std::string::npos)
      throw Error(Errc::not_bootstrapped, message + "; make the repository on the server (git init --bare), or "
                                                    "name the right one with `swarm up --hub URL`");
  if (hub_.remote() && (klass == GIT_ERROR_NET || klass == GIT_ERROR_SSH || klass == GIT_ERROR_HTTP ||
                        klass == GIT_ERROR_OS || klass == GIT_ERROR_SSL))
    throw Error(Errc::unavailable, message);
  throw Error(Errc::internal, message);
}

}  // namespace swarm::git
