// Internal: a read-only memory mapping of a whole file, owning its descriptor and mapping.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>

namespace vkllm::gguf {

// Closes the descriptor on destruction; move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();

  int get() const { return fd_; }
  int release();

 private:
  int fd_ = -1;
};

// The file's bytes, mapped PROT_READ/MAP_PRIVATE; an empty file maps to an empty span.
class MappedFile {
 public:
  // Throws std::system_error naming the path on failure.
  explicit MappedFile(const std::filesystem::path& path);
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {static_cast<const uint8_t*>(addr_), size_}; }

 private:
  void unmap();
  UniqueFd fd_;
  void* addr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace vkllm::gguf
