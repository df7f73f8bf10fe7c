// HttpServer: reading a connection's requests and writing its answers (the
// loop that calls these, its queues and workers: serve_http_loop.cc).
#include "cli/serve/serve_http_impl.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

namespace cli {

namespace {

// Connections accepted at most between two looks at everything else.
constexpr std::size_t kAcceptBatch = 128;

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

std::size_t fit_connections_to_file_limit(std::size_t want, std::size_t reserve) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return std::min<std::size_t>(want, 1024 - reserve);
  const rlim_t wanted = static_cast<rlim_t>(want + reserve);
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < wanted) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max == RLIM_INFINITY ? wanted : std::min(limit.rlim_max, wanted);
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= wanted) return want;
  const auto open_files = static_cast<std::size_t>(limit.rlim_cur);
  return open_files > 2 * reserve ? open_files - reserve : open_files / 2;
}

void HttpServer::Impl::wake() const {
  const std::uint64_t one = 1;
  (void)!::write(wake_fd, &one, sizeof one);
}

void HttpServer::Impl::watch(int fd, bool write) {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | (write ? EPOLLOUT : 0u);
  ev.data.fd = fd;
  ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &ev);
}

void HttpServer::Impl::close_conn(int fd) {
  auto it = conns.find(fd);
  if (it == conns.end()) return;
  fd_of.erase(it->second.id);
  if (streams.erase(fd) != 0) stream_count = streams.size();
  ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
  ::close(fd);
  conns.erase(it);
}

bool HttpServer::Impl::make_room() {
  while (!accepted_order.empty()) {
    const std::uint64_t id = accepted_order.front();
    accepted_order.pop_front();
    const auto it = fd_of.find(id);
    if (it == fd_of.end()) continue;  // gone
    const int fd = it->second;
    if (conns.at(fd).proven) continue;  // the owner's: made room for only when no stranger is left
    close_conn(fd);
    return true;
  }
  // Every connection proved itself: the oldest idle one makes room.
  int victim = -1;
  Steady::time_point oldest{};
  for (const auto& [fd, c] : conns) {
    if (c.streaming || c.waiting || !c.in.empty() || !c.out.empty()) continue;  // busy
    if (victim < 0 || c.accepted < oldest) {
      victim = fd;
      oldest = c.accepted;
    }
  }
  if (victim < 0) return false;
  close_conn(victim);
  return true;
}

bool HttpServer::Impl::accept_one() {
  int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  while (fd < 0 && errno == EINTR) fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) {
    if ((errno == EMFILE || errno == ENFILE) && spare_fd >= 0) {
      // Out of descriptors: the spare one takes the connection, which is
      // closed at once, and is made again.
      ::close(spare_fd);
      const int taken = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (taken >= 0) ::close(taken);
      spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      return taken >= 0;
    }
    return false;  // EAGAIN, or a connection reset before it was taken
  }
  if (conns.size() >= limits.max_connections && !make_room()) {
    ::close(fd);
    return true;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = fd;
  if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
    ::close(fd);
    return true;
  }
  Conn& c = conns[fd];
  c.fd = fd;
  c.id = next_id++;
  c.accepted = Steady::now();
  c.idle_until = c.accepted + std::min(limits.idle_timeout, limits.unproven_idle_timeout);
  fd_of[c.id] = fd;
  accepted_order.push_back(c.id);
  // A request often came with the connection: read now, it proves its
  // connection before any later stranger could take its place.
  on_readable(c);
  return true;
}

void HttpServer::Impl::accept_all() {
  // A bounded batch: what the accepted ones sent, and the owner's answers,
  // are read and written between batches however fast strangers connect.
  for (std::size_t n = 0; n < kAcceptBatch && accept_one(); ++n) {
  }
  // The order keeps no more than a few times the connections open.
  if (accepted_order.size() > 2 * conns.size() + 1024) {
    std::deque<std::uint64_t> kept;
    for (const std::uint64_t id : accepted_order)
      if (auto it = fd_of.find(id); it != fd_of.end() && !conns.at(it->second).proven) kept.push_back(id);
    accepted_order.swap(kept);
  }
}

void HttpServer::Impl::flush(Conn& c) {
  while (c.out_at < c.out.size()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.out_at, c.out.size() - c.out_at, MSG_NOSIGNAL);
    if (n > 0) {
      c.out_at += static_cast<std::size_t>(n);
      c.last_sent = Steady::now();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!c.want_write) watch(c.fd, c.want_write = true);
      return;
    }
    close_conn(c.fd);
    return;
  }
  c.out.clear();
  c.out_at = 0;
  c.write_until.reset();
  if (c.want_write) watch(c.fd, c.want_write = false);
  if (c.closing) close_conn(c.fd);
}

void HttpServer::Impl::answer(Conn& c, const HttpResponse& r, bool head_only, bool closing) {
  c.out += serialize(r, head_only, closing);
  c.closing = c.closing || closing;
  c.write_until = Steady::now() + limits.write_timeout;
  c.idle_until = Steady::now() + (c.proven ? limits.idle_timeout : limits.unproven_idle_timeout);
  c.head_until.reset();
}

void HttpServer::Impl::open_stream(Conn& c, const HttpRequest& req, const StreamOpener& opener, bool head_only) {
  auto [refused, first] = opener(req);
  if (refused) return answer(c, *refused, head_only, false);
  if (streams.size() >= limits.max_streams) {
    HttpResponse busy = HttpResponse::text(503, "too many event streams are open (" +
                                                    std::to_string(limits.max_streams) + "); try again later");
    busy.headers.push_back({"Retry-After", "5"});
    return answer(c, busy, head_only, true);
  }
  c.out += "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
           "X-Content-Type-Options: nosniff\r\n\r\n";
  if (head_only) {
    c.closing = true;
    return;
  }
  c.out += first;
  c.streaming = true;
  c.head_until.reset();
  streams.insert(c.fd);
  stream_count = streams.size();
}

bool HttpServer::Impl::serve_one(Conn& c, std::size_t end) {
  bool http10 = false;
  auto req = parse_head(std::string_view(c.in).substr(0, end), &http10);
  c.in.erase(0, end + 4);
  if (!req) {
    answer(c, HttpResponse::text(400, "not an HTTP/1.x request"), false, true);
    return false;
  }
  const bool head_only = req->method == "HEAD";
  const std::string connection = lower(req->header("connection"));
  bool closing = connection.find("close") != std::string::npos ||
                 (http10 && connection.find("keep-alive") == std::string::npos);
  // No request here has a body: one that says it has is answered and the connection closed (its body unread).
  const std::string length = req->header("content-length");
  if ((!length.empty() && length != "0") || !req->header("transfer-encoding").empty()) closing = true;
  if (req->method != "GET" && !head_only) {
    HttpResponse r = HttpResponse::text(405, req->method + " is not served here: only GET and HEAD");
    r.headers.push_back({"Allow", "GET, HEAD"});
    answer(c, r, false, closing);
    return !closing;
  }
  if (guard) {
    if (auto refused = guard(*req)) {
      answer(c, *refused, head_only, closing);
      return !closing;
    }
  }
  c.proven = true;
  if (auto s = streams_at.find(req->path); s != streams_at.end()) {
    open_stream(c, *req, s->second, head_only);
    return false;
  }
  auto route = routes.find(req->path);
  if (route == routes.end()) {
    answer(c, HttpResponse::text(404, "nothing at " + req->path), head_only, closing);
    return !closing;
  }
  if (!route->second.second) {
    HttpResponse r;
    try {
      r = route->second.first(*req);
    } catch (const std::exception& e) {
      r = HttpResponse::text(500, e.what());
    }
    answer(c, r, head_only, closing);
    return !closing;
  }
  c.waiting = true;
  c.head_until.reset();
  {
    std::lock_guard lock(mu);
    jobs.push_back({c.id, route->second.first, std::move(*req), head_only, closing});
  }
  jobs_cv.notify_one();
  return false;
}

void HttpServer::Impl::on_readable(Conn& c) {
  char buffer[8192];
  while (true) {
    const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, 0);
    if (n > 0) {
      // A stream's reader has nothing to say; what it sends is dropped.
      if (c.streaming || c.closing) continue;
      if (c.in.empty() && !c.head_until && !c.waiting) c.head_until = Steady::now() + limits.head_timeout;
      c.in.append(buffer, static_cast<std::size_t>(n));
      // Requests piled up behind a slow one, beyond what any client pipelines: not kept.
      if (c.in.size() > 4 * limits.max_head_bytes) {
        close_conn(c.fd);
        return;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    close_conn(c.fd);  // the peer closed, or the connection broke
    return;
  }
  const int fd = c.fd;
  while (!c.waiting && !c.streaming && !c.closing) {
    const auto end = c.in.find("\r\n\r\n");
    if (end == std::string::npos) {
      if (c.in.size() > limits.max_head_bytes)
        answer(c, HttpResponse::text(431, "the request's head is larger than " +
                                              std::to_string(limits.max_head_bytes) + " bytes"), false, true);
      break;
    }
    if (end > limits.max_head_bytes) {
      answer(c, HttpResponse::text(431, "the request's head is too large"), false, true);
      break;
    }
    if (!serve_one(c, end)) break;
    if (c.in.empty()) break;
    c.head_until = Steady::now() + limits.head_timeout;  // the next request began already
  }
  if (conns.count(fd) != 0) flush(c);
}

}  // namespace cli
