#include "swarm/base/port_range.h"

#include <charconv>

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

}  // namespace swarm
