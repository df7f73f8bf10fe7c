#include "cli/serve_http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
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

using Steady = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kTick{100};

const char* reason_of(int status) {
  switch (status) {
    case 200: return "OK";
    case 303: return "See Other";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 421: return "Misdirected Request";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return std::string(text);
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string url_decoded(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size() && hex_digit(text[i + 1]) >= 0 && hex_digit(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(text[i + 1]) * 16 + hex_digit(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// Parses a request's head (up to, not including, the blank line); nullopt
// when it is not HTTP/1.x as a client sends it.
std::optional<HttpRequest> parse_head(std::string_view head, bool* http10) {
  const auto line_end = head.find("\r\n");
  const std::string_view line = head.substr(0, line_end);
  const auto sp1 = line.find(' ');
  const auto sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 == sp1) return std::nullopt;
  HttpRequest r;
  r.method = std::string(line.substr(0, sp1));
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return std::nullopt;
  *http10 = version == "HTTP/1.0";
  if (r.method.empty() || target.empty() || target.front() != '/') return std::nullopt;
  for (char c : r.method)
    if (c < 'A' || c > 'Z') return std::nullopt;
  const auto q = target.find('?');
  r.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) r.query = std::string(target.substr(q + 1));
  std::size_t at = line_end == std::string_view::npos ? head.size() : line_end + 2;
  while (at < head.size()) {
    auto end = head.find("\r\n", at);
    if (end == std::string_view::npos) end = head.size();
    const std::string_view field = head.substr(at, end - at);
    const auto colon = field.find(':');
    if (colon == std::string_view::npos || colon == 0) return std::nullopt;
    const std::string name = lower(std::string(field.substr(0, colon)));
    if (name.find_first_of(" \t") != std::string::npos) return std::nullopt;
    const std::string value = trim(field.substr(colon + 1));
    // A header given twice is joined as HTTP says, except Host, which must be one.
    if (auto it = r.headers.find(name); it != r.headers.end()) {
      if (name == "host") return std::nullopt;
      it->second += ", " + value;
    } else {
      r.headers[name] = value;
    }
    at = end + 2;
  }
  return r;
}

std::string serialize(const HttpResponse& r, bool head_only, bool closing) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + reason_of(r.status) + "\r\n";
  out += "Content-Type: " + r.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  for (const auto& [name, value] : r.headers) out += name + ": " + value + "\r\n";
  if (closing) out += "Connection: close\r\n";
  out += "\r\n";
  if (!head_only) out += r.body;
  return out;
}

}  // namespace

std::string HttpRequest::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

std::optional<std::string> HttpRequest::param(const std::string& name) const {
  std::string_view rest = query;
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    const auto eq = pair.find('=');
    if (url_decoded(pair.substr(0, eq)) == name)
      return eq == std::string_view::npos ? std::string() : url_decoded(pair.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

HttpResponse HttpResponse::text(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  if (r.body.empty() || r.body.back() != '\n') r.body += '\n';
  return r;
}

bool same_secret(const std::string& given, const std::string& secret) {
  // Every byte of the longer is looked at, whatever differs first.
  const std::size_t n = std::max(given.size(), secret.size());
  unsigned char diff = given.size() == secret.size() ? 0 : 1;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char a = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    const unsigned char b = i < secret.size() ? static_cast<unsigned char>(secret[i]) : 0;
    diff = static_cast<unsigned char>(diff | (a ^ b));
  }
  return diff == 0 && !secret.empty();
}

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

  void wake() const {
    const std::uint64_t one = 1;
    (void)!::write(wake_fd, &one, sizeof one);
  }

  void watch(int fd, bool write) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | (write ? EPOLLOUT : 0u);
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &ev);
  }

  void close_conn(int fd) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    fd_of.erase(it->second.id);
    if (streams.erase(fd) != 0) stream_count = streams.size();
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    conns.erase(it);
  }

  void accept_all() {
    while (true) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or a connection reset before it was taken
      if (conns.size() >= limits.max_connections) {
        ::close(fd);
        continue;
      }
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.fd = fd;
      if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        ::close(fd);
        continue;
      }
      Conn& c = conns[fd];
      c.fd = fd;
      c.id = next_id++;
      c.idle_until = Steady::now() + limits.idle_timeout;
      fd_of[c.id] = fd;
    }
  }

  // Sends what `c` has to send, as far as the socket takes it; closes it
  // when it is done and closing, or broken.
  void flush(Conn& c) {
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

  void answer(Conn& c, const HttpResponse& r, bool head_only, bool closing) {
    c.out += serialize(r, head_only, closing);
    c.closing = c.closing || closing;
    c.write_until = Steady::now() + limits.write_timeout;
    c.idle_until = Steady::now() + limits.idle_timeout;
    c.head_until.reset();
  }

  void open_stream(Conn& c, const HttpRequest& req, const StreamOpener& opener, bool head_only) {
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

  // One request whose head ends at `end` in `c.in`: answered, or handed to
  // a worker. False when the connection is done reading (closing, waiting).
  bool serve_one(Conn& c, std::size_t end) {
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

  void on_readable(Conn& c) {
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

  void drain_queues() {
    std::uint64_t count = 0;
    (void)!::read(wake_fd, &count, sizeof count);
    std::deque<Done> answered;
    std::deque<std::string> sent;
    {
      std::lock_guard lock(mu);
      answered.swap(done);
      sent.swap(messages);
    }
    for (auto& d : answered) {
      auto it = fd_of.find(d.conn);
      if (it == fd_of.end()) continue;  // it went meanwhile
      Conn& c = conns[it->second];
      c.waiting = false;
      c.out += d.bytes;
      c.closing = c.closing || d.closing;
      c.write_until = Steady::now() + limits.write_timeout;
      c.idle_until = Steady::now() + limits.idle_timeout;
      const int fd = c.fd;
      flush(c);
      // Requests that came behind the slow one are served now.
      if (conns.count(fd) != 0 && !conns[fd].in.empty()) on_readable(conns[fd]);
    }
    for (const auto& message : sent) {
      for (int fd : std::vector<int>(streams.begin(), streams.end())) {
        Conn& c = conns[fd];
        if (c.out.size() - c.out_at + message.size() > limits.max_stream_backlog) {
          close_conn(fd);  // a reader this far behind is gone, or will be shown the next view anew
          continue;
        }
        c.out += message;
        flush(c);
      }
    }
  }

  void tick() {
    const auto now = Steady::now();
    std::vector<int> expired, timed_out, idle_streams;
    for (auto& [fd, c] : conns) {
      if (c.streaming) {
        if (now - c.last_sent >= limits.keep_alive && c.out.empty()) idle_streams.push_back(fd);
        continue;
      }
      if (c.waiting) continue;
      const bool late_head = c.head_until && now >= *c.head_until;
      const bool late_write = c.write_until && now >= *c.write_until;
      const bool idle = c.in.empty() && c.out.empty() && now >= c.idle_until;
      if (late_head && c.out.empty()) timed_out.push_back(fd);
      else if (late_write || idle || late_head) expired.push_back(fd);
    }
    for (int fd : expired) close_conn(fd);
    for (int fd : timed_out) {
      Conn& c = conns[fd];
      answer(c, HttpResponse::text(408, "the request's head did not come in time"), false, true);
      flush(c);
    }
    static constexpr char kComment[] = ": still here\n\n";
    for (int fd : idle_streams)
      if (auto it = conns.find(fd); it != conns.end()) {
        it->second.out += kComment;
        flush(it->second);
      }
  }

  void work() {
    while (true) {
      Job job;
      {
        std::unique_lock lock(mu);
        jobs_cv.wait(lock, [&] { return stopping || !jobs.empty(); });
        if (stopping) return;
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      HttpResponse r;
      try {
        r = job.handler(job.request);
      } catch (const std::exception& e) {
        r = HttpResponse::text(500, e.what());
      }
      {
        std::lock_guard lock(mu);
        done.push_back({job.conn, serialize(r, job.head_only, job.closing), job.closing});
      }
      wake();
    }
  }
};

HttpServer::HttpServer() : HttpServer(Limits{}) {}

HttpServer::HttpServer(Limits limits) : impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
  impl_->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  impl_->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

HttpServer::~HttpServer() {
  stop();
  for (auto& t : impl_->workers)
    if (t.joinable()) t.join();
  for (auto& [fd, c] : impl_->conns) ::close(fd);
  if (impl_->listen_fd >= 0) ::close(impl_->listen_fd);
  if (impl_->wake_fd >= 0) ::close(impl_->wake_fd);
  if (impl_->epoll_fd >= 0) ::close(impl_->epoll_fd);
}

void HttpServer::set_guard(std::function<std::optional<HttpResponse>(const HttpRequest&)> guard) {
  impl_->guard = std::move(guard);
}

void HttpServer::get(const std::string& path, Handler handler, bool slow) {
  impl_->routes[path] = {std::move(handler), slow};
}

void HttpServer::stream(const std::string& path, StreamOpener opener) { impl_->streams_at[path] = std::move(opener); }

int HttpServer::bind(const std::string& host, int port) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  int family = AF_INET;
  if (host.find(':') != std::string::npos) {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&addr);
    a6->sin6_family = family = AF_INET6;
    a6->sin6_port = htons(static_cast<std::uint16_t>(port));
    if (::inet_pton(AF_INET6, host.c_str(), &a6->sin6_addr) != 1) return -1;
    len = sizeof *a6;
  } else {
    auto* a4 = reinterpret_cast<sockaddr_in*>(&addr);
    a4->sin_family = AF_INET;
    a4->sin_port = htons(static_cast<std::uint16_t>(port));
    if (::inet_pton(AF_INET, host.c_str(), &a4->sin_addr) != 1) return -1;
    len = sizeof *a4;
  }
  const int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  // SO_REUSEADDR only (never SO_REUSEPORT): a second server on a taken port must fail, not share it.
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 512) != 0) {
    ::close(fd);
    return -1;
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len);
  impl_->listen_fd = fd;
  return ntohs(family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                  : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

void HttpServer::run() {
  Impl& s = *impl_;
  for (int i = 0; i < s.limits.workers; ++i) s.workers.emplace_back([&s] { s.work(); });
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = s.listen_fd;
  ::epoll_ctl(s.epoll_fd, EPOLL_CTL_ADD, s.listen_fd, &ev);
  ev.data.fd = s.wake_fd;
  ::epoll_ctl(s.epoll_fd, EPOLL_CTL_ADD, s.wake_fd, &ev);
  auto next_tick = Steady::now() + kTick;
  epoll_event events[256];
  while (!s.stopping) {
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_tick - Steady::now());
    const int n = ::epoll_wait(s.epoll_fd, events, 256, static_cast<int>(std::max<long>(0, wait.count())));
    for (int i = 0; i < n && !s.stopping; ++i) {
      const int fd = events[i].data.fd;
      if (fd == s.listen_fd) {
        s.accept_all();
      } else if (fd == s.wake_fd) {
        s.drain_queues();
      } else if (auto it = s.conns.find(fd); it != s.conns.end()) {
        if (events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) s.on_readable(it->second);
        if (auto again = s.conns.find(fd); again != s.conns.end() && (events[i].events & EPOLLOUT)) s.flush(again->second);
      }
    }
    if (Steady::now() >= next_tick) {
      s.tick();
      next_tick = Steady::now() + kTick;
    }
  }
  for (int fd : std::vector<int>([&] {
         std::vector<int> all;
         for (auto& [f, c] : s.conns) all.push_back(f);
         return all;
       }()))
    s.close_conn(fd);
  s.jobs_cv.notify_all();
  for (auto& t : s.workers)
    if (t.joinable()) t.join();
  s.workers.clear();
}

void HttpServer::stop() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->jobs_cv.notify_all();
  impl_->wake();
}

void HttpServer::broadcast(std::string message) {
  {
    std::lock_guard lock(impl_->mu);
    impl_->messages.push_back(std::move(message));
  }
  impl_->wake();
}

std::size_t HttpServer::streams() const { return impl_->stream_count; }

}  // namespace cli
