#include "swarm/git/hub_location.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "swarm/base/error.h"

namespace swarm {

namespace fs = std::filesystem;

namespace {

struct Scheme {
  std::string_view prefix;
  HubLocation::Transport transport;
  int default_port;
};

constexpr Scheme kSchemes[] = {
    {"ssh://", HubLocation::Transport::ssh, 22},          {"git+ssh://", HubLocation::Transport::ssh, 22},
    {"ssh+git://", HubLocation::Transport::ssh, 22},      {"git://", HubLocation::Transport::git, 9418},
    {"http://", HubLocation::Transport::http, 80},        {"https://", HubLocation::Transport::https, 443},
};

// The password of `url` ("scheme://user:password@host/..."), or "".
std::string password_of(const std::string& url) {
  auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return "";  // user@host:path carries no password
  auto authority_end = url.find('/', scheme_end + 3);
  auto at = url.rfind('@', authority_end);
  if (at == std::string::npos || at < scheme_end) return "";
  auto colon = url.find(':', scheme_end + 3);
  if (colon == std::string::npos || colon > at) return "";
  return url.substr(colon + 1, at - colon - 1);
}

// `message` with ":<password of url>@" replaced by ":***@".
std::string redacted(const std::string& url, std::string message) {
  const std::string password = password_of(url);
  if (password.empty()) return message;
  const std::string secret = ":" + password + "@";
  for (auto at = message.find(secret); at != std::string::npos; at = message.find(secret, at + 5))
    message.replace(at, secret.size(), ":***@");
  return message;
}

[[noreturn]] void bad(const std::string& given, const std::string& why) {
  throw Error(Errc::bad_input, "bad hub '" + redacted(given, given) + "': " + redacted(given, why) +
                                   " (use a path, ssh://[user@]host[:port]/path, user@host:path, git://host/path "
                                   "or https://host/path)");
}

// Parses "[user[:password]@]host[:port]" into `out`; `authority` has no '/'.
void parse_authority(const std::string& given, std::string_view authority, int default_port, HubLocation& out) {
  if (auto at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
    auto close = authority.find(']');
    if (close == std::string_view::npos) bad(given, "an IPv6 host without its closing ]");
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') bad(given, "text after the IPv6 host");
      port = rest.substr(1);
    }
  } else if (auto colon = authority.find(':'); colon != std::string_view::npos) {
    out.host = std::string(authority.substr(0, colon));
    port = authority.substr(colon + 1);
  } else {
    out.host = std::string(authority);
  }
  if (out.host.empty()) bad(given, "no host");
  out.port = default_port;
  if (!port.empty()) {
    int value = 0;
    for (char c : port) {
      if (c < '0' || c > '9' || value > 65535) bad(given, "the port '" + std::string(port) + "' is not 1 to 65535");
      value = value * 10 + (c - '0');
    }
    if (value < 1 || value > 65535) bad(given, "the port '" + std::string(port) + "' is not 1 to 65535");
    out.port = value;
  }
}

bool behind_proxy() {
  for (const char* name : {"https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"})
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return true;
  return false;
}

// Connects to one address within `timeout`; "" when it opened, else why not.
std::string try_connect(const std::string& address, std::chrono::milliseconds timeout) {
  const auto* to = reinterpret_cast<const sockaddr*>(address.data());
  int fd = ::socket(to->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::strerror(errno);
  std::string why;
  if (::connect(fd, to, static_cast<socklen_t>(address.size())) != 0) {
    if (errno != EINPROGRESS) {
      why = std::strerror(errno);
    } else {
      pollfd p{fd, POLLOUT, 0};
      int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
      if (ready == 0) {
        why = "no answer within " + std::to_string(timeout.count() / 1000) + "s";
      } else {
        int error = 0;
        socklen_t len = sizeof error;
        if (ready < 0) error = errno;
        else ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
        if (error != 0) why = std::strerror(error);
      }
    }
  }
  ::close(fd);
  return why;
}

}  // namespace

std::string HubLocation::redact(const std::string& message) const { return redacted(text, message); }

bool HubLocation::has_password() const { return !password_of(text).empty(); }
std::string HubLocation::password() const { return password_of(text); }

std::string HubLocation::without_password() const {
  const std::string password = password_of(text);
  if (password.empty()) return text;
  std::string out = text;
  out.erase(out.find(":" + password + "@", out.find("://") + 3), password.size() + 1);
  return out;
}

void HubLocation::require_no_password_over_http() const {
  if (transport == Transport::http && has_password())
    throw Error(Errc::bad_input, "the hub " + shown() + " would get its password over plain http://, where anyone "
                                 "on the way reads it; use https://, ssh:// or git://");
}

std::string HubLocation::session_url() const {
  if (remote()) return shown();
  return "file://" + fs::weakly_canonical(path()).string();
}

HubLocation parse_hub_location(const std::string& given, const fs::path& base) {
  if (given.empty()) bad(given, "it is empty");
  for (unsigned char c : given)
    if (c < 0x20 || c == 0x7f) bad(given, "it has control characters");
  HubLocation out;
  out.text = given;
  if (auto sep = given.find("://"); sep != std::string::npos) {
    if (given.compare(0, 7, "file://") == 0) {
      std::string path = given.substr(7);
      if (path.empty() || path.front() != '/') bad(given, "a file:// URL needs an absolute path");
      out.text = fs::path(path).lexically_normal().string();
      return out;
    }
    for (const auto& scheme : kSchemes) {
      if (given.compare(0, scheme.prefix.size(), scheme.prefix) != 0) continue;
      out.transport = scheme.transport;
      std::string_view rest = std::string_view(given).substr(scheme.prefix.size());
      auto slash = rest.find('/');
      parse_authority(given, rest.substr(0, slash), scheme.default_port, out);
      if (slash == std::string_view::npos || slash + 1 == rest.size()) bad(given, "no repository path after the host");
      return out;
    }
    bad(given, "the scheme '" + given.substr(0, sep) + "://' is not one git can push to here");
  }
  // git's rule: a colon before any slash makes it scp-like ssh, [user@]host:path.
  auto colon = given.find(':');
  auto slash = given.find('/');
  if (colon != std::string::npos && (slash == std::string::npos || colon < slash)) {
    out.transport = HubLocation::Transport::ssh;
    parse_authority(given, std::string_view(given).substr(0, colon), 22, out);
    if (out.port != 22 || given.find('[') != std::string::npos)
      bad(given, "user@host:path has no port; write ssh://user@host:port/path");
    if (colon + 1 == given.size()) bad(given, "no repository path after the host");
    return out;
  }
  fs::path path = fs::path(given).is_absolute() ? fs::path(given) : base / given;
  try {
    out.text = fs::weakly_canonical(path.lexically_normal()).string();
  } catch (const fs::filesystem_error& e) {
    bad(given, e.code().message());
  }
  return out;
}

std::vector<std::string> resolve_hub(const HubLocation& hub) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(hub.host.c_str(), std::to_string(hub.port).c_str(), &hints, &found); rc != 0)
    throw Error(Errc::unavailable, "the hub " + hub.shown() + " cannot be reached: host " + hub.host + ": " +
                                       ::gai_strerror(rc));
  std::vector<std::string> out;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next)
    out.emplace_back(reinterpret_cast<const char*>(a->ai_addr), a->ai_addrlen);
  ::freeaddrinfo(found);
  return out;
}

void require_reachable(const HubLocation& hub, std::chrono::milliseconds timeout) {
  if (!hub.remote()) return;
  if ((hub.transport == HubLocation::Transport::http || hub.transport == HubLocation::Transport::https) &&
      behind_proxy())
    return;
  std::string why;
  for (const auto& address : resolve_hub(hub)) {
    why = try_connect(address, timeout);
    if (why.empty()) break;
  }
  if (!why.empty())
    throw Error(Errc::unavailable, "the hub " + hub.shown() + " cannot be reached: " + hub.host + " port " +
                                       std::to_string(hub.port) + ": " + why);
}

}  // namespace swarm
