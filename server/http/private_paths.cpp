#include "server/http/private_paths.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace vkllm::http {
namespace {

std::mutex hidden_mutex;
std::vector<std::string> hidden;  // each with a trailing '/', longest first

}  // namespace

void hide_path(const std::filesystem::path& dir) {
  std::vector<std::string> forms{dir.lexically_normal().string()};
  std::error_code ec;
  if (const auto canonical = std::filesystem::weakly_canonical(dir, ec); !ec) {
    forms.push_back(canonical.string());
  }
  std::lock_guard lock(hidden_mutex);
  for (auto f : forms) {
    while (f.size() > 1 && f.back() == '/') f.pop_back();
    if (f.empty() || f == "/") continue;
    f += '/';
    if (std::find(hidden.begin(), hidden.end(), f) == hidden.end()) hidden.push_back(f);
  }
  // Longest first, so a nested directory is cut as a whole.
  std::sort(hidden.begin(), hidden.end(),
            [](const auto& a, const auto& b) { return a.size() > b.size(); });
}

std::string without_private_paths(std::string text) {
  std::lock_guard lock(hidden_mutex);
  for (const auto& dir : hidden) {
    for (size_t at = text.find(dir); at != std::string::npos; at = text.find(dir, at)) {
      text.erase(at, dir.size());
    }
  }
  return text;
}

}  // namespace vkllm::http
