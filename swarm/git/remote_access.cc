#include "swarm/git/remote_access.h"

#include <pthread.h>
#include <netdb.h>
#include <pwd.h>
#include <sys/socket.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "swarm/base/error.h"

namespace swarm::git {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// How long a hub may say nothing during an operation; $SWARM_HUB_IDLE_TIMEOUT
// (whole seconds, 1 to 3600) changes it.
constexpr std::chrono::seconds kDefaultIdleTimeout{30};
// The signal that interrupts a blocked socket call: ignored by default, so a
// stray one harms nothing; our handler is installed without SA_RESTART.
constexpr int kWakeSignal = SIGURG;

std::atomic<EnvironmentLookup> g_lookup{nullptr};  // set by read_environment_with
std::string env(const char* name) {
  if (const EnvironmentLookup lookup = g_lookup.load()) return lookup(name).value_or("");
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::chrono::milliseconds idle_timeout() {
  std::string text = env("SWARM_HUB_IDLE_TIMEOUT");
  char* end = nullptr;
  long seconds = text.empty() ? 0 : std::strtol(text.c_str(), &end, 10);
  if (text.empty() || end == nullptr || *end != '\0' || seconds < 1 || seconds > 3600) return kDefaultIdleTimeout;
  return std::chrono::seconds(seconds);
}

void on_wake(int) {}

bool same_host(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

void install_wake_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_handler = on_wake;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;  // no SA_RESTART: the blocked call returns EINTR
    sigaction(kWakeSignal, &action, nullptr);
  });
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

bool mentions(const std::string& text, std::initializer_list<const char*> phrases) {
  for (const char* phrase : phrases)
    if (text.find(phrase) != std::string::npos) return true;
  return false;
}

// Shuts down every socket of this process connected to the hub's host and
// port: a read blocked on it (in libgit2 or libssh2) sees the end of the
// stream and fails. Other connections (NATS) are left alone.
void shut_sockets_to(const HubLocation& hub) {
  std::vector<std::string> peers;
  try {
    peers = resolve_hub(hub);
  } catch (const Error&) {
    return;  // on a watchdog's thread: nothing to shut that the name gives
  }
  std::error_code ec;
  // Incremented by hand: a range-for would throw when an entry vanishes.
  for (auto it = fs::directory_iterator("/proc/self/fd", ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    int fd = -1;
    try {
      fd = std::stoi(it->path().filename().string());
    } catch (...) {
      continue;
    }
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;
    std::string bytes(reinterpret_cast<const char*>(&peer), len);
    for (const auto& want : peers)
      if (bytes == want) ::shutdown(fd, SHUT_RDWR);
  }
}

}  // namespace
void read_environment_with(EnvironmentLookup lookup) { g_lookup.store(lookup); }

IdleWatchdog::IdleWatchdog(std::chrono::milliseconds idle, std::function<void()> on_fire)
    : idle_(idle), on_fire_(std::move(on_fire)) {
  install_wake_handler();
  thread_ = std::thread([this] { loop(); });
}

IdleWatchdog::~IdleWatchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void IdleWatchdog::arm() {
  std::lock_guard lock(mutex_);
  target_ = pthread_self();
  last_ = std::chrono::steady_clock::now();
  armed_ = true;
  wake_.notify_all();
}

void IdleWatchdog::disarm() {
  std::lock_guard lock(mutex_);
  armed_ = false;
}

void IdleWatchdog::touch() {
  std::lock_guard lock(mutex_);
  last_ = std::chrono::steady_clock::now();
}

void IdleWatchdog::loop() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    if (!armed_) {
      wake_.wait(lock);
      continue;
    }
    auto due = last_ + idle_;
    if (std::chrono::steady_clock::now() < due && !fired_) {
      wake_.wait_until(lock, due);
      continue;
    }
    // Silent too long: interrupt the armed thread, and again every 100 ms
    // until it leaves the operation (the signal may land between calls).
    fired_ = true;
    pthread_kill(target_, kWakeSignal);
    if (on_fire_) on_fire_();
    wake_.wait_for(lock, 100ms);
  }
}

RemoteAccess::RemoteAccess(const std::string& url) : hub_(parse_hub_location(url, "/")) {
  hub_.require_no_password_over_http();
  require_reachable(hub_, kHubConnectTimeout);
  if (hub_.remote())
    watchdog_ = std::make_unique<IdleWatchdog>(idle_timeout(), [hub = hub_] { shut_sockets_to(hub); });
}

git_remote_callbacks RemoteAccess::callbacks() {
  // Every operation connects anew and is offered every credential again.
  tried_.clear();
  listed_ssh_ = false;
  next_ssh_ = 0;
  offered_userpass_ = false;
  offered_url_password_ = false;
  out_of_credentials_ = false;
  credential_problem_.clear();
  rejected_.clear();
  if (hub_.shown() != hub_.text) tried_.push_back("the user and password in the URL");
  git_remote_callbacks callbacks = GIT_REMOTE_CALLBACKS_INIT;
  callbacks.credentials = &RemoteAccess::credentials;
  callbacks.push_update_reference = &RemoteAccess::on_push_update;
  callbacks.transfer_progress = &RemoteAccess::on_progress;
  callbacks.sideband_progress = &RemoteAccess::on_sideband;
  callbacks.push_transfer_progress = &RemoteAccess::on_push_progress;
  callbacks.pack_progress = &RemoteAccess::on_pack_progress;
  callbacks.certificate_check = &RemoteAccess::on_certificate;
  if (!expected_ref_.empty()) callbacks.push_negotiation = &RemoteAccess::on_push_negotiation;
  moved_ = false;
  callbacks.payload = this;
  return callbacks;
}

RemotePtr RemoteAccess::hub_remote(git_repository* repo) const {
  git_remote_create_options options = GIT_REMOTE_CREATE_OPTIONS_INIT;
  options.repository = repo;
  options.name = nullptr;  // anonymous: nothing of it is read from or written to the repository's config
  options.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF | GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
  git_remote* raw = nullptr;
  git::check(git_remote_create_with_opts(&raw, git_url().c_str(), &options), "name the hub " + hub_.shown());
  return RemotePtr(raw);
}

bool RemoteAccess::is_hub_host(const char* url) const {
  if (!hub_.remote() || url == nullptr) return false;
  try {
    return same_host(parse_hub_location(url, "/").host, hub_.host);
  } catch (const Error&) {
    return false;
  }
}

// The hub's host key (SSH) or certificate (HTTPS) as libgit2 judged it
// (known_hosts, the CA bundle): an unknown one is refused, and so is any
// host other than the hub's (a redirect).
int RemoteAccess::on_certificate(git_cert* /*cert*/, int valid, const char* host, void* payload) {
  auto* self = static_cast<RemoteAccess*>(payload);
  self->touch();
  if (host != nullptr && !same_host(host, self->hub_.host)) {
    git_error_set_str(GIT_ERROR_NET, ("the connection went to " + std::string(host) + ", not to the hub's host " +
                                      self->hub_.host).c_str());
    return GIT_ECERTIFICATE;
  }
  if (!valid) {
    git_error_set_str(GIT_ERROR_SSL, "the hub's host key or certificate is not one this machine trusts");
    return GIT_ECERTIFICATE;
  }
  return 0;
}

int RemoteAccess::credentials(git_credential** out, const char* url, const char* username_from_url,
                              unsigned int allowed_types, void* payload) {
  auto* self = static_cast<RemoteAccess*>(payload);
  self->touch();
  // Keys and passwords are the hub's: offered to its host alone.
  if (!self->is_hub_host(url)) {
    self->credential_problem_ = "a credential was asked for by another host than the hub's (" + self->hub_.host +
                                "); nothing was offered";
    self->out_of_credentials_ = true;
    git_error_set_str(GIT_ERROR_NET, self->credential_problem_.c_str());
    return GIT_EAUTH;
  }
  return self->next_credential(out, username_from_url, allowed_types);
}

int RemoteAccess::on_push_update(const char* refname, const char* status, void* payload) {
  auto* self = static_cast<RemoteAccess*>(payload);
  self->touch();
  if (status != nullptr) self->rejected_.push_back(std::string(refname) + ": " + status);
  return 0;
}

int RemoteAccess::on_push_negotiation(const git_push_update** updates, size_t len, void* payload) {
  auto* self = static_cast<RemoteAccess*>(payload);
  self->touch();
  for (size_t i = 0; i < len; ++i)
    if (self->expected_ref_ == updates[i]->dst_refname && !git_oid_equal(&updates[i]->src, &self->expected_at_)) {
      self->moved_ = true;
      git_error_set_str(GIT_ERROR_REFERENCE, (self->expected_ref_ + " moved on the hub").c_str());
      return GIT_EUSER;
    }
  return 0;
}

int RemoteAccess::on_progress(const git_indexer_progress* /*stats*/, void* payload) {
  static_cast<RemoteAccess*>(payload)->touch();
  return 0;
}

int RemoteAccess::on_sideband(const char* /*text*/, int /*len*/, void* payload) {
  static_cast<RemoteAccess*>(payload)->touch();
  return 0;
}

int RemoteAccess::on_push_progress(unsigned int /*current*/, unsigned int /*total*/, size_t /*bytes*/, void* payload) {
  static_cast<RemoteAccess*>(payload)->touch();
  return 0;
}

int RemoteAccess::on_pack_progress(int /*stage*/, uint32_t /*current*/, uint32_t /*total*/, void* payload) {
  static_cast<RemoteAccess*>(payload)->touch();
  return 0;
}

// libgit2 calls this again after each refusal: every source is offered once,
// then the operation fails with GIT_EAUTH. Nothing may throw through libgit2:
// a problem is kept for check().
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
      std::error_code ec;
      if (!fs::is_regular_file(source, ec) || ::access(source.c_str(), R_OK) != 0) {
        credential_problem_ = "the key " + source + " is not a readable file ($SWARM_SSH_KEY names the one key to offer)";
        out_of_credentials_ = true;
        git_error_set_str(GIT_ERROR_SSH, credential_problem_.c_str());
        return GIT_EAUTH;
      }
      std::string pub = source + ".pub";
      return git_credential_ssh_key_new(out, user.c_str(), fs::exists(pub, ec) ? pub.c_str() : nullptr,
                                        source.c_str(), nullptr);
    }
  }
  if ((allowed_types & GIT_CREDENTIAL_USERPASS_PLAINTEXT) && hub_.has_password() && !offered_url_password_) {
    // The URL's own user and password, which libgit2 never saw in the URL.
    offered_url_password_ = true;
    return git_credential_userpass_plaintext_new(out, user.c_str(), hub_.password().c_str());
  }
  if ((allowed_types & GIT_CREDENTIAL_USERPASS_PLAINTEXT) && !offered_userpass_) {
    offered_userpass_ = true;
    std::string name = env("SWARM_HUB_USERNAME");
    std::string password = env("SWARM_HUB_PASSWORD");
    if (!password.empty() && hub_.transport == HubLocation::Transport::http) {
      credential_problem_ = "$SWARM_HUB_PASSWORD is never sent over plain http:// (anyone on the way reads it); "
                            "use https://, ssh:// or git:// for the hub";
      out_of_credentials_ = true;
      git_error_set_str(GIT_ERROR_NET, credential_problem_.c_str());
      return GIT_EAUTH;
    }
    if (!password.empty()) {
      if (name.empty()) name = user;
      tried_.push_back("$SWARM_HUB_PASSWORD as " + name);
      return git_credential_userpass_plaintext_new(out, name.c_str(), password.c_str());
    }
  }
  out_of_credentials_ = true;
  git_error_set_str(GIT_ERROR_NET, "the hub refused every credential offered");
  return GIT_EAUTH;
}

RemoteRefs RemoteAccess::list(git_remote* remote, std::string_view what) {
  git_remote_callbacks cbs = callbacks();
  run(what, [&] { return git_remote_connect(remote, GIT_DIRECTION_FETCH, &cbs, nullptr, nullptr); });
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
  check(rc, what, Direction::fetch);
  return out;
}

void RemoteAccess::require_push_access(git_remote* remote) {
  git_remote_callbacks cbs = callbacks();
  run(
      "connect to the hub for a push",
      [&] { return git_remote_connect(remote, GIT_DIRECTION_PUSH, &cbs, nullptr, nullptr); }, Direction::push);
  git_remote_disconnect(remote);
}

void RemoteAccess::check(int rc, std::string_view what, Direction direction) const {
  if (rc >= 0) return;
  const git_error* e = git_error_last();
  std::string detail = e != nullptr && e->message != nullptr ? e->message : "libgit2 error " + std::to_string(rc);
  while (!detail.empty() && (detail.back() == '\n' || detail.back() == ' ')) detail.pop_back();
  detail = hub_.redact(detail);
  const int klass = e != nullptr ? e->klass : GIT_ERROR_NONE;
  const std::string message = std::string(what) + " (" + hub_.shown() + "): " + detail;
  if (watchdog_ && watchdog_->fired())
    throw Error(Errc::unavailable, std::string(what) + " (" + hub_.shown() + "): the hub said nothing for " +
                                       std::to_string(watchdog_->idle().count() / 1000) +
                                       "s, so swarm gave up ($SWARM_HUB_IDLE_TIMEOUT, in seconds, changes the limit)");
  if (!credential_problem_.empty())
    throw Error(Errc::bad_input, std::string(what) + " (" + hub_.shown() + "): " + hub_.redact(credential_problem_));
  if (rc == GIT_EAUTH || out_of_credentials_) {
    std::string tried = tried_.empty() ? "none" : join(tried_);
    throw Error(Errc::bad_input,
                message + "; credentials tried: " + tried +
                    (hub_.transport == HubLocation::Transport::ssh
                         ? ". Load a key the hub accepts into ssh-agent, put it in ~/.ssh, or name it in $SWARM_SSH_KEY"
                         : ". Put the user and password in the URL, or set $SWARM_HUB_USERNAME and $SWARM_HUB_PASSWORD"));
  }
  if (rc == GIT_ECERTIFICATE) {
    std::string hint = hub_.transport == HubLocation::Transport::ssh
                           ? "; if this is the right host, add its key: ssh-keyscan -p " + std::to_string(hub_.port) +
                                 " " + hub_.host + " >> ~/.ssh/known_hosts"
                           : "; the server's certificate is not trusted by this machine's CA bundle";
    throw Error(Errc::bad_input, message + hint);
  }
  // libgit2 checks a push against what the hub listed before it sends
  // anything: the hub's branch has commits this clone lacks or has not.
  if (rc == GIT_ENONFASTFORWARD) throw Error(Errc::conflict, message);
  if (!hub_.remote()) {
    std::error_code ec;
    if (!fs::exists(hub_.path(), ec))
      throw Error(Errc::not_bootstrapped, std::string(what) + ": the hub " + hub_.text + " is missing");
    throw Error(filesystem_refused(message) ? Errc::filesystem : Errc::internal, message);
  }
  // The server answered, but has no repository there, or refuses this
  // host's pushes (git daemon says the same words for both: a push comes
  // after a listing that found the repository).
  if (direction == Direction::push &&
      mentions(detail, {"access denied", "not enabled", "ermission denied", "status code: 403", "read-only"}))
    throw Error(Errc::bad_input, message + "; the hub refuses pushes from this host: give it write access (for git "
                                           "daemon, --enable=receive-pack)");
  if (mentions(detail, {"does not appear to be a git repository", "not exported", "epository not found",
                        "status code: 404"}))
    throw Error(Errc::not_bootstrapped, message + "; make the repository on the server (git init --bare), or name "
                                                  "the right one with `swarm up --hub URL`");
  if (klass == GIT_ERROR_NET || klass == GIT_ERROR_SSH || klass == GIT_ERROR_HTTP || klass == GIT_ERROR_OS ||
      klass == GIT_ERROR_SSL)
    throw Error(Errc::unavailable, message);
  throw Error(Errc::internal, message);
}

}  // namespace swarm::git
