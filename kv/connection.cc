#include "kv/connection.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "kv/connection_state.h"
#include "kv/nkey.h"

namespace kv {

using detail::check;

std::vector<std::string> split_urls(const std::string& comma_separated) {
  std::vector<std::string> urls;
  std::stringstream in(comma_separated);
  std::string part;
  while (std::getline(in, part, ',')) {
    auto first = part.find_first_not_of(" \t");
    auto last = part.find_last_not_of(" \t");
    if (first != std::string::npos) urls.push_back(part.substr(first, last - first + 1));
  }
  return urls;
}

std::string redact_urls(const std::string& urls) {
  // Each URL of the list: its userinfo runs from after the scheme (if any)
  // to its last '@' (a password may hold '/', '@' or spaces); a password
  // after the user's ':' becomes ***, and a userinfo with no ':' (nats.c
  // takes it for a token) becomes *** whole.
  std::string out;
  std::size_t start = 0;
  while (start <= urls.size()) {
    std::size_t end = urls.find(',', start);
    if (end == std::string::npos) end = urls.size();
    std::string url = urls.substr(start, end - start);
    const std::size_t scheme = url.find("://");
    const std::size_t from = scheme == std::string::npos ? 0 : scheme + 3;
    const std::size_t at = url.rfind('@');
    if (at != std::string::npos && at >= from) {
      const std::string userinfo = url.substr(from, at - from);
      const std::size_t colon = userinfo.find(':');
      url.replace(from, at - from, colon == std::string::npos ? std::string("***") : userinfo.substr(0, colon + 1) + "***");
    }
    out += url;
    if (end == urls.size()) break;
    out += ',';
    start = end + 1;
  }
  return out;
}

namespace {

bool is_host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
         c == '_';
}

// Why `url` is no server URL, or "" when it is one.
std::string url_problem(const std::string& url) {
  std::string rest = url;
  if (auto scheme_end = rest.find("://"); scheme_end != std::string::npos) {
    std::string scheme = rest.substr(0, scheme_end);
    if (scheme != "nats" && scheme != "tls" && scheme != "ws" && scheme != "wss")
      return "the scheme '" + scheme + "' is not nats://, tls://, ws:// or wss://";
    rest = rest.substr(scheme_end + 3);
  }
  if (auto at = rest.rfind('@'); at != std::string::npos) rest = rest.substr(at + 1);  // user[:password]@
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    if (slash + 1 != rest.size()) return "a server URL has no path";
    rest.pop_back();
  }
  std::string host = rest, port;
  if (!rest.empty() && rest.front() == '[') {  // [IPv6]:port
    auto close = rest.find(']');
    if (close == std::string::npos) return "the IPv6 address has no closing ']'";
    host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') return "junk after the IPv6 address";
      port = rest.substr(close + 2);
      if (port.empty()) return "the port is empty";
    }
    if (host.empty() || host.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos)
      return "'" + host + "' is not an IPv6 address";
  } else {
    if (auto colon = rest.find(':'); colon != std::string::npos) {
      host = rest.substr(0, colon);
      port = rest.substr(colon + 1);
      if (port.empty()) return "the port is empty";
    }
    if (host.empty()) return "there is no host";
    for (char c : host)
      if (!is_host_char(c)) return "'" + host + "' is not a host name or address";
  }
  if (!port.empty()) {
    if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) < 1 ||
        std::stoi(port) > 65535)
      return "the port '" + port + "' is not 1 to 65535";
  }
  return {};
}

std::string joined(const std::vector<std::string>& urls) {
  std::string out;
  for (const auto& url : urls) {
    if (!out.empty()) out += ",";
    out += url;
  }
  return out;
}

// The token for this (re)connect: none unless the guard vouches for the server.
const char* guarded_token(void* closure) {
  static const char kNone[] = "";
  auto* state = static_cast<detail::ConnectionState*>(closure);
  if (state->token_guard && !state->token_guard()) return kNone;
  return state->token.c_str();
}

detail::OptionsPtr make_options(const ConnectionOptions& o, detail::ConnectionState* state) {
  const std::string what = "connect options";
  if (o.urls.empty()) throw Error(Errc::bad_request, "no NATS URL given (set --nats-url or $NATS_URL)");
  for (const auto& url : o.urls) require_valid_urls(url);
  natsOptions* raw = nullptr;
  check(natsOptions_Create(&raw), what);
  detail::OptionsPtr options(raw);

  std::vector<const char*> servers;
  for (const auto& url : o.urls) servers.push_back(url.c_str());
  check(natsOptions_SetServers(raw, servers.data(), static_cast<int>(servers.size())), what);
  check(natsOptions_SetNoRandomize(raw, true), what);
  // nats.c applies the timeout to each server in turn; share it out so that the
  // whole attempt stays within connect_timeout however many URLs there are.
  auto per_server = o.connect_timeout.count() / static_cast<long>(o.urls.size());
  check(natsOptions_SetTimeout(raw, per_server > 0 ? per_server : 1), what);
  check(natsOptions_SetName(raw, o.name.c_str()), what);
  // A request on a dropped connection fails at once instead of waiting out its
  // timeout; the reconnect logic still moves us to another cluster node.
  check(natsOptions_SetFailRequestsOnDisconnect(raw, true), what);
  check(natsOptions_SetReconnectWait(raw, 250), what);
  check(natsOptions_SetMaxReconnect(raw, 40), what);

  if (!o.user.empty() || !o.password.empty())
    check(natsOptions_SetUserInfo(raw, o.user.c_str(), o.password.c_str()), what);
  if (!o.token.empty() && o.token_guard) {
    state->token = o.token;
    state->token_guard = o.token_guard;
    check(natsOptions_SetTokenHandler(raw, guarded_token, state), what);
  } else if (!o.token.empty()) {
    check(natsOptions_SetToken(raw, o.token.c_str()), what);
  }
  if (!o.creds_file.empty()) {
    // nats.c reads it only while connecting, where a missing file would pass
    // for an unreachable server.
    if (access(o.creds_file.c_str(), R_OK) != 0)
      throw Error(Errc::bad_request, "cannot read the creds file " + o.creds_file + ": " + std::strerror(errno));
    check(natsOptions_SetUserCredentialsFromFiles(raw, o.creds_file.c_str(), nullptr), "creds file " + o.creds_file);
  }
  if (!o.nkey_file.empty()) {
    // nats.c reads the seed from the file to sign; the public key goes with it.
    const std::string pub = nkey_public_key(read_nkey_seed(o.nkey_file));
    check(natsOptions_SetNKeyFromSeed(raw, pub.c_str(), o.nkey_file.c_str()), "nkey file " + o.nkey_file);
  }
  if (!o.tls_ca.empty() || !o.tls_cert.empty()) check(natsOptions_SetSecure(raw, true), what);
  if (!o.tls_ca.empty())
    check(natsOptions_LoadCATrustedCertificates(raw, o.tls_ca.c_str()), "TLS CA file " + o.tls_ca);
  if (o.tls_cert.empty() != o.tls_key.empty())
    throw Error(Errc::bad_request, "--tls-cert and --tls-key go together: give both or neither");
  if (!o.tls_cert.empty())
    check(natsOptions_LoadCertificatesChain(raw, o.tls_cert.c_str(), o.tls_key.c_str()),
          "TLS certificate " + o.tls_cert);
  return options;
}

}  // namespace

void require_valid_urls(const std::string& comma_separated) {
  auto urls = split_urls(comma_separated);
  if (urls.empty()) throw Error(Errc::bad_request, "no NATS server URL in '" + redact_urls(comma_separated) + "'");
  for (const auto& url : urls)
    if (auto problem = url_problem(url); !problem.empty())
      throw Error(Errc::bad_request, "bad NATS URL '" + redact_urls(url) + "': " + problem +
                                         "; use nats://HOST:PORT, e.g. nats://127.0.0.1:4222");
}

Connection Connection::connect(const ConnectionOptions& o) {
  auto state = std::make_shared<detail::ConnectionState>();
  auto options = make_options(o, state.get());
  state->urls = redact_urls(joined(o.urls));
  state->request_timeout = o.request_timeout;

  natsConnection* nc = nullptr;
  const auto started = std::chrono::steady_clock::now();
  natsStatus status = natsConnection_Connect(&nc, options.get());
  if (status != NATS_OK) {
    std::string text = detail::last_error_text(status);
    Errc kind = (status == NATS_CONNECTION_AUTH_FAILED || status == NATS_NOT_PERMITTED ||
                 status == NATS_SSL_ERROR || status == NATS_SECURE_CONNECTION_REQUIRED ||
                 status == NATS_SECURE_CONNECTION_WANTED ||
                 text.find("Authorization") != std::string::npos)
                    ? Errc::bad_request
                    : Errc::unavailable;
    // Only for a server that answered and then hung up: not for one that is down.
    if (kind == Errc::unavailable && status != NATS_NO_SERVER && !o.tls_ca.empty() && o.tls_cert.empty())
      text += "; a TLS server that requires client certificates hangs up like this: pass --tls-cert and --tls-key";
    throw Error(kind, kind == Errc::unavailable
                          ? "cannot reach NATS at " + state->urls + " (" + text + ")"
                          : "NATS at " + state->urls + " refused the connection: " + text);
  }
  state->connection.reset(nc);

  jsOptions js_options;
  check(jsOptions_Init(&js_options), "JetStream options");
  js_options.Wait = o.request_timeout.count();
  jsCtx* js = nullptr;
  check(natsConnection_JetStream(&js, nc, &js_options), "JetStream context on " + state->urls);
  state->js.reset(js);
  Connection connection(std::move(state));
  if (o.total_wait.count() > 0)
    connection.limit_total_wait(o.total_wait - std::chrono::duration_cast<std::chrono::milliseconds>(
                                                   std::chrono::steady_clock::now() - started));
  return connection;
}

std::string Connection::connected_url() const {
  char buffer[512] = {0};
  if (natsConnection_GetConnectedUrl(state_->connection.get(), buffer, sizeof buffer) != NATS_OK)
    return state_->urls;
  return redact_urls(buffer);
}

std::string Connection::server_id() const {
  char buffer[256] = {0};
  if (natsConnection_GetConnectedServerId(state_->connection.get(), buffer, sizeof buffer) != NATS_OK) return {};
  return buffer;
}

std::chrono::milliseconds Connection::request_timeout() const { return state_->request_timeout; }

void Connection::limit_total_wait(std::chrono::milliseconds limit) {
  state_->waited_ms = 0;
  state_->total_wait_limit = limit;
}

namespace detail {

namespace {

// "nats://user:pw@host:port" as host and port ("[::1]" without brackets).
std::pair<std::string, std::string> host_and_port(std::string url) {
  if (auto scheme = url.find("://"); scheme != std::string::npos) url = url.substr(scheme + 3);
  if (auto at = url.rfind('@'); at != std::string::npos) url = url.substr(at + 1);
  if (!url.empty() && url.back() == '/') url.pop_back();
  std::string host = url, port = "4222";
  if (!url.empty() && url.front() == '[') {
    auto close = url.find(']');
    host = url.substr(1, close - 1);
    if (close + 2 < url.size()) port = url.substr(close + 2);
  } else if (auto colon = url.rfind(':'); colon != std::string::npos) {
    host = url.substr(0, colon);
    port = url.substr(colon + 1);
  }
  return {host, port};
}

// The "version" of the INFO line a NATS server greets every connection
// with (sent before any TLS handshake): "" when it does not come in time.
std::string greeting_version(const std::string& url, std::chrono::milliseconds timeout) {
  auto [host, port] = host_and_port(url);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return {};
  std::string line;
  for (const addrinfo* a = found; a != nullptr && line.empty(); a = a->ai_next) {
    int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      char buffer[4096];
      while (line.find("\r\n") == std::string::npos && line.size() < 65536) {
        ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) break;
        line.append(buffer, static_cast<std::size_t>(n));
      }
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  const std::string key = "\"version\":\"";
  auto at = line.rfind("INFO", 0) == 0 ? line.find(key) : std::string::npos;
  if (at == std::string::npos) return {};
  auto end = line.find('"', at + key.size());
  return end == std::string::npos ? std::string() : line.substr(at + key.size(), end - at - key.size());
}

}  // namespace

const std::string& server_version(ConnectionState& state) {
  std::call_once(state.version_once, [&] {
    char buffer[512] = {0};
    if (natsConnection_GetConnectedUrl(state.connection.get(), buffer, sizeof buffer) != NATS_OK) return;
    state.version = greeting_version(buffer, std::min(state.request_timeout, std::chrono::milliseconds(2000)));
  });
  return state.version;
}

bool needs_cas_guard(ConnectionState& state) {
  // $SWARM_CAS_GUARD=always keeps it whatever the version (a cluster being
  // upgraded from 2.9 node by node); =never is for measuring what it costs.
  if (const char* force = std::getenv("SWARM_CAS_GUARD"); force != nullptr) {
    if (std::strcmp(force, "always") == 0) return true;
    if (std::strcmp(force, "never") == 0) return false;
  }
  const std::string& version = server_version(state);
  // Unknown: keep the guard.
  return version.empty() || version.find('.') == std::string::npos || version_before(version, 2, 10);
}

void retire(ConnectionState& connection, SubscriptionPtr sub) {
  // Enough to free now and then, few enough to cost nothing to keep.
  constexpr std::size_t kFreeAfter = 16;
  std::lock_guard lock(connection.retired_mu);
  if (connection.retired.size() >= kFreeAfter &&
      natsConnection_FlushTimeout(connection.connection.get(),
                                  std::max<std::int64_t>(1, connection.request_timeout.count())) == NATS_OK) {
    for (natsSubscription* old : connection.retired) natsSubscription_Destroy(old);
    connection.retired.clear();
  }
  connection.retired.push_back(sub.release());
}

}  // namespace detail

std::string Connection::server_version() const { return detail::server_version(*state_); }

namespace {

using AccountInfoPtr = std::unique_ptr<jsAccountInfo, void (*)(jsAccountInfo*)>;

// The account's JetStream info, asked once within `wait`; null when no
// answer came (or an error did).
AccountInfoPtr account_info(const detail::ConnectionState& state, std::chrono::milliseconds wait) {
  jsOptions options;
  jsOptions_Init(&options);
  options.Wait = std::max<std::int64_t>(1, wait.count());
  jsAccountInfo* info = nullptr;
  jsErrCode code = jsErrCode(0);
  natsStatus status = js_GetAccountInfo(&info, state.js.get(), &options, &code);
  AccountInfoPtr owned(info, jsAccountInfo_Destroy);
  if (status != NATS_OK) owned.reset();
  return owned;
}

}  // namespace

bool Connection::jetstream_answers(std::chrono::milliseconds wait) const {
  return account_info(*state_, wait) != nullptr;
}

std::optional<Connection::StoreUse> Connection::jetstream_store(std::chrono::milliseconds wait) const {
  const AccountInfoPtr info = account_info(*state_, wait);
  if (!info || info->Limits.MaxStore <= 0) return std::nullopt;
  return StoreUse{info->Limits.MaxStore, info->Store};
}

std::string server_version_at(const std::string& url, std::chrono::milliseconds timeout) {
  return detail::greeting_version(url, timeout);
}

bool version_before(const std::string& version, int major, int minor) {
  int have_major = 0, have_minor = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &have_major, &have_minor) != 2) return false;
  return have_major < major || (have_major == major && have_minor < minor);
}

bool Connection::connected() const {
  return natsConnection_Status(state_->connection.get()) == NATS_CONN_STATUS_CONNECTED;
}

std::chrono::microseconds Connection::rtt() const {
  int64_t nanos = 0;
  check(natsConnection_GetRTT(state_->connection.get(), &nanos), "ping " + state_->urls);
  return std::chrono::microseconds(nanos / 1000);
}

}  // namespace kv
