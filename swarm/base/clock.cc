#include "swarm/base/clock.h"

#include <cstdio>
#include <ctime>

#include "kv/rfc3339.h"

namespace swarm {

Clock system_clock() {
  return [] { return std::chrono::system_clock::now(); };
}

namespace {

struct Civil {
  long long year;
  int month, day, hour, minute, second, millis;
};

// UTC calendar fields of t (H. Hinnant's civil_from_days): every renewal
// writes two times, and gmtime_r takes a lock and a locale on each.
Civil civil_of(TimePoint t) {
  long long ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  long long secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
  long long days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
  long long rest = secs - days * 86400;
  Civil c{};
  c.millis = static_cast<int>(ms - secs * 1000);
  c.hour = static_cast<int>(rest / 3600);
  c.minute = static_cast<int>(rest / 60 % 60);
  c.second = static_cast<int>(rest % 60);
  long long z = days + 719468;
  const long long era = (z >= 0 ? z : z - 146096) / 146097;
  const long long doe = z - era * 146097;
  const long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const long long mp = (5 * doy + 2) / 153;
  c.day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  c.month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  c.year = yoe + era * 400 + (c.month <= 2);
  return c;
}

// Appends `value` as exactly `width` digits.
void put_digits(std::string& out, long long value, int width) {
  char digits[20];
  for (int i = width - 1; i >= 0; --i) {
    digits[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
  out.append(digits, static_cast<std::size_t>(width));
}

// "2026-11-22T10:00:00.123Z", or "20261122T100000.123Z" when compact.
std::string format_utc(TimePoint t, bool compact) {
  Civil c = civil_of(t);
  std::string out;
  out.reserve(24);
  auto sep = [&](char ch) {
    if (!compact) out += ch;
  };
  put_digits(out, c.year, 4);
  sep('-');
  put_digits(out, c.month, 2);
  sep('-');
  put_digits(out, c.day, 2);
  out += 'T';
  put_digits(out, c.hour, 2);
  sep(':');
  put_digits(out, c.minute, 2);
  sep(':');
  put_digits(out, c.second, 2);
  out += '.';
  put_digits(out, c.millis, 3);
  out += 'Z';
  return out;
}
}  // namespace

std::string format_rfc3339(TimePoint t) { return format_utc(t, false); }
std::string format_compact_utc(TimePoint t) { return format_utc(t, true); }

std::optional<TimePoint> parse_rfc3339(std::string_view text) { return kv::parse_rfc3339(text); }

}  // namespace swarm
