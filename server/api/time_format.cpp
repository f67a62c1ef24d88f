#include "server/api/time_format.h"

#include <cstdio>
#include <ctime>

namespace vkllm::api {
namespace {

std::string format(std::chrono::system_clock::time_point t, bool utc) {
  const auto since = t.time_since_epoch();
  auto secs = std::chrono::floor<std::chrono::seconds>(since);
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(since - secs).count();
  const std::time_t tt = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  if (utc) {
    gmtime_r(&tt, &tm);
  } else {
    localtime_r(&tt, &tm);
  }
  char base[32];
  std::strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out = base;
  if (nanos != 0) {
    char frac[16];
    std::snprintf(frac, sizeof frac, ".%09lld", static_cast<long long>(nanos));
    std::string f = frac;
    while (f.back() == '0') f.pop_back();
    out += f;
  }
  const long off = utc ? 0 : tm.tm_gmtoff;
  if (off == 0) {
    out += "Z";
  } else {
    char zone[32];  // "+hh:mm"; room for any long, so the compiler can see nothing is cut
    const long a = off < 0 ? -off : off;
    std::snprintf(zone, sizeof zone, "%c%02ld:%02ld", off < 0 ? '-' : '+', a / 3600,
                  (a % 3600) / 60);
    out += zone;
  }
  return out;
}

}  // namespace

std::string rfc3339_local(std::chrono::system_clock::time_point t) {
  return format(t, false);
}
std::string rfc3339_utc(std::chrono::system_clock::time_point t) {
  return format(t, true);
}

}  // namespace vkllm::api
