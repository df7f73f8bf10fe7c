#include "support/nats_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>

namespace testing {

namespace {

using Steady = std::chrono::steady_clock;

int connect_loopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("proxy: socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// The length of the whole client message at the front of `in` (its line, and
// for PUB/HPUB its payload and the CRLF after it), or nullopt when it has not
// all arrived. `verb_subject` gets "VERB subject" (or the line's first word).
std::optional<std::size_t> next_message(const std::string& in, std::string& verb_subject) {
  const auto eol = in.find("\r\n");
  if (eol == std::string::npos) return std::nullopt;
  const std::string line = in.substr(0, eol);
  std::vector<std::string> words;
  for (std::size_t at = 0; at < line.size();) {
    auto space = line.find_first_of(" \t", at);
    if (space == std::string::npos) space = line.size();
    if (space > at) words.push_back(line.substr(at, space - at));
    at = space + 1;
  }
  if (words.empty()) return eol + 2;
  std::string verb = words[0];
  std::transform(verb.begin(), verb.end(), verb.begin(), [](unsigned char c) { return std::toupper(c); });
  verb_subject = verb + (words.size() > 1 ? " " + words[1] : "");
  if ((verb == "PUB" || verb == "HPUB") && words.size() >= 3) {
    const std::size_t payload = std::stoul(words.back());
    const std::size_t whole = eol + 2 + payload + 2;
    if (in.size() < whole) return std::nullopt;
    return whole;
  }
  return eol + 2;
}

}  // namespace

struct NatsProxy::Link {
  int client = -1;
  int server = -1;
  ~Link() {
    if (client >= 0) ::close(client);
    if (server >= 0) ::close(server);
  }
};

NatsProxy::NatsProxy(int server_port) : server_port_(server_port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 64) != 0)
    throw std::runtime_error("proxy: cannot listen on 127.0.0.1");
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

NatsProxy::~NatsProxy() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  ::close(listen_fd_);
  if (acceptor_.joinable()) acceptor_.join();
  {
    std::lock_guard lock(mu_);
    for (auto& link : links_) {
      ::shutdown(link->client, SHUT_RDWR);
      ::shutdown(link->server, SHUT_RDWR);
    }
  }
  for (auto& w : workers_)
    if (w.joinable()) w.join();
}

void NatsProxy::hold_next(std::vector<std::string> needles, std::chrono::milliseconds hold, Hold what) {
  std::lock_guard lock(mu_);
  needles_ = std::move(needles);
  hold_ = hold;
  what_ = what;
}

bool NatsProxy::wait_hold_begun(std::chrono::milliseconds limit) {
  std::unique_lock lock(mu_);
  return changed_.wait_for(lock, limit, [&] { return needles_.empty() && begun_ > 0; });
}

std::vector<std::string> NatsProxy::seen() const {
  std::lock_guard lock(mu_);
  return seen_;
}

void NatsProxy::accept_loop() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    int one = 1;
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto link = std::make_shared<Link>();
    link->client = client;
    link->server = connect_loopback(server_port_);
    if (link->server < 0) continue;  // the server is down: the client sees its connection closed
    std::lock_guard lock(mu_);
    links_.push_back(link);
    workers_.emplace_back([this, link] { serve(link); });
  }
}

void NatsProxy::serve(std::shared_ptr<Link> link) {
  std::string in;        // from the client, not yet split into messages
  std::string held;      // what waits for the hold to end (whole messages from the client)
  bool holding = false;  // a hold is on
  Hold direction = Hold::requests;
  Steady::time_point held_until{};
  char buffer[65536];
  const int to[2] = {link->server, link->client};  // by Hold: where held bytes go
  while (!stopping_) {
    int timeout = 100;
    if (holding) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(held_until - Steady::now()).count();
      timeout = static_cast<int>(std::clamp<long long>(left, 0, 100));
    }
    pollfd p[2] = {{link->client, POLLIN, 0}, {link->server, POLLIN, 0}};
    if (::poll(p, 2, timeout) < 0) return;
    if (holding && Steady::now() >= held_until) {
      if (!write_all(to[static_cast<int>(direction)], held.data(), held.size())) return;
      held.clear();
      holding = false;
      ++ended_;
      changed_.notify_all();
    }
    if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = ::recv(link->server, buffer, sizeof buffer, 0);
      if (n <= 0) return;
      if (holding && direction == Hold::answers) held.append(buffer, static_cast<std::size_t>(n));
      else if (!write_all(link->client, buffer, static_cast<std::size_t>(n))) return;
    }
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = ::recv(link->client, buffer, sizeof buffer, 0);
      if (n <= 0) return;
      in.append(buffer, static_cast<std::size_t>(n));
      std::string verb_subject;
      while (auto size = next_message(in, verb_subject)) {
        const std::string message = in.substr(0, *size);
        in.erase(0, *size);
        bool begins = false;
        {
          std::lock_guard lock(mu_);
          seen_.push_back(verb_subject);
          const bool is_pub = verb_subject.rfind("PUB ", 0) == 0 || verb_subject.rfind("HPUB ", 0) == 0;
          const bool matches = is_pub && std::any_of(needles_.begin(), needles_.end(), [&](const std::string& needle) {
                                 return message.find(needle) != std::string::npos;
                               });
          if (!holding && matches) {
            begins = true;
            holding = true;
            direction = what_;
            held_until = Steady::now() + hold_;
            needles_.clear();
            ++begun_;
          }
        }
        if (begins) changed_.notify_all();
        if (holding && direction == Hold::requests) held += message;
        else if (!write_all(link->server, message.data(), message.size())) return;
      }
    }
  }
}

}  // namespace testing
