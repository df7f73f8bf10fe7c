// HttpServer: the loop (one thread owns every connection), the queues other
// threads hand answers and broadcasts through, the workers of slow handlers,
// and the listening socket (adr/0025).
#include "cli/serve/serve_http_impl.h"

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

constexpr std::chrono::milliseconds kTick{100};
// Connections the kernel holds for accept(): as many as it allows (it caps
// this at net.core.somaxconn), so that a burst of strangers leaves room.
constexpr int kListenBacklog = 4096;

}  // namespace

void HttpServer::Impl::drain_queues() {
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

void HttpServer::Impl::tick() {
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

void HttpServer::Impl::work() {
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

HttpServer::HttpServer() : HttpServer(Limits{}) {}

HttpServer::HttpServer(Limits limits) : impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
  impl_->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  impl_->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  impl_->spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

HttpServer::~HttpServer() {
  stop();
  for (auto& t : impl_->workers)
    if (t.joinable()) t.join();
  for (auto& [fd, c] : impl_->conns) ::close(fd);
  if (impl_->listen_fd >= 0) ::close(impl_->listen_fd);
  if (impl_->wake_fd >= 0) ::close(impl_->wake_fd);
  if (impl_->spare_fd >= 0) ::close(impl_->spare_fd);
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
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, kListenBacklog) != 0) {
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
