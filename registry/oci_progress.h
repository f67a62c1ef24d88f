// Progress of a pull or push, one line of Ollama's /api/pull and /api/push streams.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace vkllm::registry {

struct TransferStatus {
  std::string status;  // "pulling manifest", "pulling 0123456789ab", "success", ...
  std::string digest;  // "sha256:<hex>" on per-blob lines, empty otherwise
  uint64_t total = 0;
  uint64_t completed = 0;

  friend bool operator==(const TransferStatus&, const TransferStatus&) = default;
};

using TransferStatusFn = std::function<void(const TransferStatus&)>;

// Passes per-blob byte counts on at most once per interval (Ollama sends ~every 60 ms), and
// always the first and the final (completed == total) line.
class ThrottledProgress {
 public:
  ThrottledProgress(const TransferStatusFn& sink, std::string status, std::string digest,
                    uint64_t total, std::chrono::milliseconds interval)
      : sink_(sink), line_{std::move(status), std::move(digest), total, 0}, interval_(interval) {}

  void update(uint64_t completed, bool force = false) {
    line_.completed = completed;
    auto now = std::chrono::steady_clock::now();
    bool final_line = completed == line_.total;
    if (!sink_ || (!force && !first_ && !final_line && now - last_ < interval_)) return;
    if (final_line && sent_final_) return;
    sent_final_ = final_line;
    first_ = false;
    last_ = now;
    sink_(line_);
  }

 private:
  const TransferStatusFn& sink_;
  TransferStatus line_;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point last_{};
  bool first_ = true;
  bool sent_final_ = false;
};

}  // namespace vkllm::registry
