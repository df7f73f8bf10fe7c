// The HTTP server of `swarm serve`: one thread with an epoll loop owns every
// connection, so that nothing a client does (an event stream held open for a
// day, a request trickled in a byte at a time, a reader that never reads)
// holds anything another request needs. Requests are read with a deadline
// for their head and none may carry a body; answers come from handlers that
// read in-memory views (fast, on the loop) or, marked slow, from a small pool
// of workers whose answers the loop writes when they are ready. Event
// streams are a bounded set the loop writes to when broadcast() is called
// from any thread; one whose reader falls too far behind is closed (adr/0025).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/serve/http_message.h"

namespace cli {

// Raises this process's soft limit of open files to its hard limit (at
// most `want`) and returns how many connections fit under it, leaving
// `reserve` descriptors for everything else (NATS, watches, files).
std::size_t fit_connections_to_file_limit(std::size_t want, std::size_t reserve);

class HttpServer {
 public:
  struct Limits {
    // Open at most this many: a new one beyond takes the place of the
    // oldest idle connection that never passed the guard (then of the oldest
    // idle one), or is closed at once when every one is busy. Kept below the
    // process's file limit (fit_connections_to_file_limit).
    std::size_t max_connections = 1024;
    // A connection that has not passed the guard and sends nothing is closed
    // after this (one that did: idle_timeout).
    std::chrono::milliseconds unproven_idle_timeout{10000};
    std::size_t max_streams = 64;        // beyond: 503 with Retry-After
    std::size_t max_head_bytes = 16 * 1024;
    std::chrono::milliseconds head_timeout{10000};   // from a request's first byte to its head's end
    std::chrono::milliseconds idle_timeout{60000};   // a kept-alive connection with no request
    std::chrono::milliseconds write_timeout{30000};  // an answer (not a stream) not taken by then
    std::size_t max_stream_backlog = 8 * 1024 * 1024;  // a stream's unsent bytes before it is closed
    std::chrono::seconds keep_alive{15};               // a stream's comment when nothing else was sent
    int workers = 2;                                   // threads for slow handlers
  };
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  // What a new stream is sent first (its whole first message), or an answer
  // that refuses it.
  using StreamOpener = std::function<std::pair<std::optional<HttpResponse>, std::string>(const HttpRequest&)>;

  HttpServer();
  explicit HttpServer(Limits limits);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Before every handler: an answer that refuses the request (auth, Host),
  // or nullopt to go on. Runs on the loop: it must not block.
  void set_guard(std::function<std::optional<HttpResponse>(const HttpRequest&)> guard);
  // GET (and HEAD) of `path`. `slow`: run on a worker (it may block).
  void get(const std::string& path, Handler handler, bool slow = false);
  // An event stream (text/event-stream) at `path`.
  void stream(const std::string& path, StreamOpener opener);

  // Binds `host` (an IP address) and `port` (0: any free one); the port
  // bound, or -1 when it cannot.
  int bind(const std::string& host, int port);
  // Serves until stop(); returns when every connection is closed.
  void run();
  // From any thread (not a signal handler): run() returns within a tick.
  void stop();
  // Sends `message` (a whole server-sent event, "event: x\ndata: y\n\n")
  // to every open stream; from any thread.
  void broadcast(std::string message);

  std::size_t streams() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};


}  // namespace cli
