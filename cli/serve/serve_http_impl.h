// HttpServer's insides (cli/serve_http.h), shared by its two files: the
// connections' reading and answering (serve_http.cc) and the loop, its
// queues and workers (serve_http_loop.cc). Not for anyone else.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli/serve/serve_http.h"

namespace cli {

using Steady = std::chrono::steady_clock;

struct HttpServer::Impl {
  struct Conn {
    int fd = -1;
    std::uint64_t id = 0;
    std::string in;
    std::string out;
    std::size_t out_at = 0;
    bool waiting = false;    // a slow handler answers it
    bool streaming = false;  // an event stream
    bool closing = false;    // closed once `out` is sent
    bool want_write = false;
    bool proven = false;     // a request of it passed the guard (carried the secret)
    Steady::time_point accepted;
    Steady::time_point idle_until;                // no request by then: closed
    std::optional<Steady::time_point> head_until;  // a request begun must end its head by then
    std::optional<Steady::time_point> write_until;
    Steady::time_point last_sent;
  };
  struct Job {
    std::uint64_t conn = 0;
    Handler handler;
    HttpRequest request;
    bool head_only = false;
    bool closing = false;
  };
  struct Done {
    std::uint64_t conn = 0;
    std::string bytes;
    bool closing = false;
  };

  Limits limits;
  int epoll_fd = -1, listen_fd = -1, wake_fd = -1;
  std::atomic<bool> stopping{false};
  std::function<std::optional<HttpResponse>(const HttpRequest&)> guard;
  std::map<std::string, std::pair<Handler, bool>> routes;
  std::map<std::string, StreamOpener> streams_at;
  std::map<int, Conn> conns;
  // The ids of connections in the order they were accepted: the oldest
  // that never passed the guard is the first to make room at the cap. Ids
  // gone or proven since are skipped (and dropped now and then).
  std::deque<std::uint64_t> accepted_order;
  // A descriptor kept open for the moment the file limit is reached: closed
  // to accept (and close at once) a connection the kernel would otherwise
  // keep announcing, so the loop never spins on EMFILE.
  int spare_fd = -1;
  std::uint64_t next_id = 1;
  std::map<std::uint64_t, int> fd_of;
  std::set<int> streams;
  std::atomic<std::size_t> stream_count{0};

  std::mutex mu;  // the queues below, shared with other threads
  std::condition_variable jobs_cv;
  std::deque<Job> jobs;
  std::deque<Done> done;
  std::deque<std::string> messages;
  std::vector<std::thread> workers;

  void wake() const;

  void watch(int fd, bool write);

  void close_conn(int fd);

  void accept_all();

  // At the cap: closes the connection a new one may take the place of: the
  // oldest that never passed the guard (idle, or reading a request that has
  // not proved itself yet, or being refused), else the oldest idle one that
  // did; false when every connection is the owner's and busy (a request, an
  // answer, a stream).
  bool make_room();
  // Accepts one connection the listening socket holds: false when it holds none.
  bool accept_one();

  // Sends what `c` has to send, as far as the socket takes it; closes it
  // when it is done and closing, or broken.
  void flush(Conn& c);

  void answer(Conn& c, const HttpResponse& r, bool head_only, bool closing);

  void open_stream(Conn& c, const HttpRequest& req, const StreamOpener& opener, bool head_only);

  // One request whose head ends at `end` in `c.in`: answered, or handed to
  // a worker. False when the connection is done reading (closing, waiting).
  bool serve_one(Conn& c, std::size_t end);

  void on_readable(Conn& c);

  void drain_queues();

  void tick();

  void work();
};

}  // namespace cli
