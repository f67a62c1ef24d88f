#include "server/cli/progress_display.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace vkllm::cli {

std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  } else {
    std::snprintf(buf, sizeof buf, v < 10 ? "%.1f %s" : "%.0f %s", v, units[u]);
  }
  return buf;
}

ProgressDisplay::ProgressDisplay(std::FILE* out) : out_(out), tty_(isatty(fileno(out)) != 0) {}

ProgressDisplay::~ProgressDisplay() {
  finish();
}

void ProgressDisplay::finish() {
  if (line_open_) {
    std::fputc('\n', out_);
    line_open_ = false;
  }
  std::fflush(out_);
}

void ProgressDisplay::draw(const std::string& label, uint64_t done, uint64_t total) {
  const bool complete = total > 0 && done >= total;
  if (tty_) {
    if (line_open_ && label != open_label_) finish();
    const int width = 25;
    const double frac = total ? std::min(1.0, static_cast<double>(done) / total) : 0.0;
    const int filled = static_cast<int>(std::round(frac * width));
    std::string bar(static_cast<size_t>(filled), '#');
    bar.append(static_cast<size_t>(width - filled), ' ');
    std::fprintf(out_, "\r%s %3d%% [%s] %s/%s   ", label.c_str(), static_cast<int>(frac * 100),
                 bar.c_str(), human_bytes(done).c_str(), human_bytes(total).c_str());
    std::fflush(out_);
    line_open_ = true;
    open_label_ = label;
    if (complete) finish();
    return;
  }
  if (label != open_label_) {
    open_label_ = label;
    open_label_done_ = false;
  }
  if (complete && !open_label_done_) {
    std::fprintf(out_, "%s 100%% %s\n", label.c_str(), human_bytes(total).c_str());
    std::fflush(out_);
    open_label_done_ = true;
  }
}

void ProgressDisplay::bytes(const std::string& label, uint64_t done, uint64_t total) {
  draw(label, done, total);
}

void ProgressDisplay::update(const nlohmann::json& p) {
  const std::string status = p.value("status", "");
  const std::string digest =
      p.contains("digest") && p["digest"].is_string() ? p["digest"].get<std::string>() : "";
  const uint64_t total =
      p.contains("total") && p["total"].is_number_unsigned() ? p["total"].get<uint64_t>() : 0;
  const uint64_t completed = p.contains("completed") && p["completed"].is_number_unsigned()
                                 ? p["completed"].get<uint64_t>()
                                 : 0;
  if (!digest.empty() && total > 0) {
    std::string label = status;
    if (label.empty()) label = digest.size() >= 19 ? digest.substr(7, 12) : digest;
    draw(label, completed, total);
    return;
  }
  if (status.empty() || status == last_status_) return;
  finish();
  last_status_ = status;
  std::fprintf(out_, "%s\n", status.c_str());
  std::fflush(out_);
}

}  // namespace vkllm::cli
