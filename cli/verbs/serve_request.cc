#include "cli/verbs/serve_request.h"

#include <arpa/inet.h>

#include "swarm/base/error.h"
#include "swarm/base/text.h"

namespace cli {

ListenAddress parse_listen(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return swarm::Error(swarm::Errc::bad_input, "bad --listen '" + swarm::printable(text.substr(0, 80)) + "': " + why +
                                                    " (use ADDR:PORT, e.g. 127.0.0.1:" +
                                                    std::to_string(kDefaultServePort) + ")");
  };
  ListenAddress out;
  std::string port_text = text;
  if (auto colon = text.rfind(':'); colon != std::string::npos) {
    out.host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  } else {
    out.host = "127.0.0.1";
  }
  if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']') out.host = out.host.substr(1, out.host.size() - 2);
  if (out.host.empty()) throw bad("no address");
  if (port_text.empty() || port_text.size() > 5 || port_text.find_first_not_of("0123456789") != std::string::npos)
    throw bad("the port is not a number");
  out.port = std::stoi(port_text);
  if (out.port > 65535) throw bad("the port is above 65535");
  in_addr v4{};
  in6_addr v6{};
  if (out.host == "localhost") {
    out.host = "127.0.0.1";
  } else if (inet_pton(AF_INET, out.host.c_str(), &v4) == 1) {
    out.loopback = (ntohl(v4.s_addr) >> 24) == 127;
  } else if (inet_pton(AF_INET6, out.host.c_str(), &v6) == 1) {
    out.loopback = IN6_IS_ADDR_LOOPBACK(&v6);
  } else {
    throw bad("the address is not an IP address");
  }
  return out;
}

}  // namespace cli
