#include "swarm/base/duration.h"

#include <cctype>

#include "swarm/base/error.h"

namespace swarm {

namespace {

// No duration swarm takes comes near this (about 11.5 days): anything
// longer is a typo, and refusing it keeps every sum far from overflowing.
constexpr unsigned long long kMaxDurationNs = 1'000'000ULL * 1'000'000'000ULL;
constexpr unsigned long long kNanosPerSecond = 1'000'000'000ULL;
constexpr std::size_t kMaxDurationText = 64;

[[noreturn]] void bad(std::string_view text) {
  // A text of hundreds of digits is named by its start only.
  std::string shown = text.size() > 40 ? std::string(text.substr(0, 40)) + "..." : std::string(text);
  throw Error(Errc::bad_input, "bad duration '" + shown +
                                   "': use a number and a unit (ms, s, m, h), e.g. 90s, 5m, 1h30m, at most 1000000s");
}

}  // namespace

std::chrono::milliseconds parse_duration(std::string_view text) {
  if (text == "0") return std::chrono::milliseconds(0);
  if (text.empty() || text.size() > kMaxDurationText) bad(text);
  // Whole nanoseconds in an unsigned 64-bit sum: exact for every fraction a
  // user types (to the nanosecond), and no floating point to overflow.
  unsigned long long total_ns = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    unsigned long long whole = 0, fraction = 0, fraction_scale = 1;
    std::size_t digits = 0;
    bool seen_dot = false;
    for (; at < text.size() && (std::isdigit(static_cast<unsigned char>(text[at])) || text[at] == '.'); ++at) {
      if (text[at] == '.') {
        if (seen_dot) bad(text);
        seen_dot = true;
        continue;
      }
      ++digits;
      unsigned digit = static_cast<unsigned>(text[at] - '0');
      if (!seen_dot) {
        if (whole > kMaxDurationNs / 10) bad(text);  // too many digits: far beyond any timeout
        whole = whole * 10 + digit;
      } else if (fraction_scale < kNanosPerSecond) {  // finer than a nanosecond is dropped
        fraction = fraction * 10 + digit;
        fraction_scale *= 10;
      }
    }
    if (digits == 0) bad(text);
    std::size_t unit_start = at;
    while (at < text.size() && std::isalpha(static_cast<unsigned char>(text[at]))) ++at;
    auto unit = text.substr(unit_start, at - unit_start);
    unsigned long long unit_ns = 0;
    if (unit == "ms") unit_ns = 1'000'000ULL;
    else if (unit == "s") unit_ns = 1'000'000'000ULL;
    else if (unit == "m") unit_ns = 60ULL * 1'000'000'000ULL;
    else if (unit == "h") unit_ns = 3600ULL * 1'000'000'000ULL;
    else bad(text);
    if (whole > kMaxDurationNs / unit_ns) bad(text);
    // fraction / fraction_scale of a unit, in nanoseconds, without a product
    // that could overflow (fraction < fraction_scale <= 10^9).
    unsigned long long q = unit_ns / fraction_scale, r = unit_ns % fraction_scale;
    unsigned long long part = whole * unit_ns + fraction * q + fraction * r / fraction_scale;
    if (part > kMaxDurationNs - total_ns) bad(text);
    total_ns += part;
  }
  return std::chrono::milliseconds(static_cast<long long>((total_ns + 500'000) / 1'000'000));
}

std::chrono::milliseconds parse_long_duration(std::string_view text) {
  constexpr std::size_t kMaxDayDigits = 5;
  constexpr long long kMaxDays = 36500;
  if (text.size() < 2 || text.back() != 'd') return parse_duration(text);
  auto digits = text.substr(0, text.size() - 1);
  long long days = 0;
  bool ok = digits.size() <= kMaxDayDigits;
  for (char c : digits) {
    ok = ok && std::isdigit(static_cast<unsigned char>(c));
    if (ok) days = days * 10 + (c - '0');
  }
  if (!ok || days > kMaxDays)
    throw Error(Errc::bad_input, "bad duration '" + std::string(text.substr(0, 40)) +
                                     "': use whole days (e.g. 30d, at most 36500d) or a number and a unit (ms, s, m, h)");
  return std::chrono::hours(24 * days);
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
