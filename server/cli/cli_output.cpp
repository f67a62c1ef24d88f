#include "server/cli/cli_output.h"

#include <cstdio>
#include <ctime>
#include <iostream>
#include <optional>

#include "server/cli/progress_display.h"
#include "server/config/settings.h"

namespace vkllm::cli {

using json = nlohmann::json;

namespace {

// Parses Go's RFC 3339 (with fraction and offset) into seconds since the epoch.
std::optional<std::time_t> parse_rfc3339(const std::string& s) {
  std::tm tm{};
  const char* rest = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr) return std::nullopt;
  if (*rest == '.') {
    ++rest;
    while (*rest >= '0' && *rest <= '9') ++rest;
  }
  long offset = 0;
  if (*rest == '+' || *rest == '-') {
    int h = 0, m = 0;
    if (std::sscanf(rest + 1, "%d:%d", &h, &m) != 2) return std::nullopt;
    offset = (h * 3600 + m * 60) * (*rest == '-' ? -1 : 1);
  }
  return timegm(&tm) - offset;
}

}  // namespace

ApiClient connected_client() {
  ApiClient client(config::read_client_host(config::Environment::from_process()));
  client.heartbeat();
  return client;
}

std::string relative_time(const std::string& rfc3339) {
  const auto t = parse_rfc3339(rfc3339);
  if (!t) return rfc3339;
  long d = static_cast<long>(std::time(nullptr) - *t);
  const bool future = d < 0;
  if (future) d = -d;
  auto plural = [future](long n, const char* unit) {
    return std::to_string(n) + " " + unit + (n == 1 ? "" : "s") + (future ? " from now" : " ago");
  };
  if (d < 60) return future ? "Less than a minute from now" : "Less than a minute ago";
  if (d < 3600) return plural(d / 60, "minute");
  if (d < 86400) return plural(d / 3600, "hour");
  if (d < 86400 * 7) return plural(d / 86400, "day");
  if (d < 86400 * 30) return plural(d / (86400 * 7), "week");
  if (d < 86400 * 365) return plural(d / (86400 * 30), "month");
  return plural(d / (86400 * 365), "year");
}

void print_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], r[i].size());
    }
  }
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(widths[i] - r[i].size() + 4, ' ');
    }
    std::cout << line << "\n";
  }
}

int stream_with_progress(ApiClient& client, const std::string& target, const json& body) {
  ProgressDisplay display;
  client.stream(target, body, [&](const json& line) { display.update(line); });
  display.finish();
  return 0;
}

}  // namespace vkllm::cli
