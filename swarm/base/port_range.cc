#include "swarm/base/port_range.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>

#include "swarm/base/error.h"
#include "swarm/base/text.h"

namespace swarm {

namespace {

// The port `digits` name, or 0 when they name none.
unsigned port_number(std::string_view digits) {
  unsigned value = 0;
  if (digits.empty() || digits.size() > 5) return 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || value > 65535) return 0;
  return value;
}

}  // namespace

std::optional<PortRange> port_range_of(std::string_view text) {
  const auto dash = text.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const unsigned first = port_number(text.substr(0, dash)), last = port_number(text.substr(dash + 1));
  if (first == 0 || last == 0 || first > last) return std::nullopt;
  return PortRange{first, last};
}

PortRange parse_port_range(std::string_view text, std::string_view what) {
  if (auto range = port_range_of(text)) return *range;
  const auto dash = text.find('-');
  const unsigned first = dash == std::string_view::npos ? 0 : port_number(text.substr(0, dash));
  const unsigned last = dash == std::string_view::npos ? 0 : port_number(text.substr(dash + 1));
  const std::string shown = printable(std::string(text.substr(0, 40)));
  if (first != 0 && last != 0)  // both ports, the wrong way round
    throw Error(Errc::bad_input, "bad " + std::string(what) + " '" + shown + "': its first port is above its last");
  throw Error(Errc::bad_input, "bad " + std::string(what) + " '" + shown +
                                   "': give a range of ports FIRST-LAST, each 1 to 65535, e.g. 20000-20999");
}

namespace {

// Whether binding `address` (of `length` bytes) fails because the port is taken.
bool taken_at(int family, const sockaddr* address, socklen_t length) {
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;  // no such family here: nothing can listen on it
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
  const bool taken = ::bind(fd, address, length) != 0 && errno == EADDRINUSE;
  ::close(fd);
  return taken;
}

}  // namespace

bool port_in_use(unsigned port) {
  if (port == 0 || port > 65535) return false;
  for (const std::uint32_t host : {INADDR_LOOPBACK, INADDR_ANY}) {
    sockaddr_in v4{};
    v4.sin_family = AF_INET;
    v4.sin_port = htons(static_cast<std::uint16_t>(port));
    v4.sin_addr.s_addr = htonl(host);
    if (taken_at(AF_INET, reinterpret_cast<const sockaddr*>(&v4), sizeof v4)) return true;
  }
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  v6.sin6_port = htons(static_cast<std::uint16_t>(port));
  v6.sin6_addr = in6addr_any;
  return taken_at(AF_INET6, reinterpret_cast<const sockaddr*>(&v6), sizeof v6);
}

std::optional<unsigned> first_port_in_use(const PortBlock& block) {
  for (unsigned port = block.base; port <= block.last(); ++port)
    if (port_in_use(port)) return port;
  return std::nullopt;
}

}  // namespace swarm
