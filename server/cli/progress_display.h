// Renders Ollama ProgressResponse lines ({status, digest, total, completed}) for pull, push and
// create: on a terminal one bar per digest redrawn in place (like `ollama pull`), otherwise
// plain lines: each new status once, and a digest's line when it completes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace vkllm::cli {

class ProgressDisplay {
 public:
  explicit ProgressDisplay(std::FILE* out = stderr);
  ~ProgressDisplay();
  void update(const nlohmann::json& progress);
  // A bar for a local activity (uploading a file in `create`).
  void bytes(const std::string& label, uint64_t done, uint64_t total);
  void finish();  // ends a bar line in progress

 private:
  void draw(const std::string& label, uint64_t done, uint64_t total);
  std::FILE* out_;
  bool tty_;
  std::string last_status_, open_label_;
  bool line_open_ = false;
  bool open_label_done_ = false;
};

// "1.2 GB", "512 MB", "10 KB", "12 B" (decimal units, like Ollama's HumanBytes).
std::string human_bytes(uint64_t n);

}  // namespace vkllm::cli
