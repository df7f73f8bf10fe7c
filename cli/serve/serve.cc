// `swarm serve` in swarm-serve: the HTTP side (adr/0022, adr/0025). Every
// answer comes from the view the watches keep; every request must come for
// this server (its Host) and carry the workspace's serve secret, or be the
// page's, signed in through a link (cli/serve/serve_gate.h).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "cli/verbs/documents/documents.h"
#include "cli/serve/serve.h"
#include "cli/serve/serve_gate.h"
#include "cli/serve/serve_http.h"
#include "cli/serve/serve_page.h"
#include "cli/serve/serve_view.h"
#include "cli/verbs/signal_router.h"
#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/secret.h"

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
  // The page's key, when the gate did not give it: none is needed (a Bearer header, --no-auth).
  server.get("/session", [](const HttpRequest&) { return json_reply(R"({"key":null})"); });
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
  // Each time the link is used (it signs in one browser), the next one is printed.
  Gate gate(where, secret, [](const std::string& next) {
    std::printf("the link was used; the next one: %s\n", next.c_str());
    std::fflush(stdout);
  });
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
  std::printf("serving %s\n", gate.link().c_str());
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
