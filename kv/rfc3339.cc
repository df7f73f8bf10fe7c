#include "kv/rfc3339.h"

#include <cctype>

namespace kv {

namespace {

bool digits(std::string_view s, std::size_t at, std::size_t n, int* out) {
  if (at + n > s.size()) return false;
  int v = 0;
  for (std::size_t i = at; i < at + n; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

// Days from 1970-01-01 to year-month-day in the proleptic Gregorian calendar
// (H. Hinnant's days_from_civil): no timegm, no time zone, no locale.
long long days_from_civil(int y, int m, int d) {
  y -= m <= 2;
  const long long era = (y >= 0 ? y : y - 399) / 400;
  const long long yoe = y - era * 400;
  const long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int days_in_month(int year, int month) {
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : days[month - 1];
}

}  // namespace

std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view s) {
  int year, month, day, hour, minute, second;
  if (!digits(s, 0, 4, &year) || s.size() < 20 || s[4] != '-' || !digits(s, 5, 2, &month) || s[7] != '-' ||
      !digits(s, 8, 2, &day) || (s[10] != 'T' && s[10] != 't') || !digits(s, 11, 2, &hour) || s[13] != ':' ||
      !digits(s, 14, 2, &minute) || s[16] != ':' || !digits(s, 17, 2, &second))
    return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) || hour > 23 || minute > 59 ||
      second > 60)
    return std::nullopt;

  std::size_t at = 19;
  long long nanos = 0;
  if (at < s.size() && s[at] == '.') {
    ++at;
    std::size_t start = at;
    long long scale = 100000000;
    while (at < s.size() && std::isdigit(static_cast<unsigned char>(s[at]))) {
      nanos += (s[at] - '0') * scale;
      scale /= 10;
      ++at;
    }
    if (at == start) return std::nullopt;
  }
  int offset_minutes = 0;
  if (at < s.size() && (s[at] == 'Z' || s[at] == 'z')) {
    ++at;
  } else if (at < s.size() && (s[at] == '+' || s[at] == '-')) {
    int oh, om;
    if (!digits(s, at + 1, 2, &oh) || at + 3 >= s.size() || s[at + 3] != ':' || !digits(s, at + 4, 2, &om) ||
        oh > 23 || om > 59)
      return std::nullopt;
    offset_minutes = (oh * 60 + om) * (s[at] == '-' ? -1 : 1);
    at += 6;
  } else {
    return std::nullopt;
  }
  if (at != s.size()) return std::nullopt;

  long long secs = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second -
                  offset_minutes * 60;
  // A time_point counts nanoseconds in 64 bits: about the years 1678 to 2261.
  // Outside, the conversion would overflow; such a time is not one we hold.
  using TimePoint = std::chrono::system_clock::time_point;
  constexpr long long kLimit = std::chrono::duration_cast<std::chrono::seconds>(TimePoint::duration::max()).count() - 1;
  if (secs < -kLimit || secs > kLimit) return std::nullopt;
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(std::chrono::seconds(secs) +
                                                                   std::chrono::nanoseconds(nanos)));
}

}  // namespace kv
