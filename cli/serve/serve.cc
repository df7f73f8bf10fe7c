// `swarm serve` in swarm-serve: the HTTP side (adr/0022, adr/0025). Every
// answer comes from the view the watches keep; every request must come for
// this server (its Host) and carry the workspace's serve secret.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "cli/documents/documents.h"
#include "cli/serve/serve.h"
#include "cli/serve/serve_http.h"
#include "cli/serve/serve_page.h"
#include "cli/serve/serve_view.h"
#include "cli/command/signal_router.h"
#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/secret.h"
#include "swarm/base/text.h"

namespace cli {

namespace {

constexpr std::size_t kDefaultLogLines = 100;
constexpr std::size_t kMaxLogLines = 10000;
// How long changes gather before the streams are sent one view.
constexpr std::chrono::milliseconds kGather{200};
constexpr std::chrono::seconds kPushWait{15};
// Connections served at once at most, and the descriptors kept for the rest.
constexpr std::size_t kMaxConnections = 4096;
constexpr std::size_t kReservedFiles = 128;

// What every answer carries: never cached, never sniffed, never framed, and
// no Referer that would carry the page's address (with its token) away.
HttpResponse secured(HttpResponse r) {
  r.headers.push_back({"Cache-Control", "no-store"});
  r.headers.push_back({"X-Content-Type-Options", "nosniff"});
  r.headers.push_back({"X-Frame-Options", "DENY"});
  r.headers.push_back({"Referrer-Policy", "no-referrer"});
  return r;
}

HttpResponse json_reply(std::string body, int status = 200) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = std::move(body) + "\n";
  return secured(std::move(r));
}

HttpResponse asset(const char* body, const char* type) {
  HttpResponse r;
  r.content_type = type;
  r.body = body;
  r.headers.push_back({"Content-Security-Policy",
                       "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
                       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"});
  return secured(std::move(r));
}

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

// How long the page's cookie is good for.
constexpr std::chrono::hours kSessionLife{12};

std::string hex_of(const unsigned char* bytes, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < size; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 0xf];
  }
  return out;
}

// The page's session: "<expiry, unix seconds>.<HMAC-SHA256 of it and the
// listen address, keyed by the secret>". Not the secret, good until it
// expires and only for the server at that address (a cookie is sent to
// every port of a host: another local service that receives it cannot
// turn it into the secret, nor use it on another serve).
std::string session_mac(const std::string& secret, const std::string& address, std::int64_t expires) {
  const std::string message = "swarm-serve-session|" + address + "|" + std::to_string(expires);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  ::HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
         reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &size);
  return hex_of(mac, size);
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

// Who may read, and from where: the Host first, then the secret (a Bearer
// header, or the page's cookie, set by the link serve printed).
class Gate {
 public:
  Gate(ListenAddress where, std::optional<std::string> secret) : where_(std::move(where)), secret_(std::move(secret)) {}
  void set_port(int port) {
    port_ = port;
    cookie_ = "swarm_serve_" + std::to_string(port);  // cookies are per host, not per port
    address_ = where_.host + ":" + std::to_string(port);
  }

  std::optional<HttpResponse> check(const HttpRequest& req) const {
    const std::string host = req.header("host");
    if (host.empty()) return secured(HttpResponse::text(400, "a request without a Host header is not served here"));
    if (!host_is_ours(host, where_, port_))
      return secured(HttpResponse::text(421, "Host " + swarm::printable(host.substr(0, 200)) +
                                                 " is not this server's: swarm serve answers only for its own address, "
                                                 "localhost or a loopback address"));
    if (!secret_) return std::nullopt;
    const std::string auth = req.header("authorization");
    if (auth.rfind("Bearer ", 0) == 0 && same_secret(auth.substr(7), *secret_)) return std::nullopt;
    if (session_is_good(cookie_value(req.header("cookie"), cookie_))) return std::nullopt;
    if (req.path == "/") {
      if (auto given = req.param("token"); given && same_secret(*given, *secret_)) {
        // The link's token is traded for a session the page's own requests
        // carry, and leaves the address bar.
        const std::int64_t expires = unix_now() + std::chrono::seconds(kSessionLife).count();
        HttpResponse r = secured(HttpResponse::text(303, "signed in; go to /"));
        r.headers.push_back({"Location", "/"});
        r.headers.push_back({"Set-Cookie", cookie_ + "=" + std::to_string(expires) + "." +
                                               session_mac(*secret_, address_, expires) +
                                               "; HttpOnly; SameSite=Strict; Path=/; Max-Age=" +
                                               std::to_string(std::chrono::seconds(kSessionLife).count())});
        return r;
      }
    }
    HttpResponse r = secured(HttpResponse::text(
        401, "swarm serve needs the workspace's serve secret: open the link `swarm serve` printed, or send "
             "Authorization: Bearer <the contents of .swarm/serve/token>"));
    r.headers.push_back({"WWW-Authenticate", "Bearer realm=\"swarm\""});
    return r;
  }

 private:
  bool session_is_good(const std::string& cookie) const {
    const auto dot = cookie.find('.');
    if (dot == std::string::npos || dot == 0 || dot > 12 ||
        cookie.find_first_not_of("0123456789") < dot)
      return false;
    const std::int64_t expires = std::stoll(cookie.substr(0, dot));
    if (expires <= unix_now()) return false;
    return same_secret(cookie.substr(dot + 1), session_mac(*secret_, address_, expires));
  }

  ListenAddress where_;
  std::optional<std::string> secret_;
  int port_ = 0;
  std::string cookie_;
  std::string address_;  // ADDR:PORT listened on: what a session is good for
};

HttpResponse log_reply(const ServeView& view, const HttpRequest& req) {
  std::size_t n = kDefaultLogLines;
  if (auto text = req.param("n")) {
    if (text->empty() || text->size() > 6 || text->find_first_not_of("0123456789") != std::string::npos ||
        std::stoul(*text) == 0 || std::stoul(*text) > kMaxLogLines)
      return secured(HttpResponse::text(400, "n must be a number from 1 to " + std::to_string(kMaxLogLines)));
    n = std::stoul(*text);
  }
  HttpResponse r;
  r.content_type = "application/x-ndjson";
  r.body = view.log_lines(n);
  return secured(std::move(r));
}

void add_routes(HttpServer& server, const ServeView& view) {
  server.get("/", [](const HttpRequest&) { return asset(kDashboardPage, "text/html; charset=utf-8"); });
  server.get("/app.js", [](const HttpRequest&) { return asset(kDashboardScript, "text/javascript; charset=utf-8"); });
  server.get("/app.css", [](const HttpRequest&) { return asset(kDashboardStyle, "text/css; charset=utf-8"); });
  server.get("/metrics", [&view](const HttpRequest&) {
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = view.metrics();
    return secured(std::move(r));
  });
  server.get("/api/status", [&view](const HttpRequest&) { return json_reply(view.status_document()); });
  server.get("/api/leases", [&view](const HttpRequest&) { return json_reply(view.leases_document()); });
  server.get("/api/tasks", [&view](const HttpRequest&) { return json_reply(view.tasks_document()); });
  server.get("/api/inboxes", [&view](const HttpRequest&) { return json_reply(view.inboxes_document()); });
  server.get("/api/holds", [&view](const HttpRequest&) { return json_reply(view.holds_document()); });
  server.get("/api/log", [&view](const HttpRequest& req) { return log_reply(view, req); });
  server.get("/api/branches", [&view](const HttpRequest&) {
    std::string doc = view.branches_document();
    if (!doc.empty()) return json_reply(std::move(doc));
    HttpResponse r = json_reply(R"({"schema":"swarm.error.v1","kind":"unavailable","message":"the branches are being read"})", 503);
    r.headers.push_back({"Retry-After", "1"});
    return r;
  });
  server.stream("/events", [&view](const HttpRequest&) {
    return std::pair<std::optional<HttpResponse>, std::string>{std::nullopt,
                                                               "event: view\ndata: " + view.page().second + "\n\n"};
  });
}

}  // namespace

Verb add_serve(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = add_serve_command(app, *flags);
  return {cmd, [flags](Context& ctx) { return run_serve(ctx, *flags); }};
}

int run_serve(Context& ctx, const ServeFlags& flags) {
  const ListenAddress where = parse_listen(flags.listen);
  if (flags.no_auth && !where.loopback)
    throw swarm::Error(swarm::Errc::bad_input, "--no-auth serves the workspace to anyone who reaches " + where.host +
                                                   ": only with a loopback address (127.0.0.1, ::1)");
  SignalRouter signals;  // before any thread is made
  const swarm::Workspace ws = ctx.workspace();
  // The secret: made by `up`, or here for a workspace made before it was.
  std::optional<std::string> secret;
  if (!flags.no_auth) secret = swarm::ensure_secret(ws.make_folder(swarm::kServeFolder, 0700), swarm::kServeTokenName);
  // A network hub's branches are fetched outside the workspace, into a folder of this process's own.
  std::string cache_template = (std::filesystem::temp_directory_path() / "swarm-serve-XXXXXX").string();
  const char* cache = ::mkdtemp(cache_template.data());
  const std::filesystem::path cache_dir = cache != nullptr ? std::filesystem::path(cache) / "hub.git" : std::filesystem::path();
  ServeView view(
      [&ctx, cache_dir] {
        swarm::Landing landing = ctx.landing(true);
        landing.read_only(cache_dir);
        return ServeLink{landing.sessions().connection(), std::move(landing), ctx.names()};
      },
      ctx.me());

  // No number of connections makes it spin or refuse the owner's scrape:
  // they are capped below the file limit, idle strangers dropped first.
  HttpServer::Limits limits;
  limits.max_connections = fit_connections_to_file_limit(kMaxConnections, kReservedFiles);
  HttpServer server(limits);
  Gate gate(where, secret);
  const int port = server.bind(where.host, where.port);
  if (port < 0)
    throw swarm::Error(swarm::Errc::conflict,
                       "cannot listen on " + flags.listen + ": the port is taken, or the address is not this "
                       "machine's (`--listen " + (where.host.find(':') != std::string::npos ? "[" + where.host + "]"
                                                                                            : where.host) +
                       ":0` takes any free port)");
  gate.set_port(port);
  server.set_guard([&gate](const HttpRequest& req) { return gate.check(req); });
  add_routes(server, view);
  if (!where.loopback)
    ctx.out().warn("serving beyond loopback, on " + where.host + ": whoever has the secret and reaches it reads the "
                   "workspace's state (over plain HTTP)");
  if (flags.no_auth) ctx.out().warn("--no-auth: every local user can read the workspace's state on this port");
  view.start();
  // The streams are sent each change once, the changes of a burst together.
  std::thread pusher([&] {
    std::uint64_t seen = 0;
    while (view.wait_for_change(seen, kPushWait)) {
      std::this_thread::sleep_for(kGather);
      if (view.stopping()) break;
      if (server.streams() == 0) {
        seen = view.version();
        continue;
      }
      auto [version, json] = view.page();
      if (version == seen) continue;
      seen = version;
      server.broadcast("event: view\ndata: " + json + "\n\n");
    }
  });
  signals.on_signal([&](int) { server.stop(); });
  const std::string host = where.host.find(':') != std::string::npos ? "[" + where.host + "]" : where.host;
  const std::string link = "http://" + host + ":" + std::to_string(port) + "/" + (secret ? "?token=" + *secret : "");
  std::printf("serving %s\n", link.c_str());
  std::fflush(stdout);
  server.run();
  ctx.out().note("stopped serving");
  // Nothing to flush or hand back: the watches and their threads end with the process, at once.
  if (cache != nullptr) std::filesystem::remove_all(cache);
  std::fflush(stderr);
  std::_Exit(0);
  (void)pusher;
}

}  // namespace cli
