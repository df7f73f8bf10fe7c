// Reaching a hub over the network from libgit2: the credentials it is
// offered (ssh-agent and the usual key files for SSH; the URL's or the
// environment's user and password for HTTPS), and what a failure means in
// swarm's terms (adr/0015): a refused credential or an untrusted host key is
// bad input (exit 2), a hub that cannot be reached is unavailable (exit 7).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "swarm/git/handles.h"
#include "swarm/hub_location.h"

namespace swarm::git {

// A hub's refs as one ls-remote gave them.
struct RemoteRefs {
  std::vector<std::pair<std::string, git_oid>> refs;  // full names: refs/heads/main, ...
  std::string head_branch;                            // what HEAD names ("main"), when the hub says
};

class RemoteAccess {
 public:
  // For the hub at `url` (a path or a URL). A network hub is probed first
  // (require_reachable): throws unavailable when it cannot be reached.
  explicit RemoteAccess(const std::string& url);
  RemoteAccess(const RemoteAccess&) = delete;
  RemoteAccess& operator=(const RemoteAccess&) = delete;

  // Callbacks with credentials, and a push's rejected refs collected into rejected().
  git_remote_callbacks callbacks();
  const std::vector<std::string>& rejected() const { return rejected_; }
  void clear_rejected() { rejected_.clear(); }

  // Throws, unless rc >= 0, the swarm::Error that says what went wrong with
  // `what` (e.g. "clone the hub"), naming the hub.
  void check(int rc, std::string_view what) const;

  // The refs of `remote` (one connection): `what` says for whom, in errors.
  RemoteRefs list(git_remote* remote, std::string_view what);

  const HubLocation& hub() const { return hub_; }

 private:
  static int credentials(git_credential** out, const char* url, const char* username_from_url,
                         unsigned int allowed_types, void* payload);
  static int on_push_update(const char* refname, const char* status, void* payload);
  int next_credential(git_credential** out, const char* username_from_url, unsigned int allowed_types);

  HubLocation hub_;
  std::vector<std::string> tried_;    // the credentials offered, for the message
  std::vector<std::string> ssh_sources_;  // listed at the first SSH request
  bool listed_ssh_ = false;
  std::size_t next_ssh_ = 0;          // the next of them to offer
  bool offered_userpass_ = false;
  bool out_of_credentials_ = false;   // every credential was offered and refused
  std::vector<std::string> rejected_;
};

}  // namespace swarm::git
