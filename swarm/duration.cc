#include "swarm/duration.h"

#include <cctype>
#include <cmath>

#include "swarm/error.h"

namespace swarm {

namespace {

[[noreturn]] void bad(std::string_view text) {
  throw Error(Errc::bad_input, "bad duration '" + std::string(text) +
                                   "': use a number and a unit (ms, s, m, h), e.g. 90s, 5m, 1h30m");
}

}  // namespace

std::chrono::milliseconds parse_duration(std::string_view text) {
  if (text == "0") return std::chrono::milliseconds(0);
  if (text.empty()) bad(text);
  double total_ms = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t start = at;
    bool seen_dot = false;
    while (at < text.size() && (std::isdigit(static_cast<unsigned char>(text[at])) || text[at] == '.')) {
      if (text[at] == '.') {
        if (seen_dot) bad(text);
        seen_dot = true;
      }
      ++at;
    }
    auto number = text.substr(start, at - start);
    if (number.empty() || number == ".") bad(text);
    double value = std::stod(std::string(number));
    std::size_t unit_start = at;
    while (at < text.size() && std::isalpha(static_cast<unsigned char>(text[at]))) ++at;
    auto unit = text.substr(unit_start, at - unit_start);
    double scale = 0;
    if (unit == "ms") scale = 1;
    else if (unit == "s") scale = 1000;
    else if (unit == "m") scale = 60 * 1000;
    else if (unit == "h") scale = 3600 * 1000;
    else bad(text);
    total_ms += value * scale;
  }
  if (total_ms > 1e15) bad(text);
  return std::chrono::milliseconds(static_cast<long long>(std::llround(total_ms)));
}

std::string format_duration(std::chrono::milliseconds d) {
  long long ms = d.count();
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  if (ms < 1000) return out + std::to_string(ms) + "ms";
  long long hours = ms / 3600000;
  long long minutes = (ms / 60000) % 60;
  long long secs = (ms / 1000) % 60;
  long long rest = ms % 1000;
  if (hours) out += std::to_string(hours) + "h";
  if (minutes) out += std::to_string(minutes) + "m";
  if (secs || rest) {
    out += std::to_string(secs);
    if (rest) {
      char frac[8];
      std::snprintf(frac, sizeof frac, ".%03lld", rest);
      std::string f = frac;
      while (f.back() == '0') f.pop_back();
      out += f;
    }
    out += "s";
  }
  return out;
}

}  // namespace swarm
