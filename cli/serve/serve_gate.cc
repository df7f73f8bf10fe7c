// swarm serve's gate (cli/serve/serve_gate.h): the Host, the Bearer secret,
// and the page's sessions, traded for the one-time code of a link.
#include "cli/serve/serve_gate.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <chrono>

#include "swarm/base/secret.h"
#include "swarm/base/text.h"

namespace cli {

namespace {

// How long a session is good for; at most this many are kept (each is a
// link opened by the owner, so a handful), the oldest dropped first.
constexpr std::chrono::hours kSessionLife{12};
constexpr std::size_t kMaxSessions = 32;

// Whether `text` is an IP address of this machine's loopback.
bool loopback_ip(const std::string& text) {
  in_addr v4{};
  in6_addr v6{};
  if (::inet_pton(AF_INET, text.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  if (::inet_pton(AF_INET6, text.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

// Whether `host` is an address of one of this machine's interfaces.
bool machine_address(const std::string& host) {
  in_addr v4{};
  in6_addr v6{};
  const bool is_v4 = ::inet_pton(AF_INET, host.c_str(), &v4) == 1;
  if (!is_v4 && ::inet_pton(AF_INET6, host.c_str(), &v6) != 1) return false;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* a = list; a != nullptr && !found; a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    if (is_v4 && a->ifa_addr->sa_family == AF_INET)
      found = reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr == v4.s_addr;
    if (!is_v4 && a->ifa_addr->sa_family == AF_INET6)
      found = IN6_ARE_ADDR_EQUAL(&reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, &v6);
  }
  ::freeifaddrs(list);
  return found;
}

bool wildcard(const std::string& host) { return host == "0.0.0.0" || host == "::"; }

// Whether a request's Host names this server: its listen address,
// localhost, or a loopback address, on its port (on a wildcard address,
// any address of this machine too). A page of another site that a browser
// was made to send here by DNS rebinding names that site.
bool host_is_ours(const std::string& host_header, const ListenAddress& where, int port) {
  std::string host = host_header, given_port;
  if (!host.empty() && host.front() == '[') {
    const auto close = host.find(']');
    if (close == std::string::npos) return false;
    const std::string rest = host.substr(close + 1);
    host = host.substr(1, close - 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return false;
      given_port = rest.substr(1);
    }
  } else if (const auto colon = host.find(':'); colon != std::string::npos) {
    if (host.find(':', colon + 1) != std::string::npos) return false;  // an IPv6 address must be bracketed
    given_port = host.substr(colon + 1);
    host = host.substr(0, colon);
  }
  if (!given_port.empty() && given_port != std::to_string(port)) return false;
  for (char& c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!host.empty() && host.back() == '.') host.pop_back();
  return host == "localhost" || host == where.host || loopback_ip(host) ||
         (wildcard(where.host) && machine_address(host));
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The value of cookie `name` in a Cookie header ("" when absent).
std::string cookie_value(const std::string& header, const std::string& name) {
  std::size_t at = 0;
  while (at < header.size()) {
    auto end = header.find(';', at);
    if (end == std::string::npos) end = header.size();
    std::string pair = header.substr(at, end - at);
    while (!pair.empty() && pair.front() == ' ') pair.erase(0, 1);
    if (pair.rfind(name + "=", 0) == 0) return pair.substr(name.size() + 1);
    at = end + 1;
  }
  return {};
}

// The page's own files: static, in the binary, nothing of the workspace in them.
bool page_file(const std::string& path) { return path == "/" || path == "/app.js" || path == "/app.css"; }

HttpResponse see_other(const std::string& why) {
  HttpResponse r = secured(HttpResponse::text(303, why + "; go to /"));
  r.headers.push_back({"Location", "/"});
  return r;
}

}  // namespace

HttpResponse secured(HttpResponse r) {
  r.headers.push_back({"Cache-Control", "no-store"});
  r.headers.push_back({"X-Content-Type-Options", "nosniff"});
  r.headers.push_back({"X-Frame-Options", "DENY"});
  r.headers.push_back({"Referrer-Policy", "no-referrer"});
  return r;
}

Gate::Gate(ListenAddress where, std::optional<std::string> secret, std::function<void(const std::string&)> announce)
    : where_(std::move(where)), secret_(std::move(secret)), announce_(std::move(announce)) {
  if (secret_) code_ = swarm::random_secret();
}

void Gate::set_port(int port) {
  port_ = port;
  cookie_ = "swarm_serve_" + std::to_string(port);
}

std::string Gate::link() const {
  const std::string host = where_.host.find(':') != std::string::npos ? "[" + where_.host + "]" : where_.host;
  return "http://" + host + ":" + std::to_string(port_) + "/" + (secret_ ? "?code=" + code_ : "");
}

std::optional<HttpResponse> Gate::check(const HttpRequest& req) {
  const std::string host = req.header("host");
  if (host.empty()) return secured(HttpResponse::text(400, "a request without a Host header is not served here"));
  if (!host_is_ours(host, where_, port_))
    return secured(HttpResponse::text(421, "Host " + swarm::printable(host.substr(0, 200)) +
                                               " is not this server's: swarm serve answers only for its own address, "
                                               "localhost or a loopback address"));
  if (!secret_) return std::nullopt;
  const std::string auth = req.header("authorization");
  if (auth.rfind("Bearer ", 0) == 0 && same_secret(auth.substr(7), *secret_)) return std::nullopt;
  if (Session* session = session_of(req)) return for_session(req, *session);
  if (req.path == "/") return sign_in(req);
  return refused("swarm serve needs the workspace's serve secret: open the link `swarm serve` printed, or send "
                 "Authorization: Bearer <the contents of .swarm/serve/token>");
}

Gate::Session* Gate::session_of(const HttpRequest& req) {
  const std::int64_t now = unix_now();
  while (!sessions_.empty() && sessions_.front().second.expires <= now) sessions_.pop_front();
  const std::string id = cookie_value(req.header("cookie"), cookie_);
  if (id.empty()) return nullptr;
  Session* found = nullptr;
  for (auto& [known, session] : sessions_)  // every one compared, in constant time
    if (same_secret(id, known) && session.expires > now) found = &session;
  return found;
}

std::optional<HttpResponse> Gate::for_session(const HttpRequest& req, Session& session) {
  if (req.path == "/session") {
    if (session.key_handed)
      return secured(HttpResponse::text(409, "this session's key was given to the page that signed in; a page "
                                             "without it needs a new link (swarm serve prints one each time its "
                                             "link is used)"));
    session.key_handed = true;
    HttpResponse r;
    r.content_type = "application/json";
    r.body = "{\"key\":\"" + session.key + "\"}\n";
    return secured(std::move(r));
  }
  if (page_file(req.path)) {
    if (req.path == "/" && !req.query.empty()) return see_other("signed in already");
    return std::nullopt;
  }
  std::string key = req.header("x-swarm-key");
  if (key.empty()) key = req.param("key").value_or("");
  if (same_secret(key, session.key)) return std::nullopt;
  return refused("the session cookie alone opens only the page's own files: what it reads needs the key the page "
                 "was given as well (a browser sends the cookie to every port of this host)");
}

std::optional<HttpResponse> Gate::sign_in(const HttpRequest& req) {
  if (req.param("token"))
    return refused("a link with the secret in it stays in the browser's history: open the link `swarm serve` "
                   "printed (a one-time code), or send Authorization: Bearer <the contents of .swarm/serve/token>");
  const auto code = req.param("code");
  if (!code)
    return refused("swarm serve needs the workspace's serve secret: open the link `swarm serve` printed, or send "
                   "Authorization: Bearer <the contents of .swarm/serve/token>");
  if (!same_secret(*code, code_))
    return refused("this link was used already, or is not this serve's: a link signs in one browser, and swarm "
                   "serve printed a new one when it was used");
  if (req.method == "HEAD") return std::nullopt;  // a look at the link does not use it
  code_ = swarm::random_secret();
  const std::int64_t life = std::chrono::seconds(kSessionLife).count();
  const std::string id = swarm::random_secret();
  sessions_.push_back({id, Session{swarm::random_secret(), false, unix_now() + life}});
  while (sessions_.size() > kMaxSessions) sessions_.pop_front();
  if (announce_) announce_(link());
  HttpResponse r = see_other("signed in");
  r.headers.push_back({"Set-Cookie", cookie_ + "=" + id + "; HttpOnly; SameSite=Strict; Path=/; Max-Age=" +
                                         std::to_string(life)});
  return r;
}

HttpResponse Gate::refused(const std::string& why) const {
  HttpResponse r = secured(HttpResponse::text(401, why));
  r.headers.push_back({"WWW-Authenticate", "Bearer realm=\"swarm\""});
  return r;
}

}  // namespace cli
