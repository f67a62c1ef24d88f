// A test data file's bytes as a string (empty when the file cannot be read: the comparison that
// follows then fails naming the case).
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace vkllm::test {

inline std::string file_text(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace vkllm::test
