// Thin RAII over POSIX file descriptors with the durable-write steps the store relies on
// (write fully, pread fully, fsync file and directory, atomic rename).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace vkllm::registry {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  ~UniqueFd();
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// Each throws RegistryError(io) naming the path and the system error.
UniqueFd open_read(const std::filesystem::path& path);
UniqueFd create_exclusive(const std::filesystem::path& path);  // O_CREAT|O_EXCL, 0644
UniqueFd open_read_write(const std::filesystem::path& path);   // existing file
void write_all(int fd, std::span<const std::byte> bytes, const std::filesystem::path& path);
void pwrite_all(int fd, std::span<const std::byte> bytes, uint64_t offset,
                const std::filesystem::path& path);
// Reads exactly bytes.size() bytes unless the file ends first; returns bytes read.
size_t pread_full(int fd, std::span<std::byte> bytes, uint64_t offset,
                  const std::filesystem::path& path);
uint64_t file_size(int fd, const std::filesystem::path& path);
void fsync_fd(int fd, const std::filesystem::path& path);
void fsync_directory(const std::filesystem::path& dir);
// A unique file name "<prefix><random hex><suffix>" (not created).
std::string random_name(std::string_view prefix, std::string_view suffix);

}  // namespace vkllm::registry
