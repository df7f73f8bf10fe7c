// Reaching a hub over the network from libgit2: the credentials it is
// offered (ssh-agent and the usual key files for SSH; the URL's or the
// environment's user and password for HTTPS), a watchdog that ends an
// operation the hub stopped answering, and what a failure means in swarm's
// terms (adr/0015): a refused credential, an untrusted host key or a hub
// that refuses pushes is bad input (exit 2), no repository there is exit 6,
// a hub that cannot be reached or stops answering is unavailable (exit 7).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "swarm/git/backend.h"
#include "swarm/git/handles.h"
#include "swarm/git/hub_location.h"

namespace swarm::git {

// The module reads its environment variables through `lookup` from now on
// (getenv until then): the program's, which knows what it took out of it.
void read_environment_with(EnvironmentLookup lookup);

// A hub's refs as one ls-remote gave them.
struct RemoteRefs {
  std::vector<std::pair<std::string, git_oid>> refs;  // full names: refs/heads/main, ...
  std::string head_branch;                            // what HEAD names ("main"), when the hub says
};

// Interrupts the thread that armed it once `idle` passes with no touch()
// (a signal, so that a blocking connect or read returns EINTR and libgit2
// gives up; and on_fire): libgit2 1.5 has no read timeout, and a hub that
// accepts a connection and then says nothing would hang a verb forever.
class IdleWatchdog {
 public:
  // `on_fire` runs on the watchdog's thread each time it fires (e.g. shuts
  // the hub's sockets down: libssh2 retries a call that a signal interrupts).
  IdleWatchdog(std::chrono::milliseconds idle, std::function<void()> on_fire);
  ~IdleWatchdog();
  IdleWatchdog(const IdleWatchdog&) = delete;
  IdleWatchdog& operator=(const IdleWatchdog&) = delete;

  void arm();     // watches the calling thread from now
  void disarm();  // before the armed thread does anything else
  void touch();   // the hub said something
  bool fired() const { return fired_; }
  std::chrono::milliseconds idle() const { return idle_; }

 private:
  void loop();
  std::chrono::milliseconds idle_;
  std::function<void()> on_fire_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool armed_ = false;
  bool stop_ = false;
  std::atomic<bool> fired_{false};
  pthread_t target_{};
  std::chrono::steady_clock::time_point last_;
  std::thread thread_;
};

class RemoteAccess {
 public:
  // For the hub at `url` (a path or a URL). A network hub is probed first
  // (require_reachable): throws unavailable when it cannot be reached.
  explicit RemoteAccess(const std::string& url);
  RemoteAccess(const RemoteAccess&) = delete;
  RemoteAccess& operator=(const RemoteAccess&) = delete;

  // Callbacks for one operation: credentials (each offered once again, and
  // only to the hub's own host), the hub's host key or certificate checked,
  // progress that feeds the watchdog, and a push's rejected refs.
  git_remote_callbacks callbacks();
  // The hub's URL as libgit2 is given it: without the password, which goes
  // only into a credential when the hub asks (a URL is written into reflogs
  // and configs by libgit2, where anyone who reads the clone would find it).
  std::string git_url() const { return hub_.without_password(); }
  // The hub as a remote of `repo` that no setting of the repository can
  // redirect: made from the hub's URL alone (no origin, pushurl or
  // insteadOf read), so every push and fetch goes to the configured hub.
  RemotePtr hub_remote(git_repository* repo) const;
  const std::vector<std::string>& rejected() const { return rejected_; }
  // The next push goes only if the hub has `ref` at `at` when it is about
  // to send (a compare-and-swap the hub's receive-pack then enforces): else
  // it sends nothing, fails, and moved() says so.
  void expect_remote(std::string ref, const git_oid& at) {
    expected_ref_ = std::move(ref);
    expected_at_ = at;
  }
  bool moved() const { return moved_; }

  enum class Direction { fetch, push };
  // Runs one libgit2 network operation (`op` returns its rc) under the idle
  // watchdog; throws, unless rc >= 0, the swarm::Error that says what went
  // wrong with `what` (e.g. "clone the hub"), naming the hub.
  template <typename Op>
  void run(std::string_view what, Op&& op, Direction direction = Direction::fetch) {
    int rc = 0;
    {
      Armed armed(watchdog_.get());
      rc = op();
    }
    check(rc, what, direction);
  }

  // The refs of `remote` (one connection): `what` says for whom, in errors.
  RemoteRefs list(git_remote* remote, std::string_view what);
  // Connects to `remote` for a push and leaves again: a hub that refuses
  // this host's pushes says so here (exit 2), before any work depends on it.
  void require_push_access(git_remote* remote);

  const HubLocation& hub() const { return hub_; }

 private:
  struct Armed {
    IdleWatchdog* dog;
    explicit Armed(IdleWatchdog* d) : dog(d) {
      if (dog) dog->arm();
    }
    ~Armed() {
      if (dog) dog->disarm();
    }
  };
  void check(int rc, std::string_view what, Direction direction) const;
  static int credentials(git_credential** out, const char* url, const char* username_from_url,
                         unsigned int allowed_types, void* payload);
  static int on_push_update(const char* refname, const char* status, void* payload);
  static int on_push_negotiation(const git_push_update** updates, size_t len, void* payload);
  static int on_progress(const git_indexer_progress* stats, void* payload);
  static int on_sideband(const char* text, int len, void* payload);
  static int on_push_progress(unsigned int current, unsigned int total, size_t bytes, void* payload);
  static int on_pack_progress(int stage, uint32_t current, uint32_t total, void* payload);
  static int on_certificate(git_cert* cert, int valid, const char* host, void* payload);
  // Whether `url` (what libgit2 is about to log in to) is the hub's own host.
  bool is_hub_host(const char* url) const;
  void touch() {
    if (watchdog_) watchdog_->touch();
  }
  int next_credential(git_credential** out, const char* username_from_url, unsigned int allowed_types);

  HubLocation hub_;
  std::unique_ptr<IdleWatchdog> watchdog_;  // network hubs only
  std::vector<std::string> tried_;          // the credentials offered, for the message
  std::vector<std::string> ssh_sources_;    // listed at the first SSH request of an operation
  bool listed_ssh_ = false;
  std::size_t next_ssh_ = 0;                // the next of them to offer
  bool offered_userpass_ = false;
  bool offered_url_password_ = false;
  bool out_of_credentials_ = false;         // every credential was offered and refused
  std::string credential_problem_;          // e.g. $SWARM_SSH_KEY names no readable file
  std::vector<std::string> rejected_;
  std::string expected_ref_;  // empty: no expectation
  git_oid expected_at_{};
  bool moved_ = false;
};

}  // namespace swarm::git
