#include "swarm/clock.h"

#include <cctype>
#include <cstdio>
#include <ctime>

namespace swarm {

Clock system_clock() {
  return [] { return std::chrono::system_clock::now(); };
}

namespace {

std::tm utc_of(TimePoint t, long* millis) {
  auto since = t.time_since_epoch();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(since).count();
  auto secs = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  *millis = static_cast<long>(ms - static_cast<long long>(secs) * 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return tm;
}

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

int days_in_month(int year, int month) {
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : days[month - 1];
}

}  // namespace

std::string format_rfc3339(TimePoint t) {
  long millis = 0;
  std::tm tm = utc_of(t, &millis);
  char buffer[96];
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return buffer;
}

std::string format_compact_utc(TimePoint t) {
  long millis = 0;
  std::tm tm = utc_of(t, &millis);
  char buffer[96];
  std::snprintf(buffer, sizeof buffer, "%04d%02d%02dT%02d%02d%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buffer;
}

std::optional<TimePoint> parse_rfc3339(std::string_view s) {
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

  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  std::time_t secs = timegm(&tm) - offset_minutes * 60;
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(std::chrono::seconds(secs) +
                                                                   std::chrono::nanoseconds(nanos)));
}

}  // namespace swarm
