#include "server/scheduler/go_duration.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace vkllm::sched {

std::chrono::nanoseconds parse_go_duration(std::string_view text) {
  const std::string quoted = "\"" + std::string(text) + "\"";
  auto invalid = [&] { return std::invalid_argument("time: invalid duration " + quoted); };
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return std::chrono::nanoseconds(0);
  if (s.empty()) throw invalid();
  long double total = 0;
  while (!s.empty()) {
    size_t i = 0;
    bool digits = false;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) {
      digits |= s[i] != '.';
      ++i;
    }
    if (!digits) throw invalid();
    const long double value = std::stold(std::string(s.substr(0, i)));
    s.remove_prefix(i);
    size_t u = 0;
    while (u < s.size() && !std::isdigit(static_cast<unsigned char>(s[u])) && s[u] != '.') ++u;
    const std::string_view unit = s.substr(0, u);
    s.remove_prefix(u);
    long double scale;
    if (unit.empty()) {
      throw std::invalid_argument("time: missing unit in duration " + quoted);
    } else if (unit == "ns") {
      scale = 1;
    } else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") {
      scale = 1e3L;
    } else if (unit == "ms") {
      scale = 1e6L;
    } else if (unit == "s") {
      scale = 1e9L;
    } else if (unit == "m") {
      scale = 60e9L;
    } else if (unit == "h") {
      scale = 3600e9L;
    } else {
      throw std::invalid_argument("time: unknown unit \"" + std::string(unit) + "\" in duration " +
                                  quoted);
    }
    total += value * scale;
    if (total > 9.2e18L) throw invalid();
  }
  const auto ns = static_cast<int64_t>(std::llround(static_cast<double>(total)));
  return std::chrono::nanoseconds(negative ? -ns : ns);
}

}  // namespace vkllm::sched
