// `swarm serve` in swarm-serve: the HTTP server (cpp-httplib, adr/0022).
// Read-only: every path answers from the view the watches keep.
#include <httplib.h>

#include <cstdio>
#include <thread>

#include "cli/documents.h"
#include "cli/serve.h"
#include "cli/serve_page.h"
#include "cli/serve_view.h"
#include "cli/signal_router.h"
#include "swarm/error.h"
#include "swarm/log.h"

namespace cli {

namespace {

// How long an /events stream waits for a change before a keep-alive comment,
// and how long it lets changes gather before it sends one view.
constexpr std::chrono::seconds kKeepAlive{15};
constexpr std::chrono::milliseconds kGather{200};
constexpr std::size_t kDefaultLogLines = 100;
constexpr std::size_t kMaxLogLines = 10000;

void json_reply(httplib::Response& res, const std::string& body) {
  res.set_content(body + "\n", "application/json");
  res.set_header("Cache-Control", "no-store");
}

}  // namespace

Verb add_serve(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = add_serve_command(app, *flags);
  return {cmd, [flags](Context& ctx) { return run_serve(ctx, *flags); }};
}

int run_serve(Context& ctx, const ServeFlags& flags) {
  const ListenAddress where = parse_listen(flags.listen);
  SignalRouter signals;  // before any thread is made
  auto [store, leases] = ctx.sessions();
  ServeView view(store.connection(), store, leases.bucket_name(), ctx.me());
  // The branches come from the hub, read when asked (a land moves them, no watch says so).
  std::mutex landing_mu;
  std::optional<swarm::Landing> landing;

  httplib::Server server;
  server.set_keep_alive_max_count(1000);
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a
  // second server on a taken port would bind too and share its connections.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kDashboardPage, "text/html; charset=utf-8");
    res.set_header("Content-Security-Policy", "default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'");
  });
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(view.metrics(), "text/plain; version=0.0.4; charset=utf-8");
  });
  server.Get("/api/status", [&](const httplib::Request&, httplib::Response& res) { json_reply(res, view.status_document()); });
  server.Get("/api/leases", [&](const httplib::Request&, httplib::Response& res) { json_reply(res, view.leases_document()); });
  server.Get("/api/log", [&](const httplib::Request& req, httplib::Response& res) {
    std::size_t n = kDefaultLogLines;
    if (req.has_param("n")) {
      const std::string text = req.get_param_value("n");
      if (text.empty() || text.size() > 6 || text.find_first_not_of("0123456789") != std::string::npos ||
          std::stoul(text) == 0 || std::stoul(text) > kMaxLogLines) {
        res.status = 400;
        res.set_content("n must be a number from 1 to " + std::to_string(kMaxLogLines) + "\n", "text/plain");
        return;
      }
      n = std::stoul(text);
    }
    res.set_content(view.log_lines(n), "application/x-ndjson");
  });
  server.Get("/api/branches", [&](const httplib::Request&, httplib::Response& res) {
    try {
      std::lock_guard lock(landing_mu);
      if (!landing) landing.emplace(ctx.landing());
      const std::string onto = landing->onto({});
      json_reply(res, branches_document(landing->branches(onto)).dump());
    } catch (const std::exception& e) {
      const swarm::Error error = swarm::Error::from(e);
      res.status = error.kind() == swarm::Errc::unavailable ? 503 : 500;
      swarm::Json doc = swarm::Json::object();
      doc.set("schema", "swarm.error.v1").set("kind", swarm::to_string(error.kind())).set("message", error.what());
      json_reply(res, doc.dump());
    }
  });
  server.Get("/events", [&](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
    auto seen = std::make_shared<std::uint64_t>(0);
    res.set_chunked_content_provider("text/event-stream", [&view, seen](std::size_t, httplib::DataSink& sink) {
      if (*seen != 0) {
        if (!view.wait_for_change(*seen, kKeepAlive)) return false;
        std::this_thread::sleep_for(kGather);  // let a burst of changes make one view
      }
      if (view.stopping()) return false;
      auto [version, json] = view.page();
      if (version == *seen) {
        static constexpr char kComment[] = ": still here\n\n";
        return sink.write(kComment, sizeof kComment - 1);
      }
      *seen = version;
      const std::string message = "event: view\ndata: " + json + "\n\n";
      return sink.write(message.data(), message.size());
    });
  });

  const int port = where.port == 0 ? server.bind_to_any_port(where.host) : (server.bind_to_port(where.host, where.port) ? where.port : -1);
  if (port < 0)
    throw swarm::Error(swarm::Errc::conflict, "cannot listen on " + flags.listen +
                                                  ": the port is taken, or the address is not this machine's");
  if (!where.loopback)
    ctx.out().warn("serving beyond loopback, on " + where.host + ": anyone who reaches it reads the workspace's state");
  view.start();
  signals.on_signal([&](int) {
    view.stop();  // the /events streams end now, not at their next keep-alive
    server.stop();
  });
  const std::string host = where.host.find(':') != std::string::npos ? "[" + where.host + "]" : where.host;
  std::printf("serving http://%s:%d/\n", host.c_str(), port);
  std::fflush(stdout);
  server.listen_after_bind();
  view.stop();
  ctx.out().note("stopped serving");
  return 0;
}

}  // namespace cli
